package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/verisim/verisim/internal/atomicfile"
	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/safetensors"
	"github.com/verisim/verisim/internal/engine/tokenizer"
)

func (a *app) modelCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "model",
		Short: "Create built-in models in Hugging Face layout",
	}
	c.AddCommand(a.modelInitCmd())
	return c
}

func (a *app) modelInitCmd() *cobra.Command {
	var (
		arch, size, tok, out, dtype string
		seed                        uint64
		shard                       int64
	)
	c := &cobra.Command{
		Use:   "init --tokenizer FILE --out DIR [--arch llama|qwen2|moe] [--size tiny|small]",
		Short: "Write a randomly initialised model (config.json, safetensors, tokenizer.json)",
		Long: `Writes a randomly initialised decoder in Hugging Face layout: config.json,
model.safetensors (sharded with model.safetensors.index.json above --shard-size)
and a copy of the tokenizer. Sizes: tiny (3.1M parameters + 256 per
vocabulary entry: 5.2M at 8k tokens, 11.3M at 32k) and small (75.5M + 768
per entry: 81.8M at 8k, 100M at 32k); embeddings are tied. Architectures:
llama, qwen2 (llama with q/k/v bias) and moe (Mixtral: llama attention, and
each MLP 8 experts of half the dense width, 2 per token, so as many active
parameters as the dense size and 3.25x the layer parameters: tiny 10.2M +
256 per entry, small 245M + 768 per entry). The same seed gives the same
weights.`,
		Example: `  verisim tokenizer train --out tokenizer.json
  verisim model init --tokenizer tokenizer.json --size tiny --out models/tiny
  verisim model init --tokenizer tokenizer.json --arch qwen2 --size small --dtype f32 --out models/small
  verisim model init --tokenizer tokenizer.json --arch moe --size tiny --out models/tiny-moe`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if tok == "" || out == "" {
				return usageErr("--tokenizer FILE and --out DIR are required")
			}
			var dt safetensors.DType
			switch strings.ToLower(dtype) {
			case "bf16":
				dt = safetensors.BF16
			case "f32", "fp32":
				dt = safetensors.F32
			default:
				return usageErr("--dtype %q: use bf16 or f32", dtype)
			}
			t, err := tokenizer.Load(tok)
			if err != nil {
				return usageErr("--tokenizer: %v", err)
			}
			cfg, err := model.ConfigFor(arch, size, t.VocabSize())
			if err != nil {
				return usageErr("%v", err)
			}
			if _, err := os.Stat(filepath.Join(out, model.ConfigFile)); err == nil {
				return usageErr("%s already holds a model; choose another --out", out)
			}
			m, err := model.Init(cfg, seed)
			if err != nil {
				return withCode(exitFailure, err)
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return withCode(exitFailure, err)
			}
			data, err := t.Marshal()
			if err != nil {
				return withCode(exitFailure, err)
			}
			if err := atomicfile.Write(filepath.Join(out, "tokenizer.json"), data, 0o644); err != nil {
				return withCode(exitFailure, err)
			}
			if err := m.SaveSharded(out, dt, shard); err != nil {
				return withCode(exitFailure, err)
			}
			fmt.Fprintf(os.Stderr, "wrote a %s %s model, %.1fM parameters (%s, vocabulary %d), to %s\n",
				size, arch, float64(cfg.ParamCount())/1e6, strings.ToLower(dtype), t.VocabSize(), out)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&arch, "arch", "llama", "llama, qwen2 or moe (mixture of experts, Mixtral layout)")
	f.StringVar(&size, "size", "tiny", "tiny (~5-11M parameters; moe ~12-18M) or small (~80-100M; moe ~250-270M)")
	f.StringVar(&tok, "tokenizer", "", "tokenizer.json (see verisim tokenizer train)")
	f.StringVar(&out, "out", "", "directory to write the model to")
	f.StringVar(&dtype, "dtype", "bf16", "weights' storage type: bf16 or f32")
	f.Uint64Var(&seed, "seed", 1, "seed of the random initialisation")
	f.Int64Var(&shard, "shard-size", model.DefaultMaxShardBytes, "largest safetensors file, in bytes; bigger models are sharded")
	return c
}
