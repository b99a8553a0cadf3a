package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/verisim/verisim/internal/train"
	"github.com/verisim/verisim/internal/train/remote"
	"github.com/verisim/verisim/internal/train/run"
)

func (a *app) trainerCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "trainer",
		Short: "Serve the built-in trainer to a training loop on another machine",
		Args:  cobra.NoArgs,
	}
	c.AddCommand(a.trainerServeCmd())
	return c
}

func (a *app) trainerServeCmd() *cobra.Command {
	var (
		dir, addr string
		optim     optimFlags
	)
	c := &cobra.Command{
		Use:   "serve --model DIR [--addr HOST:PORT]",
		Short: "Serve the built-in trainer over the trainer API",
		Long: `Loads the model in DIR (config.json, safetensors weights and, if
present, tokenizer.json) into the built-in trainer and serves it over the
HTTP trainer API (docs/trainer-api.md): forward_backward, optim_step,
logprobs, save and load. Checkpoints it saves hold the tokenizer.json too,
so "verisim serve" loads them. Paths in save and load are on this machine.
Ctrl-C stops it once the requests in flight have finished.`,
		Example: `  verisim trainer serve --model models/tiny --addr 127.0.0.1:8100 --lr 3e-4`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usageErr("--model DIR is required (see verisim model init)")
			}
			m, tok, err := run.LoadModel(dir)
			if err != nil {
				return runErr(err)
			}
			opts := optim.schedule().TrainOptions()
			if tok != nil {
				tokJSON, err := os.ReadFile(filepath.Join(dir, run.TokenizerFile))
				if err != nil {
					return withCode(exitFailure, err)
				}
				opts.Files = map[string][]byte{run.TokenizerFile: tokJSON}
			}
			tr, err := train.New(m, opts)
			if err != nil {
				return usageErr("%v", err)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return usageErr("--addr %s: %v", addr, err)
			}
			hs := &http.Server{Handler: remote.Handler(tr), ReadHeaderTimeout: 30 * time.Second}
			fmt.Fprintf(os.Stderr, "serving the trainer of %s on http://%s\n", dir, ln.Addr())
			return serveUntilDone(cmd.Context(), hs, ln)
		},
	}
	f := c.Flags()
	f.StringVar(&dir, "model", "", "model directory (config.json, safetensors, optionally tokenizer.json)")
	f.StringVar(&addr, "addr", "127.0.0.1:8100", "address to listen on")
	optim.register(f, train.DefaultOptions().LearningRate, "")
	return c
}
