package model

import (
	"bytes"
	"cmp"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/engine/safetensors"
)

func TestInitDeterministic(t *testing.T) {
	cfg := toyConfig("qwen2")
	a, err := Init(cfg, 42)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Init(cfg, 42)
	c, _ := Init(cfg, 43)
	if !slices.Equal(a.Layers[1].Down, b.Layers[1].Down) || !slices.Equal(a.Embed, b.Embed) {
		t.Error("same seed gave different weights")
	}
	if slices.Equal(a.Embed, c.Embed) {
		t.Error("different seeds gave the same embedding")
	}
	var sum, sq float64
	for _, v := range a.Embed {
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	n := float64(len(a.Embed))
	if mean, std := sum/n, math.Sqrt(sq/n); math.Abs(mean) > 0.002 || math.Abs(std-0.02) > 0.002 {
		t.Errorf("embedding mean %g std %g, want 0 and 0.02", mean, std)
	}
	if a.Layers[0].InputNorm[3] != 1 || a.Norm[0] != 1 || a.Layers[0].QBias[0] != 0 {
		t.Error("norms are not 1 or biases not 0")
	}
	if _, err := Init(Config{}, 1); err == nil {
		t.Error("Init accepted an empty config")
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	for _, arch := range []string{"qwen2", "mixtral"} {
		t.Run("arch="+arch, func(t *testing.T) { testSaveLoadRoundTrip(t, toyConfig(arch)) })
	}
}

func testSaveLoadRoundTrip(t *testing.T, cfg Config) {
	m := toyModel(t, cfg, 23)
	for _, dtype := range []safetensors.DType{safetensors.F32, safetensors.BF16} {
		for _, layout := range []struct {
			name     string
			maxShard int64
			files    []string
		}{
			{"single", DefaultMaxShardBytes, []string{safetensors.SingleFile}},
			{"sharded", 20_000, []string{safetensors.IndexFile, "model-00001-of-000"}},
		} {
			t.Run("dtype="+string(dtype)+"/layout="+layout.name, func(t *testing.T) {
				dir := t.TempDir()
				if err := m.SaveSharded(dir, dtype, layout.maxShard); err != nil {
					t.Fatal(err)
				}
				names := dirNames(t, dir)
				for _, want := range append(layout.files, ConfigFile) {
					if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, want) }) {
						t.Errorf("checkpoint holds %v, no %s", names, want)
					}
				}
				got, err := Load(dir)
				if err != nil {
					t.Fatal(err)
				}
				wantCfg := cfg
				wantCfg.TorchDType = map[safetensors.DType]string{safetensors.F32: "float32", safetensors.BF16: "bfloat16"}[dtype]
				if !reflect.DeepEqual(got.Config, wantCfg) {
					t.Errorf("config %+v, want %+v", got.Config, wantCfg)
				}
				gp, mp := got.params(), m.params()
				if len(gp) != len(mp) {
					t.Fatalf("%d tensors, want %d", len(gp), len(mp))
				}
				for i := range mp {
					want := *mp[i].data
					if dtype == safetensors.BF16 {
						want = slices.Clone(want)
						for j, v := range want {
							want[j] = safetensors.Float32FromBF16(safetensors.BF16FromFloat32(v))
						}
					}
					if !bitsEqual(*gp[i].data, want) {
						t.Fatalf("tensor %s differs after the round trip", mp[i].name)
					}
				}
			})
		}
	}
}

// TestSaveMoETensorNames checks a Mixtral checkpoint against the names and
// shapes transformers' MixtralForCausalLM uses.
func TestSaveMoETensorNames(t *testing.T) {
	cfg := toyConfig("mixtral")
	dir := t.TempDir()
	if err := toyModel(t, cfg, 3).Save(dir, safetensors.BF16); err != nil {
		t.Fatal(err)
	}
	ts, _, err := safetensors.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	H, I := cfg.HiddenSize, cfg.IntermediateSize
	want := map[string][]int{
		"model.layers.1.block_sparse_moe.gate.weight":         {4, H},
		"model.layers.0.block_sparse_moe.experts.0.w1.weight": {I, H},
		"model.layers.1.block_sparse_moe.experts.3.w2.weight": {H, I},
		"model.layers.1.block_sparse_moe.experts.3.w3.weight": {I, H},
		"model.layers.0.post_attention_layernorm.weight":      {H},
		"model.layers.1.self_attn.k_proj.weight":              {16, H},
	}
	for name, shape := range want {
		if got, ok := ts[name]; !ok || !slices.Equal(got.Shape, shape) {
			t.Errorf("tensor %s: %v (present %v), want shape %v", name, got.Shape, ok, shape)
		}
	}
	// 2 layers × (4 norms and projections + 2 norms + router + 4 experts × 3),
	// embedding, final norm, lm_head.
	if len(ts) != 2*(4+2+1+12)+3 {
		t.Errorf("%d tensors, want %d", len(ts), 2*(4+2+1+12)+3)
	}
	for name := range ts {
		if strings.Contains(name, ".mlp.") || strings.Contains(name, "bias") {
			t.Errorf("Mixtral checkpoint holds %s", name)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"model_type": "mixtral"`, `"num_local_experts": 4`, `"num_experts_per_tok": 2`, `"MixtralForCausalLM"`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("config.json lacks %s:\n%s", field, b)
		}
	}
}

func TestSaveTiedOmitsLMHead(t *testing.T) {
	cfg := toyConfig("llama")
	cfg.TieWordEmbeddings = true
	dir := t.TempDir()
	if err := toyModel(t, cfg, 3).Save(dir, safetensors.F32); err != nil {
		t.Fatal(err)
	}
	ts, _, err := safetensors.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ts["lm_head.weight"]; ok {
		t.Error("tied checkpoint holds lm_head.weight")
	}
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if &m.LMHead[0] != &m.Embed[0] {
		t.Error("loaded tied model does not share lm_head with the embedding")
	}
}

func TestLoadErrors(t *testing.T) {
	models := map[string]*Model{"llama": toyModel(t, toyConfig("llama"), 29), "mixtral": toyModel(t, toyConfig("mixtral"), 29)}
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, dir string, ts map[string]safetensors.Tensor)
		want string
		arch string // "" is llama
	}{
		{"missing tensor", func(t *testing.T, dir string, ts map[string]safetensors.Tensor) {
			delete(ts, "model.layers.1.mlp.up_proj.weight")
		}, "missing tensor model.layers.1.mlp.up_proj.weight", ""},
		{"wrong shape", func(t *testing.T, dir string, ts map[string]safetensors.Tensor) {
			v := ts["model.layers.0.self_attn.k_proj.weight"]
			v.Shape = []int{32, 16}
			ts[v.Name] = v
		}, "tensor model.layers.0.self_attn.k_proj.weight has shape [32 16], want [16 32]", ""},
		{"extra tensor", func(t *testing.T, dir string, ts map[string]safetensors.Tensor) {
			x, _ := safetensors.FromFloat32("model.layers.0.self_attn.q_proj.bias", []int{32}, make([]float32, 32), safetensors.F32)
			ts[x.Name] = x
		}, "unexpected tensor model.layers.0.self_attn.q_proj.bias", ""},
		{"integer tensor", func(t *testing.T, dir string, ts map[string]safetensors.Tensor) {
			v := ts["model.norm.weight"]
			v.DType = safetensors.I32
			ts[v.Name] = v
		}, `"model.norm.weight": cannot decode I32`, ""},
		{"unsupported config field", func(t *testing.T, dir string, ts map[string]safetensors.Tensor) {
			path := filepath.Join(dir, ConfigFile)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b = []byte(strings.Replace(string(b), "{", `{"rope_scaling": {"type": "yarn", "factor": 4},`, 1))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, `unsupported config.json field rope_scaling: {"type":"yarn","factor":4}`, ""},
		{"no weights", func(t *testing.T, dir string, ts map[string]safetensors.Tensor) {
			clear(ts)
		}, "no model.safetensors or model.safetensors.index.json", ""},
		{"missing expert", func(t *testing.T, dir string, ts map[string]safetensors.Tensor) {
			delete(ts, "model.layers.1.block_sparse_moe.experts.2.w3.weight")
		}, "missing tensor model.layers.1.block_sparse_moe.experts.2.w3.weight", "mixtral"},
		{"missing router", func(t *testing.T, dir string, ts map[string]safetensors.Tensor) {
			delete(ts, "model.layers.0.block_sparse_moe.gate.weight")
		}, "missing tensor model.layers.0.block_sparse_moe.gate.weight", "mixtral"},
		{"expert beyond num_local_experts", func(t *testing.T, dir string, ts map[string]safetensors.Tensor) {
			x := ts["model.layers.0.block_sparse_moe.experts.0.w1.weight"]
			x.Name = "model.layers.0.block_sparse_moe.experts.4.w1.weight"
			ts[x.Name] = x
		}, "unexpected tensor model.layers.0.block_sparse_moe.experts.4.w1.weight", "mixtral"},
		{"dense mlp in a mixtral checkpoint", func(t *testing.T, dir string, ts map[string]safetensors.Tensor) {
			x, _ := safetensors.FromFloat32("model.layers.0.mlp.up_proj.weight", []int{24, 32}, make([]float32, 24*32), safetensors.F32)
			ts[x.Name] = x
		}, "unexpected tensor model.layers.0.mlp.up_proj.weight", "mixtral"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := models[cmp.Or(tc.arch, "llama")]
			dir := t.TempDir()
			if err := m.Save(dir, safetensors.F32); err != nil {
				t.Fatal(err)
			}
			ts, meta, err := safetensors.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(t, dir, ts)
			path := filepath.Join(dir, safetensors.SingleFile)
			if len(ts) == 0 {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			} else if err := safetensors.Write(path, slices.Collect(maps.Values(ts)), meta); err != nil {
				t.Fatal(err)
			}
			_, err = Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v, want %q", err, tc.want)
			}
		})
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func bitsEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// TestKeepBF16 loads one bf16 checkpoint twice, widened to float32 and
// kept in bfloat16, and checks that the second holds half-width weights
// and computes the same bits: a prompt (the dot path of the products), then
// token by token (the GEMV path), dense, tied, with biases and MoE.
func TestKeepBF16(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  func() Config
	}{
		{"llama", func() Config { return toyConfig("llama") }},
		{"llama/tied", func() Config { c := toyConfig("llama"); c.TieWordEmbeddings = true; return c }},
		{"qwen2", func() Config { return toyConfig("qwen2") }},
		{"mixtral", func() Config { return toyConfig("mixtral") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := toyModel(t, c.cfg(), 31).Save(dir, safetensors.BF16); err != nil {
				t.Fatal(err)
			}
			wide, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			half, err := LoadWith(dir, LoadOptions{KeepBF16: true})
			if err != nil {
				t.Fatal(err)
			}
			if wide.KeepsBF16() || !half.KeepsBF16() {
				t.Fatalf("KeepsBF16: widened %v, kept %v", wide.KeepsBF16(), half.KeepsBF16())
			}
			for _, p := range half.params() {
				switch {
				case p.half != nil && (*p.data != nil || *p.half == nil):
					t.Errorf("%s: float32 %d values, bf16 %d; want only bf16", p.name, len(*p.data), len(*p.half))
				case p.half == nil && *p.data == nil:
					t.Errorf("%s: no values", p.name)
				}
			}
			toks := tokensFor(20, c.cfg().VocabSize, 9)
			cw, ch := wide.NewKVCache(), half.NewKVCache()
			lw, err := wide.Forward(cw, toks[:14], 0)
			if err != nil {
				t.Fatal(err)
			}
			lh, err := half.Forward(ch, toks[:14], 0)
			if err != nil {
				t.Fatal(err)
			}
			if !bitsEqual(lh, lw) {
				t.Fatal("prompt logits differ between bf16-kept and widened weights")
			}
			for i := 14; i < len(toks); i++ {
				lw, _ = wide.Forward(cw, toks[i:i+1], i)
				lh, _ = half.Forward(ch, toks[i:i+1], i)
				if !bitsEqual(lh, lw) {
					t.Fatalf("decode logits at %d differ between bf16-kept and widened weights", i)
				}
			}

			// Saving the kept model writes the same checkpoint back.
			again := t.TempDir()
			if err := half.Save(again, safetensors.BF16); err != nil {
				t.Fatal(err)
			}
			for _, f := range dirNames(t, dir) {
				a, _ := os.ReadFile(filepath.Join(dir, f))
				b, err := os.ReadFile(filepath.Join(again, f))
				if err != nil || !bytes.Equal(a, b) {
					t.Errorf("%s differs after saving the bf16-kept model (%v)", f, err)
				}
			}

			// Float32 checkpoints are never rounded: they load widened.
			f32 := t.TempDir()
			if err := toyModel(t, c.cfg(), 31).Save(f32, safetensors.F32); err != nil {
				t.Fatal(err)
			}
			if m, err := LoadWith(f32, LoadOptions{KeepBF16: true}); err != nil || m.KeepsBF16() {
				t.Errorf("float32 checkpoint with KeepBF16: err %v, keeps bf16 %v", err, m != nil && m.KeepsBF16())
			}
		})
	}
}
