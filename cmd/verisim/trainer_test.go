package main

import (
	"path/filepath"
	"testing"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/tokenizer"
	"github.com/verisim/verisim/internal/train"
	"github.com/verisim/verisim/internal/train/remote"
	"github.com/verisim/verisim/internal/train/run"
)

// TestTrainerServe drives "verisim trainer serve" with the remote client
// through a step and a save, and loads the checkpoint it wrote.
func TestTrainerServe(t *testing.T) {
	mdl := microModel(t, 32)
	url, stop := startServing(t, "trainer", "serve", "--model", mdl, "--addr", "127.0.0.1:0", "--lr", "1e-2")

	ctx := t.Context()
	c, err := remote.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	datum := train.Datum{Tokens: []int32{1, 5, 9, 5, 9, 5, 9, 2}}
	before, err := c.Logprobs(ctx, []train.Datum{datum})
	if err != nil {
		t.Fatal(err)
	}
	fb, err := c.ForwardBackward(ctx, train.Batch{Data: []train.Datum{datum}})
	if err != nil || fb.Tokens != len(datum.Tokens)-1 {
		t.Fatalf("forward_backward: %+v, %v", fb, err)
	}
	st, err := c.OptimStep(ctx)
	if err != nil || st.Step != 1 || st.LearningRate != 1e-2 {
		t.Fatalf("optim_step: %+v, %v (want step 1 at --lr 1e-2)", st, err)
	}
	after, err := c.Logprobs(ctx, []train.Datum{datum})
	if err != nil {
		t.Fatal(err)
	}
	var lpBefore, lpAfter float64
	for i := 1; i < len(datum.Tokens); i++ {
		lpBefore += float64(before[0][i])
		lpAfter += float64(after[0][i])
	}
	if !(lpAfter > lpBefore) {
		t.Errorf("a step on the datum did not raise its logprob: %v before, %v after", lpBefore, lpAfter)
	}

	ckpt := filepath.Join(t.TempDir(), "ckpt")
	if err := c.Save(ctx, ckpt, "step-1"); err != nil {
		t.Fatal(err)
	}
	saved, err := model.Load(ckpt)
	if err != nil {
		t.Fatalf("saved checkpoint: %v", err)
	}
	if saved.Config.VocabSize == 0 || saved.Config.HiddenSize != 32 {
		t.Errorf("saved config %+v", saved.Config)
	}
	if _, err := tokenizer.Load(filepath.Join(ckpt, run.TokenizerFile)); err != nil {
		t.Errorf("saved checkpoint lacks the tokenizer: %v", err)
	}

	if err := stop(); err != nil {
		t.Errorf("trainer serve after Ctrl-C: %v", err)
	}

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no model", []string{"trainer", "serve"}},
		{"empty model dir", []string{"trainer", "serve", "--model", t.TempDir()}},
		{"bad lr", []string{"trainer", "serve", "--model", mdl, "--lr", "0"}},
	} {
		if r := runVerisim(t, nil, tc.args...); r.code != exitUsage {
			t.Errorf("%s: exit %d, want %d: %s", tc.name, r.code, exitUsage, r.stderr)
		}
	}
}
