package train

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/safetensors"
)

func trainSteps(t *testing.T, b *Builtin, batch Batch, n int) StepResult {
	t.Helper()
	var r StepResult
	for range n {
		if _, err := b.ForwardBackward(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		var err error
		if r, err = b.OptimStep(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func sameState(t *testing.T, a, b *Builtin) {
	t.Helper()
	if !sameWeights(a.model, b.model) {
		t.Error("weights differ")
	}
	for i := range a.avgT {
		if !slices.Equal(*a.avgT[i].data, *b.avgT[i].data) || !slices.Equal(*a.avgSqT[i].data, *b.avgSqT[i].data) {
			t.Errorf("optimiser state of %s differs", a.params[i].name)
			return
		}
	}
	if a.step != b.step {
		t.Errorf("step %d vs %d", a.step, b.step)
	}
}

// TestSaveLoad checks that Load restores exactly what Save wrote and that
// training continues as if it had never stopped, for fp32 and bf16
// published weights (the latter keeps the fp32 master weights aside).
func TestSaveLoad(t *testing.T) {
	for _, tc := range []struct {
		arch string
		dt   safetensors.DType
	}{{"qwen2", safetensors.F32}, {"qwen2", safetensors.BF16}, {"mixtral", safetensors.F32}, {"mixtral", safetensors.BF16}} {
		t.Run("arch="+tc.arch+"/dtype="+string(tc.dt), func(t *testing.T) {
			cfg, dt := toyConfig(tc.arch, false), tc.dt
			opts := func(o *Options) { o.PublishDType, o.LearningRate, o.WarmupSteps, o.TotalSteps = dt, 1e-2, 2, 10 }
			a := newTrainer(t, toyModel(t, cfg, 1), opts)
			batch := testBatch(t, a, LossCrossEntropy, []int{9, 6}, 2)
			if cfg.MoE() {
				batch.Data[0].Routes = randomRoutes(cfg, 9, 1)
			}
			trainSteps(t, a, batch, 3)

			dir := filepath.Join(t.TempDir(), "ckpt")
			if err := a.Save(t.Context(), dir, "v3"); err != nil {
				t.Fatal(err)
			}
			// The engine loads the checkpoint as it is.
			published, err := model.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if dt == safetensors.F32 && !sameWeights(published, a.model) {
				t.Error("the published fp32 weights are not the trainer's")
			}
			var state trainerState
			raw, err := os.ReadFile(filepath.Join(dir, StateFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &state); err != nil || state.Version != "v3" || state.Step != 3 {
				t.Errorf("%s = %s (%v), want version v3 at step 3", StateFile, raw, err)
			}

			if cfg.MoE() {
				// The optimiser state covers every expert and router.
				f, err := safetensors.Read(filepath.Join(dir, OptimizerFile))
				if err != nil {
					t.Fatal(err)
				}
				for _, name := range []string{"model.layers.1.block_sparse_moe.gate.weight", "model.layers.1.block_sparse_moe.experts.3.w2.weight"} {
					if tn, ok := f.Tensors[name+".exp_avg_sq"]; !ok || !slices.ContainsFunc(mustFloats(t, tn), func(v float32) bool { return v != 0 }) {
						t.Errorf("%s: no second moment of %s, or all zeros", OptimizerFile, name)
					}
				}
			}

			b := newTrainer(t, toyModel(t, cfg, 99), opts)
			if err := b.Load(t.Context(), dir); err != nil {
				t.Fatal(err)
			}
			sameState(t, a, b)
			ra := trainSteps(t, a, batch, 2)
			rb := trainSteps(t, b, batch, 2)
			if ra != rb {
				t.Errorf("after Load the step reports %+v, without saving %+v", rb, ra)
			}
			sameState(t, a, b)

			// Saving again over the same directory replaces it whole and
			// leaves nothing beside it.
			if err := a.Save(t.Context(), dir, "v5"); err != nil {
				t.Fatal(err)
			}
			if err := b.Load(t.Context(), dir); err != nil {
				t.Fatal(err)
			}
			sameState(t, a, b)
			entries, _ := os.ReadDir(filepath.Dir(dir))
			if len(entries) != 1 {
				t.Errorf("beside the checkpoint: %v, want only it", entries)
			}
		})
	}
}

func TestSaveRefusesForeignDirectory(t *testing.T) {
	b := newTrainer(t, toyModel(t, toyConfig("llama", true), 1), nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(t.Context(), dir, "v1"); err == nil || !strings.Contains(err.Error(), "refusing to replace") {
		t.Errorf("Save over a foreign directory: error %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Errorf("the foreign directory was touched: %v", err)
	}
}

// TestLoadRefuses checks that a checkpoint that does not fit is refused
// with an error naming what differs, and that nothing changes.
func TestLoadRefuses(t *testing.T) {
	cfg := toyConfig("llama", false)
	src := newTrainer(t, toyModel(t, cfg, 1), nil)
	trainSteps(t, src, testBatch(t, src, LossCrossEntropy, []int{5}, 1), 1)
	good := filepath.Join(t.TempDir(), "good")
	if err := src.Save(t.Context(), good, "v1"); err != nil {
		t.Fatal(err)
	}
	// rewrite copies the good checkpoint with its optimiser tensors edited.
	rewrite := func(t *testing.T, edit func(map[string]safetensors.Tensor)) string {
		dir := t.TempDir()
		for _, f := range []string{model.ConfigFile, safetensors.SingleFile, StateFile} {
			b, err := os.ReadFile(filepath.Join(good, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f, err := safetensors.Read(filepath.Join(good, OptimizerFile))
		if err != nil {
			t.Fatal(err)
		}
		edit(f.Tensors)
		var ts []safetensors.Tensor
		for _, tn := range f.Tensors {
			ts = append(ts, tn)
		}
		if err := safetensors.Write(filepath.Join(dir, OptimizerFile), ts, nil); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	const q = "model.layers.1.self_attn.q_proj.weight"
	for _, tc := range []struct {
		name string
		cfg  model.Config
		dir  func(t *testing.T) string
		want string
	}{
		{"other config", func() model.Config { c := cfg; c.IntermediateSize = 40; return c }(),
			func(*testing.T) string { return good }, "intermediate_size is 48 in the checkpoint, 40 in the trainer"},
		{"tied vs untied", toyConfig("llama", true),
			func(*testing.T) string { return good }, "tie_word_embeddings is false in the checkpoint, true in the trainer"},
		{"missing moment", cfg, func(t *testing.T) string {
			return rewrite(t, func(m map[string]safetensors.Tensor) { delete(m, q+".exp_avg_sq") })
		}, "missing tensor " + q + ".exp_avg_sq"},
		{"mis-shaped moment", cfg, func(t *testing.T) string {
			return rewrite(t, func(m map[string]safetensors.Tensor) {
				tn := m[q+".exp_avg"]
				tn.Shape = []int{tn.Shape[1], tn.Shape[0] / 2, 2}
				m[q+".exp_avg"] = tn
			})
		}, "tensor " + q + ".exp_avg has shape [32 16 2], want [32 32]"},
		{"extra tensor", cfg, func(t *testing.T) string {
			return rewrite(t, func(m map[string]safetensors.Tensor) {
				tn := m[q+".exp_avg"]
				tn.Name = "stray"
				m["stray"] = tn
			})
		}, "unexpected tensor stray"},
		{"no optimiser state", cfg, func(t *testing.T) string {
			dir := rewrite(t, func(map[string]safetensors.Tensor) {})
			os.Remove(filepath.Join(dir, OptimizerFile))
			return dir
		}, OptimizerFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTrainer(t, toyModel(t, tc.cfg, 7), nil)
			before := cloneModel(b.model)
			err := b.Load(t.Context(), tc.dir(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load error = %v, want one containing %q", err, tc.want)
			}
			if !sameWeights(before, b.model) || b.step != 0 {
				t.Error("a refused Load changed the trainer")
			}
		})
	}
}

func mustFloats(t *testing.T, tn safetensors.Tensor) []float32 {
	t.Helper()
	v, err := tn.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSaveFiles checks that Options.Files land in every checkpoint, so
// that a checkpoint with the model's tokenizer.json is a model directory.
func TestSaveFiles(t *testing.T) {
	tok := []byte(`{"model": {"type": "BPE"}}`)
	b := newTrainer(t, toyModel(t, toyConfig("llama", true), 1), func(o *Options) {
		o.Files = map[string][]byte{"tokenizer.json": tok}
	})
	dir := filepath.Join(t.TempDir(), "ckpt")
	for range 2 { // a fresh save and a replacing one
		if err := b.Save(t.Context(), dir, "v1"); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
		if err != nil || string(got) != string(tok) {
			t.Fatalf("tokenizer.json in the checkpoint = %q, %v; want %q", got, err, tok)
		}
	}
}
