package train

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/verisim/verisim/internal/engine/gemm"
	"github.com/verisim/verisim/internal/engine/model"
)

type tensorKind int

const (
	kindMatrix tensorKind = iota // 2-D weights, embeddings included: decayed
	kindNorm
	kindBias
)

// tensor is one trainable tensor of a model-shaped set of buffers (the
// weights, the gradients, or one of AdamW's moments).
type tensor struct {
	name  string // the Hugging Face name, as model.Save writes it
	shape []int
	kind  tensorKind
	data  *[]float32
}

func (p tensor) size() int {
	n := 1
	for _, d := range p.shape {
		n *= d
	}
	return n
}

// tensors lists every trainable tensor of m in the model's own order and
// with its names and shapes (model.Params); a tied lm_head is left out: it
// is the embedding. Each mixture-of-experts layer must hold its experts
// (checkModel sees to it).
func tensors(m *model.Model) []tensor {
	ps := m.Params()
	ts := make([]tensor, len(ps))
	for i, p := range ps {
		kind := kindMatrix
		switch p.Kind {
		case model.ParamNorm:
			kind = kindNorm
		case model.ParamBias:
			kind = kindBias
		}
		ts[i] = tensor{p.Name, p.Shape, kind, p.Data}
	}
	return ts
}

// zerosLike returns a model-shaped set of zero buffers for cfg: the layout
// of the gradients and the moments. With tied embeddings its LMHead aliases
// its Embed, so the head's gradient lands in the embedding's.
func zerosLike(cfg model.Config) *model.Model {
	z := &model.Model{Config: cfg, Layers: make([]model.Layer, cfg.NumHiddenLayers)}
	if cfg.MoE() {
		for i := range z.Layers {
			z.Layers[i].Experts = make([]model.Expert, cfg.NumLocalExperts)
		}
	}
	for _, p := range tensors(z) {
		*p.data = make([]float32, p.size())
	}
	if cfg.TieWordEmbeddings {
		z.LMHead = z.Embed
	}
	return z
}

// checkModel reports a model whose buffers do not match its config.
func checkModel(m *model.Model) error {
	if err := m.Config.Validate(); err != nil {
		return err
	}
	if len(m.Layers) != m.Config.NumHiddenLayers {
		return fmt.Errorf("model has %d layers, config says %d", len(m.Layers), m.Config.NumHiddenLayers)
	}
	if m.KeepsBF16() {
		return fmt.Errorf("model holds bfloat16 weights for serving (model.LoadOptions.KeepBF16); the trainer updates float32 weights: load it with model.Load")
	}
	for i, l := range m.Layers {
		if want := m.Config.NumLocalExperts; len(l.Experts) != want {
			return fmt.Errorf("layer %d has %d experts, config says %d", i, len(l.Experts), want)
		}
	}
	for _, p := range tensors(m) {
		if len(*p.data) != p.size() {
			return fmt.Errorf("tensor %s holds %d values, shape %v needs %d", p.name, len(*p.data), p.shape, p.size())
		}
	}
	if m.Config.TieWordEmbeddings && (len(m.LMHead) != len(m.Embed) || &m.LMHead[0] != &m.Embed[0]) {
		return fmt.Errorf("config ties the embeddings but LMHead is not Embed")
	}
	return nil
}

// chunk is a range of one tensor: the unit of the element-wise passes
// (clearing, merging, the norm, the AdamW update), which run in parallel.
// Chunks have a fixed size, so reductions over them sum in the same order
// whatever the thread count.
type chunk struct{ p, lo, hi int }

const chunkSize = 1 << 15

func chunksOf(ts []tensor) []chunk {
	var cs []chunk
	for i, p := range ts {
		n := p.size()
		for lo := 0; lo < n; lo += chunkSize {
			cs = append(cs, chunk{i, lo, min(lo+chunkSize, n)})
		}
	}
	return cs
}

// parallel calls fn for every chunk (with its index) over the gemm
// configuration's thread count, and waits for all of them.
func (b *Builtin) parallel(fn func(c chunk, i int)) {
	threads := b.opts.Compute.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	threads = min(threads, len(b.chunks))
	if threads <= 1 {
		for i, c := range b.chunks {
			fn(c, i)
		}
		return
	}
	var next atomic.Int64
	gemm.Spread(threads, func(int) {
		for i := int(next.Add(1) - 1); i < len(b.chunks); i = int(next.Add(1) - 1) {
			fn(b.chunks[i], i)
		}
	})
}
