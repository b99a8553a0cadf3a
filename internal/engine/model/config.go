package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
)

// ErrUnsupported marks a config.json that asks for something verisim does
// not implement. errors.Is(err, ErrUnsupported) reports it.
var ErrUnsupported = errors.New("unsupported config.json")

// Architectures verisim runs, with the model_type each one implies.
const (
	ArchLlama   = "LlamaForCausalLM"
	ArchQwen2   = "Qwen2ForCausalLM"
	ArchMixtral = "MixtralForCausalLM"
)

var modelTypes = map[string]string{ArchLlama: "llama", ArchQwen2: "qwen2", ArchMixtral: "mixtral"}

// MaxExperts is the most experts a mixture-of-experts layer may have.
const MaxExperts = 256

// Config mirrors the fields of a Hugging Face Llama, Qwen2 or Mixtral
// config.json that change the computation. It marshals back to a
// config.json that transformers loads.
type Config struct {
	Architectures         []string `json:"architectures"`
	ModelType             string   `json:"model_type"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	RMSNormEps            float64  `json:"rms_norm_eps"`
	RopeTheta             float64  `json:"rope_theta"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	// AttentionBias is Llama's switch for a bias on q, k, v and o. Qwen2
	// always has a bias on q, k and v (and none on o), whatever this says.
	AttentionBias bool   `json:"attention_bias,omitempty"`
	HiddenAct     string `json:"hidden_act"`
	TorchDType    string `json:"torch_dtype,omitempty"`
	// NumLocalExperts and NumExpertsPerTok are Mixtral's: each layer's MLP
	// is that many experts of intermediate_size, of which the router picks
	// num_experts_per_tok per token. Zero (and absent from the JSON) for a
	// dense model.
	NumLocalExperts  int `json:"num_local_experts,omitempty"`
	NumExpertsPerTok int `json:"num_experts_per_tok,omitempty"`
}

// MoE reports whether each layer's MLP is a sparse mixture of experts.
func (c Config) MoE() bool { return c.ModelType == "mixtral" }

// QKVBias reports whether q_proj, k_proj and v_proj carry a bias.
func (c Config) QKVBias() bool { return c.AttentionBias || c.ModelType == "qwen2" }

// OBias reports whether o_proj carries a bias (Llama with attention_bias).
func (c Config) OBias() bool { return c.AttentionBias && c.ModelType == "llama" }

// ignoredFields do not change the forward pass, so any value is accepted.
var ignoredFields = map[string]bool{
	"_name_or_path": true, "transformers_version": true, "bos_token_id": true,
	"eos_token_id": true, "pad_token_id": true, "use_cache": true,
	"initializer_range": true, "attention_dropout": true, "max_window_layers": true,
	"dtype": true,
	// Mixtral's training-only knobs: the load-balancing loss and returning
	// the router logits do not change the logits.
	"router_aux_loss_coef": true, "output_router_logits": true,
}

// defaultOnlyFields are fields verisim understands only at the value given
// (as JSON decodes it); any other value is refused.
var defaultOnlyFields = map[string]any{
	"rope_scaling":       nil,
	"pretraining_tp":     1.0,
	"mlp_bias":           false,
	"use_sliding_window": false,
	// Mixtral adds noise to the router only in training; verisim has no
	// training mode, so it accepts only the value that means none.
	"router_jitter_noise": 0.0,
}

// knownFields are the JSON names of Config's fields.
var knownFields = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = true
	}
	return m
}()

func unsupported(field string, raw json.RawMessage, why string) error {
	return fmt.Errorf("%w field %s: %s; %s", ErrUnsupported, field, compact(raw), why)
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// LoadConfig reads and validates a config.json.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("load config: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes a config.json strictly: every field must be one
// verisim implements, one that cannot change the output (token ids,
// dropout, …), or one it knows at its default value. Anything else is
// refused with an error naming the field, wrapping ErrUnsupported. Absent
// optional fields take Hugging Face's defaults.
func ParseConfig(b []byte) (Config, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return Config{}, fmt.Errorf("config.json: %w", err)
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("config.json: %w", err)
	}
	if len(c.Architectures) != 1 || modelTypes[c.Architectures[0]] == "" {
		return Config{}, unsupported("architectures", fields["architectures"],
			fmt.Sprintf("verisim supports exactly one of %q", slices.Sorted(maps.Keys(modelTypes))))
	}
	if want := modelTypes[c.Architectures[0]]; c.ModelType != want {
		return Config{}, unsupported("model_type", fields["model_type"],
			fmt.Sprintf("architecture %s needs %q", c.Architectures[0], want))
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		raw := fields[name]
		switch {
		case knownFields[name] || ignoredFields[name]:
		case name == "sliding_window":
			// Qwen2 ignores sliding_window unless use_sliding_window is set,
			// which defaultOnlyFields refuses; Llama has no such field.
			if c.ModelType != "qwen2" && compact(raw) != "null" {
				return Config{}, unsupported(name, raw, "verisim supports only full attention")
			}
		case name == "layer_types":
			var types []string
			if err := json.Unmarshal(raw, &types); err != nil || slices.ContainsFunc(types, func(s string) bool { return s != "full_attention" }) {
				return Config{}, unsupported(name, raw, "verisim supports only full_attention layers")
			}
		default:
			want, ok := defaultOnlyFields[name]
			if !ok {
				return Config{}, unsupported(name, raw, "verisim does not know this field")
			}
			var got any
			if err := json.Unmarshal(raw, &got); err != nil || !reflect.DeepEqual(got, want) {
				w, _ := json.Marshal(want)
				return Config{}, unsupported(name, raw, "verisim supports only "+string(w))
			}
		}
	}
	for _, req := range []string{"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"} {
		if _, ok := fields[req]; !ok {
			return Config{}, fmt.Errorf("config.json: missing field %s", req)
		}
	}
	mixtral := c.ModelType == "mixtral"
	if _, ok := fields["num_key_value_heads"]; !ok {
		c.NumKeyValueHeads = c.NumAttentionHeads
		if mixtral {
			c.NumKeyValueHeads = 8
		}
	}
	if _, ok := fields["head_dim"]; !ok && c.NumAttentionHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	if _, ok := fields["max_position_embeddings"]; !ok {
		c.MaxPositionEmbeddings = map[string]int{"llama": 2048, "qwen2": 32768, "mixtral": 131072}[c.ModelType]
	}
	if _, ok := fields["rms_norm_eps"]; !ok {
		c.RMSNormEps = 1e-6
		if mixtral {
			c.RMSNormEps = 1e-5
		}
	}
	if _, ok := fields["rope_theta"]; !ok {
		c.RopeTheta = 10000
		if mixtral {
			c.RopeTheta = 1e6
		}
	}
	if _, ok := fields["num_local_experts"]; !ok && mixtral {
		c.NumLocalExperts = 8
	}
	if _, ok := fields["num_experts_per_tok"]; !ok && mixtral {
		c.NumExpertsPerTok = 2
	}
	if _, ok := fields["hidden_act"]; !ok {
		c.HiddenAct = "silu"
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks that c describes a model verisim can build and run.
func (c Config) Validate() error {
	if len(c.Architectures) != 1 || modelTypes[c.Architectures[0]] != c.ModelType || c.ModelType == "" {
		return fmt.Errorf("%w field architectures: %q with model_type %q", ErrUnsupported, c.Architectures, c.ModelType)
	}
	if c.HiddenAct != "silu" {
		return fmt.Errorf("%w field hidden_act: %q; verisim supports only \"silu\"", ErrUnsupported, c.HiddenAct)
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize},
		{"intermediate_size", c.IntermediateSize}, {"num_hidden_layers", c.NumHiddenLayers},
		{"num_attention_heads", c.NumAttentionHeads}, {"num_key_value_heads", c.NumKeyValueHeads},
		{"head_dim", c.HeadDim}, {"max_position_embeddings", c.MaxPositionEmbeddings},
	} {
		if f.v <= 0 {
			return fmt.Errorf("config.json: %s = %d, want > 0", f.name, f.v)
		}
	}
	if c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return fmt.Errorf("config.json: num_attention_heads = %d is not a multiple of num_key_value_heads = %d", c.NumAttentionHeads, c.NumKeyValueHeads)
	}
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("config.json: head_dim = %d, want even (RoPE rotates pairs)", c.HeadDim)
	}
	if !(c.RMSNormEps > 0) || !(c.RopeTheta > 0) {
		return fmt.Errorf("config.json: rms_norm_eps = %g and rope_theta = %g, want both > 0", c.RMSNormEps, c.RopeTheta)
	}
	switch c.TorchDType {
	case "", "float32", "bfloat16", "float16":
	default:
		return fmt.Errorf("%w field torch_dtype: %q", ErrUnsupported, c.TorchDType)
	}
	return c.validateExperts()
}

func (c Config) validateExperts() error {
	E, k := c.NumLocalExperts, c.NumExpertsPerTok
	if !c.MoE() {
		if E != 0 || k != 0 {
			return fmt.Errorf("%w fields num_local_experts = %d, num_experts_per_tok = %d: model_type %q has no experts", ErrUnsupported, E, k, c.ModelType)
		}
		return nil
	}
	if !(1 <= k && k <= E && E <= MaxExperts) {
		return fmt.Errorf("config.json: num_experts_per_tok = %d, num_local_experts = %d, want 1 ≤ num_experts_per_tok ≤ num_local_experts ≤ %d", k, E, MaxExperts)
	}
	if c.AttentionBias {
		return fmt.Errorf("%w field attention_bias: true; mixtral's attention has no biases", ErrUnsupported)
	}
	return nil
}

// ParamCount is the number of parameters a model with this config holds,
// counting a tied embedding once.
func (c Config) ParamCount() int64 {
	var n int64
	for _, p := range newModel(c).params() {
		n += int64(p.size())
	}
	return n
}

// Shape is the size of a preset, everything but the vocabulary.
type Shape struct {
	HiddenSize, IntermediateSize, NumHiddenLayers, NumAttentionHeads, NumKeyValueHeads int
	// NumLocalExperts and NumExpertsPerTok are zero for a dense model;
	// IntermediateSize is then each expert's.
	NumLocalExperts, NumExpertsPerTok int
}

// Presets returns the named model sizes `verisim model init` offers for
// the dense architectures. Both tie the embeddings and use head_dim 64.
// Parameter counts depend on the vocabulary: tiny is 3,148,032 +
// 256·vocab (11.3M at vocab 32000), small is 75,516,672 + 768·vocab
// (100.1M at vocab 32000).
//
// The mixture-of-experts model (arch "moe") of each size is MoEPreset of
// the dense one.
func Presets() map[string]Shape {
	return map[string]Shape{
		"tiny":  {HiddenSize: 256, IntermediateSize: 768, NumHiddenLayers: 4, NumAttentionHeads: 4, NumKeyValueHeads: 2},
		"small": {HiddenSize: 768, IntermediateSize: 2048, NumHiddenLayers: 12, NumAttentionHeads: 12, NumKeyValueHeads: 4},
	}
}

// MoEPreset turns a dense shape into a Mixtral one with the same attention:
// 8 experts of half the dense intermediate size, 2 of them active per
// token, so a token goes through as many MLP weights as in the dense model
// (plus the router's 8·hidden) and the layers hold 3.25× as many. tiny:
// 10,234,112 + 256·vocab parameters (18.4M at vocab 32000), 3,156,224 +
// 256·vocab active per token (11.4M); small: 245,459,712 + 768·vocab
// (270.0M at vocab 32000), 75,590,400 + 768·vocab active (100.2M).
func MoEPreset(s Shape) Shape {
	s.IntermediateSize /= 2
	s.NumLocalExperts, s.NumExpertsPerTok = 8, 2
	return s
}

// ConfigFor builds the config of a fresh model: arch is "llama", "qwen2"
// (Llama plus a bias on q, k and v) or "moe" (Mixtral: Llama attention,
// a mixture of experts for the MLP, see MoEPreset), size a key of Presets,
// vocab the size of the tokenizer's vocabulary.
func ConfigFor(arch, size string, vocab int) (Config, error) {
	s, ok := Presets()[size]
	if !ok {
		return Config{}, fmt.Errorf("unknown model size %q; have %q", size, slices.Sorted(maps.Keys(Presets())))
	}
	if arch == "moe" {
		s = MoEPreset(s)
	}
	c := Config{
		VocabSize:             vocab,
		HiddenSize:            s.HiddenSize,
		IntermediateSize:      s.IntermediateSize,
		NumHiddenLayers:       s.NumHiddenLayers,
		NumAttentionHeads:     s.NumAttentionHeads,
		NumKeyValueHeads:      s.NumKeyValueHeads,
		HeadDim:               s.HiddenSize / s.NumAttentionHeads,
		MaxPositionEmbeddings: 4096,
		TieWordEmbeddings:     true,
		HiddenAct:             "silu",
		TorchDType:            "float32",
		NumLocalExperts:       s.NumLocalExperts,
		NumExpertsPerTok:      s.NumExpertsPerTok,
	}
	switch arch {
	case "llama":
		c.Architectures, c.ModelType = []string{ArchLlama}, "llama"
		c.RMSNormEps, c.RopeTheta = 1e-5, 10000
	case "qwen2":
		c.Architectures, c.ModelType = []string{ArchQwen2}, "qwen2"
		c.RMSNormEps, c.RopeTheta = 1e-6, 1e6
	case "moe":
		c.Architectures, c.ModelType = []string{ArchMixtral}, "mixtral"
		c.RMSNormEps, c.RopeTheta = 1e-5, 1e6
	default:
		return Config{}, fmt.Errorf("unknown architecture %q; have \"llama\", \"qwen2\", \"moe\"", arch)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// jsonConfig is c as config.json holds it.
func jsonConfig(c Config) ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
