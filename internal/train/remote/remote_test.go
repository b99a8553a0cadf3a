package remote

import (
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/train"
)

// toyTrainer is the built-in trainer on a 2-layer toy Llama, the same
// weights for the same seed.
func toyTrainer(t *testing.T, seed uint64) *train.Builtin {
	t.Helper()
	cfg := model.Config{
		VocabSize: 64, HiddenSize: 32, IntermediateSize: 48, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8,
		MaxPositionEmbeddings: 64, RMSNormEps: 1e-5, RopeTheta: 10000, HiddenAct: "silu",
		TieWordEmbeddings: true, Architectures: []string{model.ArchLlama}, ModelType: "llama",
	}
	m, err := model.Init(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	b, err := train.New(m, train.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func batch() train.Batch {
	return train.Batch{Data: []train.Datum{
		{Tokens: []int32{1, 5, 9, 13, 2, 7}, Weights: []float32{0, 1, 1, 1, 0, 1}},
		{Tokens: []int32{3, 4, 5}, Advantages: []float32{0, 1, -1}},
	}}
}

// TestClientMatchesLocal drives one trainer over HTTP and an identical one
// in-process through the same calls, and checks that every answer is the
// same: the wire carries the contract losslessly.
func TestClientMatchesLocal(t *testing.T) {
	local, served := toyTrainer(t, 1), toyTrainer(t, 1)
	srv := httptest.NewServer(Handler(served))
	t.Cleanup(srv.Close)
	c, err := Dial(t.Context(), srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for step := range 2 {
		wantM, err := local.ForwardBackward(ctx, batch())
		if err != nil {
			t.Fatal(err)
		}
		gotM, err := c.ForwardBackward(ctx, batch())
		if err != nil {
			t.Fatal(err)
		}
		if gotM.Loss != wantM.Loss || gotM.Tokens != wantM.Tokens || gotM.SumWeights != wantM.SumWeights {
			t.Errorf("step %d: remote metrics %+v, local %+v", step, gotM, wantM)
		}
		wantS, err := local.OptimStep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		gotS, err := c.OptimStep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if gotS != wantS {
			t.Errorf("step %d: remote step %+v, local %+v", step, gotS, wantS)
		}
	}
	want, err := local.Logprobs(ctx, batch().Data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Logprobs(ctx, batch().Data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("datum %d: remote logprobs %v, local %v", i, got[i], want[i])
		}
	}

	// Save over the wire, load into a fresh local trainer: same logprobs.
	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := c.Save(ctx, dir, "v2"); err != nil {
		t.Fatal(err)
	}
	fresh := toyTrainer(t, 9)
	if err := fresh.Load(ctx, dir); err != nil {
		t.Fatal(err)
	}
	again, err := fresh.Logprobs(ctx, batch().Data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !slices.Equal(again[i], want[i]) {
			t.Errorf("datum %d after save/load: %v, want %v", i, again[i], want[i])
		}
	}
	if err := c.Load(ctx, dir); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	tr := toyTrainer(t, 1)
	srv := httptest.NewServer(Handler(tr))
	t.Cleanup(srv.Close)
	c, err := Dial(t.Context(), srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	t.Run("token outside vocabulary", func(t *testing.T) {
		_, err := c.ForwardBackward(ctx, train.Batch{Data: []train.Datum{{Tokens: []int32{1, 999}}}})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "999") {
			t.Errorf("err = %v, want ErrInvalid naming the token", err)
		}
	})
	t.Run("unknown loss", func(t *testing.T) {
		_, err := c.ForwardBackward(ctx, train.Batch{Loss: "hinge", Data: batch().Data})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "hinge") {
			t.Errorf("err = %v, want ErrInvalid naming the loss", err)
		}
	})
	t.Run("non-finite", func(t *testing.T) {
		m := tr.Model()
		saved := m.Norm[0]
		m.Norm[0] = float32(math.NaN())
		defer func() { m.Norm[0] = saved }()
		_, err := c.ForwardBackward(ctx, batch())
		if !errors.Is(err, train.ErrNonFinite) {
			t.Errorf("err = %v, want ErrNonFinite", err)
		}
	})
	t.Run("wire", func(t *testing.T) {
		for _, tc := range []struct{ path, body, want string }{
			{PathForwardBackward, `{"data":[],"lr":1}`, `unknown field \"lr\"`},
			{PathOptimStep, `{`, "request body"},
			{PathSave, `{}`, "path is required"},
			{PathLogprobs, `{"data":[]} {}`, "more than one JSON value"},
		} {
			resp, err := http.Post(srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			_, _ = io.Copy(&b, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b.String(), tc.want) || !strings.Contains(b.String(), CodeInvalid) {
				t.Errorf("POST %s %s: %d %s, want 400 %s with %q", tc.path, tc.body, resp.StatusCode, b.String(), CodeInvalid, tc.want)
			}
		}
	})
	t.Run("dial", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		if _, err := Dial(t.Context(), dead.URL, nil); err == nil {
			t.Error("Dial of a closed server succeeded")
		}
	})
}
