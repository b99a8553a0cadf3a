package model

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/verisim/verisim/internal/engine/gemm"
	"github.com/verisim/verisim/internal/engine/safetensors"
)

// ConfigFile is the name of the config in a checkpoint directory.
const ConfigFile = "config.json"

// DefaultMaxShardBytes is where Save starts a new shard, as transformers'
// save_pretrained does by default.
const DefaultMaxShardBytes = 5_000_000_000

// Model is a decoder-only transformer with its weights in fp32, row-major,
// linear weights stored [out, in] as in Hugging Face checkpoints. A model
// loaded for serving with LoadOptions.KeepBF16 holds the matrices a bf16
// checkpoint stores in bfloat16 instead (the BF16 fields, the float32
// twins nil): half the memory, and half the bytes each batch-1 decode step
// streams, with logits bit-identical to the widened model's.
type Model struct {
	Config Config
	// Compute is how the projections multiply; the zero value uses every
	// CPU.
	Compute gemm.Config

	Embed  []float32 // [vocab, hidden]
	Layers []Layer
	Norm   []float32 // [hidden]
	// LMHead is [vocab, hidden]; with tied embeddings it is Embed itself.
	LMHead []float32

	// BF16 holds Embed and LMHead in bfloat16 when the model keeps bf16
	// weights.
	BF16 struct{ Embed, LMHead []uint16 }

	// Profile, when set, adds up where Forward's time goes; benchmarks
	// set it on a copy of the Model. Nil costs nothing.
	Profile *Profile
}

// Layer holds one decoder layer's weights. Biases are nil when the config
// has none. A dense layer has Gate, Up and Down; a mixture-of-experts
// layer has Router and Experts instead.
type Layer struct {
	InputNorm, PostNorm []float32 // [hidden]
	Q                   []float32 // [heads·head_dim, hidden]
	K, V                []float32 // [kv_heads·head_dim, hidden]
	O                   []float32 // [hidden, heads·head_dim]
	QBias               []float32 // [heads·head_dim]
	KBias, VBias        []float32 // [kv_heads·head_dim]
	OBias               []float32 // [hidden]
	Gate, Up            []float32 // [intermediate, hidden]
	Down                []float32 // [hidden, intermediate]
	Router              []float32 // [experts, hidden]
	Experts             []Expert  // [experts]
	// BF16 holds the projections in bfloat16 when the model keeps bf16
	// weights (the router stays float32: it is small).
	BF16 struct{ Q, K, V, O, Gate, Up, Down []uint16 }
}

// Expert is one expert of a mixture-of-experts layer: a SwiGLU MLP,
// Mixtral's w1 (Gate), w3 (Up) and w2 (Down).
type Expert struct {
	Gate, Up []float32 // [intermediate, hidden]
	Down     []float32 // [hidden, intermediate]
	// BF16 holds them in bfloat16 when the model keeps bf16 weights.
	BF16 struct{ Gate, Up, Down []uint16 }
}

// newModel returns a model of c with no weights yet: the slots params
// fills.
func newModel(c Config) *Model {
	m := &Model{Config: c, Layers: make([]Layer, max(0, c.NumHiddenLayers))}
	if c.MoE() {
		for i := range m.Layers {
			m.Layers[i].Experts = make([]Expert, max(0, c.NumLocalExperts))
		}
	}
	return m
}

type paramKind int

const (
	weight paramKind = iota
	norm
	bias
)

// param is one tensor of the checkpoint and where it lives in the Model:
// data, or half for a matrix a model keeping bf16 weights holds in
// bfloat16 (nil where it never does).
type param struct {
	name  string
	shape []int
	kind  paramKind
	data  *[]float32
	half  *[]uint16
}

func (p param) size() int {
	n := 1
	for _, d := range p.shape {
		n *= d
	}
	return n
}

// params lists every tensor of the checkpoint in a fixed order: the one
// place that knows the Hugging Face names and shapes. A tied lm_head is
// left out.
func (m *Model) params() []param {
	c := m.Config
	h, q, kv, inter := c.HiddenSize, c.NumAttentionHeads*c.HeadDim, c.NumKeyValueHeads*c.HeadDim, c.IntermediateSize
	ps := []param{{"model.embed_tokens.weight", []int{c.VocabSize, h}, weight, &m.Embed, &m.BF16.Embed}}
	for i := range m.Layers {
		l := &m.Layers[i]
		pre := "model.layers." + strconv.Itoa(i) + "."
		ps = append(ps,
			param{pre + "input_layernorm.weight", []int{h}, norm, &l.InputNorm, nil},
			param{pre + "self_attn.q_proj.weight", []int{q, h}, weight, &l.Q, &l.BF16.Q},
			param{pre + "self_attn.k_proj.weight", []int{kv, h}, weight, &l.K, &l.BF16.K},
			param{pre + "self_attn.v_proj.weight", []int{kv, h}, weight, &l.V, &l.BF16.V},
			param{pre + "self_attn.o_proj.weight", []int{h, q}, weight, &l.O, &l.BF16.O},
		)
		if c.QKVBias() {
			ps = append(ps,
				param{pre + "self_attn.q_proj.bias", []int{q}, bias, &l.QBias, nil},
				param{pre + "self_attn.k_proj.bias", []int{kv}, bias, &l.KBias, nil},
				param{pre + "self_attn.v_proj.bias", []int{kv}, bias, &l.VBias, nil},
			)
		}
		if c.OBias() {
			ps = append(ps, param{pre + "self_attn.o_proj.bias", []int{h}, bias, &l.OBias, nil})
		}
		ps = append(ps, param{pre + "post_attention_layernorm.weight", []int{h}, norm, &l.PostNorm, nil})
		if !c.MoE() {
			ps = append(ps,
				param{pre + "mlp.gate_proj.weight", []int{inter, h}, weight, &l.Gate, &l.BF16.Gate},
				param{pre + "mlp.up_proj.weight", []int{inter, h}, weight, &l.Up, &l.BF16.Up},
				param{pre + "mlp.down_proj.weight", []int{h, inter}, weight, &l.Down, &l.BF16.Down},
			)
			continue
		}
		moe := pre + "block_sparse_moe."
		ps = append(ps, param{moe + "gate.weight", []int{len(l.Experts), h}, weight, &l.Router, nil})
		for e := range l.Experts {
			x := &l.Experts[e]
			ex := moe + "experts." + strconv.Itoa(e) + "."
			ps = append(ps,
				param{ex + "w1.weight", []int{inter, h}, weight, &x.Gate, &x.BF16.Gate},
				param{ex + "w2.weight", []int{h, inter}, weight, &x.Down, &x.BF16.Down},
				param{ex + "w3.weight", []int{inter, h}, weight, &x.Up, &x.BF16.Up},
			)
		}
	}
	ps = append(ps, param{"model.norm.weight", []int{h}, norm, &m.Norm, nil})
	if !c.TieWordEmbeddings {
		ps = append(ps, param{"lm_head.weight", []int{c.VocabSize, h}, weight, &m.LMHead, &m.BF16.LMHead})
	}
	return ps
}

// ParamKind says what a tensor of the model is.
type ParamKind int

// Kinds of Param.
const (
	// ParamWeight is a matrix: a projection, an expert's or the router's
	// weights, the embedding, an untied LM head.
	ParamWeight = ParamKind(weight)
	// ParamNorm is an RMSNorm's scale.
	ParamNorm = ParamKind(norm)
	// ParamBias is a projection's bias.
	ParamBias = ParamKind(bias)
)

// Param is one tensor of the model: its Hugging Face name and shape, and
// where its values live (Data points at the Model's field, so writing
// through it changes the model).
type Param struct {
	Name  string
	Shape []int
	Kind  ParamKind
	Data  *[]float32
}

// Size is the number of values the shape holds.
func (p Param) Size() int { return param{shape: p.Shape}.size() }

// Params lists every tensor of the checkpoint in a fixed order, as Save
// writes them; a tied lm_head is left out (it is the embedding). The
// trainer walks the same list, so a model's tensors are named in one
// place.
func (m *Model) Params() []Param {
	ps := m.params()
	out := make([]Param, len(ps))
	for i, p := range ps {
		out[i] = Param{Name: p.name, Shape: p.shape, Kind: ParamKind(p.kind), Data: p.data}
	}
	return out
}

// Init builds a model with random weights: linear and embedding weights
// drawn from normal(0, 0.02), norms 1, biases 0. The same config and seed
// give the same weights on every machine.
func Init(cfg Config, seed uint64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := newModel(cfg)
	rng := rand.New(rand.NewPCG(seed, 0x7665726973696d)) // "verisim"
	for _, p := range m.params() {
		v := make([]float32, p.size())
		switch p.kind {
		case weight:
			for i := range v {
				v[i] = float32(rng.NormFloat64() * 0.02)
			}
		case norm:
			for i := range v {
				v[i] = 1
			}
		}
		*p.data = v
	}
	m.tie()
	return m, nil
}

func (m *Model) tie() {
	if m.Config.TieWordEmbeddings {
		m.LMHead = m.Embed
		m.BF16.LMHead = m.BF16.Embed
	}
}

// KeepsBF16 reports whether the model holds weights in bfloat16 (see
// LoadOptions.KeepBF16). Such a model serves; the trainer, which updates
// float32 weights, refuses it.
func (m *Model) KeepsBF16() bool {
	for _, p := range m.params() {
		if p.half != nil && *p.half != nil {
			return true
		}
	}
	return false
}

// values returns a tensor's values as float32, widening one held in
// bfloat16.
func (p param) values() []float32 {
	if p.half != nil && *p.half != nil {
		v := make([]float32, len(*p.half))
		for i, h := range *p.half {
			v[i] = safetensors.Float32FromBF16(h)
		}
		return v
	}
	return *p.data
}

var torchDTypes = map[safetensors.DType]string{
	safetensors.F32: "float32", safetensors.BF16: "bfloat16", safetensors.F16: "float16",
}

// Save writes the model to dir as a Hugging Face checkpoint in dtype (F32,
// BF16 or F16), sharded above DefaultMaxShardBytes.
func (m *Model) Save(dir string, dtype safetensors.DType) error {
	return m.SaveSharded(dir, dtype, DefaultMaxShardBytes)
}

// SaveSharded is Save with the shard size given. The weights are written
// first (each file atomically, see safetensors.WriteSharded) and config.json
// last, atomically, so a directory with a new config.json holds the weights
// that go with it.
func (m *Model) SaveSharded(dir string, dtype safetensors.DType, maxShardBytes int64) error {
	td, ok := torchDTypes[dtype]
	if !ok {
		return fmt.Errorf("save model: cannot store weights as %s", dtype)
	}
	cfg := m.Config
	cfg.TorchDType = td
	cfgJSON, err := jsonConfig(cfg)
	if err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	var tensors []safetensors.Tensor
	for _, p := range m.params() {
		t, err := safetensors.FromFloat32(p.name, p.shape, p.values(), dtype)
		if err != nil {
			return fmt.Errorf("save model: %w", err)
		}
		tensors = append(tensors, t)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if _, err := safetensors.WriteSharded(dir, tensors, map[string]string{"format": "pt"}, maxShardBytes); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, ConfigFile), cfgJSON); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	return nil
}

func writeFileAtomic(path string, b []byte) (retErr error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(b); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Load reads a checkpoint directory: config.json plus model.safetensors or
// a sharded model.safetensors.index.json. Every tensor the config calls for
// must be present with its shape, and no other tensor may be; F32, BF16 and
// F16 weights are widened to fp32.
func Load(dir string) (*Model, error) { return LoadWith(dir, LoadOptions{}) }

// LoadOptions change how Load builds the model.
type LoadOptions struct {
	// KeepBF16 keeps every matrix the checkpoint stores in BF16 (the
	// embedding, projections, experts, LM head; not the router) in
	// bfloat16 instead of widening it. Forward then multiplies with
	// gemm.MatMulTBF16, which gives the same bits as the widened weights
	// would, with half the memory and half the bytes read per batch-1
	// step. Nothing is ever rounded: F32 and F16 tensors still widen to
	// float32. For serving; the trainer needs float32 weights.
	KeepBF16 bool
}

// LoadWith is Load with options.
func LoadWith(dir string, opts LoadOptions) (*Model, error) {
	cfg, err := LoadConfig(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	tensors, _, err := safetensors.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load model %s: no %s or %s: %w", dir, safetensors.SingleFile, safetensors.IndexFile, err)
	}
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	m, err := fromTensors(cfg, tensors, opts)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	return m, nil
}

// fromTensors binds tensors to a model of cfg; it consumes the map.
func fromTensors(cfg Config, tensors map[string]safetensors.Tensor, opts LoadOptions) (*Model, error) {
	m := newModel(cfg)
	for _, p := range m.params() {
		t, ok := tensors[p.name]
		if !ok {
			return nil, fmt.Errorf("missing tensor %s", p.name)
		}
		if !slices.Equal(t.Shape, p.shape) {
			return nil, fmt.Errorf("tensor %s has shape %v, want %v", p.name, t.Shape, p.shape)
		}
		delete(tensors, p.name)
		if opts.KeepBF16 && p.half != nil && t.DType == safetensors.BF16 {
			h, err := t.BF16s()
			if err != nil {
				return nil, err
			}
			*p.half = h
			continue
		}
		v, err := t.Float32s()
		if err != nil {
			return nil, err
		}
		*p.data = v
	}
	if len(tensors) > 0 {
		extra := slices.Sorted(maps.Keys(tensors))
		return nil, fmt.Errorf("unexpected tensor %s (%d not used by the config)", extra[0], len(extra))
	}
	m.tie()
	return m, nil
}
