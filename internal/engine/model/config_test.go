package model

import (
	"cmp"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// qwen25Config is Qwen2.5-0.5B's config.json as published.
const qwen25Config = `{
  "architectures": ["Qwen2ForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151643,
  "hidden_act": "silu",
  "hidden_size": 896,
  "initializer_range": 0.02,
  "intermediate_size": 4864,
  "max_position_embeddings": 32768,
  "max_window_layers": 24,
  "model_type": "qwen2",
  "num_attention_heads": 14,
  "num_hidden_layers": 24,
  "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.1",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}`

// mixtralConfig is Mixtral-8x7B-v0.1's config.json as published.
const mixtralConfig = `{
  "architectures": ["MixtralForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mixtral",
  "num_attention_heads": 32,
  "num_experts_per_tok": 2,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "num_local_experts": 8,
  "output_router_logits": false,
  "rms_norm_eps": 1e-05,
  "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.02,
  "router_jitter_noise": 0.0,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.36.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
}`

func TestParseConfigMixtral(t *testing.T) {
	c, err := ParseConfig([]byte(mixtralConfig))
	if err != nil {
		t.Fatal(err)
	}
	if !c.MoE() || c.NumLocalExperts != 8 || c.NumExpertsPerTok != 2 || c.HeadDim != 128 || c.QKVBias() || c.OBias() ||
		c.TieWordEmbeddings || c.RopeTheta != 1e6 || c.RMSNormEps != 1e-5 || c.MaxPositionEmbeddings != 32768 {
		t.Errorf("Mixtral config parsed as %+v", c)
	}
	// 46.7B is the published size of Mixtral-8x7B.
	if n := c.ParamCount(); n != 46_702_792_704 {
		t.Errorf("Mixtral-8x7B ParamCount = %d, want 46702792704", n)
	}
	// What verisim writes back parses to the same config.
	b, err := jsonConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := ParseConfig(b); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("round trip: %+v, %v", back, err)
	}

	// Absent fields take MixtralConfig's defaults.
	min := `{"architectures":["MixtralForCausalLM"],"model_type":"mixtral","vocab_size":10,
		"hidden_size":32,"intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":16}`
	c, err = ParseConfig([]byte(min))
	if err != nil {
		t.Fatal(err)
	}
	if c.NumLocalExperts != 8 || c.NumExpertsPerTok != 2 || c.NumKeyValueHeads != 8 || c.HeadDim != 2 ||
		c.RMSNormEps != 1e-5 || c.RopeTheta != 1e6 || c.MaxPositionEmbeddings != 131072 {
		t.Errorf("defaults: %+v", c)
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(qwen25Config))
	if err != nil {
		t.Fatal(err)
	}
	if c.HeadDim != 64 || c.NumKeyValueHeads != 2 || !c.QKVBias() || c.OBias() || !c.TieWordEmbeddings || c.RopeTheta != 1e6 {
		t.Errorf("Qwen2.5 config parsed as %+v", c)
	}
	// 494M is the published size of Qwen2.5-0.5B.
	if n := c.ParamCount(); n != 494_032_768 {
		t.Errorf("Qwen2.5-0.5B ParamCount = %d, want 494032768", n)
	}

	// Defaults for absent optional fields, as transformers fills them.
	min := `{"architectures":["LlamaForCausalLM"],"model_type":"llama","vocab_size":10,
		"hidden_size":8,"intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":2}`
	c, err = ParseConfig([]byte(min))
	if err != nil {
		t.Fatal(err)
	}
	if c.NumKeyValueHeads != 2 || c.HeadDim != 4 || c.RMSNormEps != 1e-6 || c.RopeTheta != 10000 ||
		c.MaxPositionEmbeddings != 2048 || c.HiddenAct != "silu" || c.QKVBias() {
		t.Errorf("defaults: %+v", c)
	}
}

func TestParseConfigRefuses(t *testing.T) {
	base := `"model_type":"llama","vocab_size":10,"hidden_size":8,"intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":2`
	llama := `"architectures":["LlamaForCausalLM"],` + base
	mixtral := `"architectures":["MixtralForCausalLM"],"model_type":"mixtral","vocab_size":10,"hidden_size":8,` +
		`"intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":2`
	for _, tc := range []struct {
		name, json, want string
		unsupported      bool
	}{
		{"rope_scaling", `{` + llama + `,"rope_scaling":{"type":"llama3","factor":8.0}}`,
			`unsupported config.json field rope_scaling: {"type":"llama3","factor":8.0}`, true},
		{"hidden_act", `{` + llama + `,"hidden_act":"gelu"}`, `field hidden_act: "gelu"`, true},
		{"architecture", `{"architectures":["MistralForCausalLM"],` + base + `}`, `field architectures: ["MistralForCausalLM"]`, true},
		{"model_type", `{"architectures":["Qwen2ForCausalLM"],` + base + `}`, `field model_type: "llama"`, true},
		{"use_sliding_window", `{` + llama + `,"use_sliding_window":true}`, `field use_sliding_window: true`, true},
		{"llama sliding_window", `{` + llama + `,"sliding_window":4096}`, `field sliding_window: 4096`, true},
		{"mlp_bias", `{` + llama + `,"mlp_bias":true}`, `field mlp_bias: true`, true},
		{"pretraining_tp", `{` + llama + `,"pretraining_tp":2}`, `field pretraining_tp: 2`, true},
		{"unknown", `{` + llama + `,"num_experts":8}`, `field num_experts: 8; verisim does not know this field`, true},
		{"layer_types", `{` + llama + `,"layer_types":["sliding_attention"]}`, `field layer_types`, true},
		{"missing", `{"architectures":["LlamaForCausalLM"],"model_type":"llama"}`, `missing field vocab_size`, false},
		{"heads", `{` + llama + `,"num_key_value_heads":3}`, `not a multiple of num_key_value_heads = 3`, false},
		{"head_dim odd", `{` + llama + `,"head_dim":3}`, `head_dim = 3`, false},
		{"not json", `{`, `config.json:`, false},
		{"mixtral sliding_window", `{` + mixtral + `,"sliding_window":4096}`, `field sliding_window: 4096`, true},
		{"router_jitter_noise", `{` + mixtral + `,"router_jitter_noise":0.1}`, `field router_jitter_noise: 0.1; verisim supports only 0`, true},
		{"mixtral attention_bias", `{` + mixtral + `,"attention_bias":true}`, `field attention_bias: true`, true},
		{"k > E", `{` + mixtral + `,"num_local_experts":2,"num_experts_per_tok":3}`, `num_experts_per_tok = 3, num_local_experts = 2, want 1 ≤`, false},
		{"k = 0", `{` + mixtral + `,"num_experts_per_tok":0}`, `num_experts_per_tok = 0`, false},
		{"E > 256", `{` + mixtral + `,"num_local_experts":257}`, `num_local_experts = 257, want 1 ≤ num_experts_per_tok ≤ num_local_experts ≤ 256`, false},
		{"llama experts", `{` + llama + `,"num_local_experts":8}`, `fields num_local_experts = 8, num_experts_per_tok = 0: model_type "llama" has no experts`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if errors.Is(err, ErrUnsupported) != tc.unsupported {
				t.Errorf("errors.Is(err, ErrUnsupported) = %v, want %v", !tc.unsupported, tc.unsupported)
			}
		})
	}
}

func TestLoadConfigNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"architectures":["GPT2LMHeadModel"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "GPT2LMHeadModel") {
		t.Errorf("err = %v", err)
	}
}

func TestPresets(t *testing.T) {
	for _, tc := range []struct {
		arch, size string
		want       int64
	}{
		{"llama", "tiny", 3_148_032 + 256*32000},
		{"llama", "small", 75_516_672 + 768*32000},
		// qwen2 adds q, k, v biases: (256+128+128)·4 and (768+256+256)·12.
		{"qwen2", "tiny", 3_148_032 + 256*32000 + 2048},
		{"qwen2", "small", 75_516_672 + 768*32000 + 15360},
		// See MoEPreset.
		{"moe", "tiny", 10_234_112 + 256*32000},
		{"moe", "small", 245_459_712 + 768*32000},
	} {
		t.Run("arch="+tc.arch+"/size="+tc.size, func(t *testing.T) {
			c, err := ConfigFor(tc.arch, tc.size, 32000)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.ParamCount(); got != tc.want {
				t.Errorf("ParamCount = %d, want %d", got, tc.want)
			}
			// What ConfigFor builds must survive its own config.json.
			b, err := jsonConfig(c)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseConfig(b)
			if err != nil {
				t.Fatalf("ParseConfig(%s): %v", b, err)
			}
			if back.ParamCount() != tc.want || back.ModelType != cmp.Or(map[string]string{"moe": "mixtral"}[tc.arch], tc.arch) {
				t.Errorf("round trip: %+v", back)
			}
		})
	}
	// A token of the moe preset goes through as many weights as one of the
	// dense preset, plus the router's.
	for _, size := range []string{"tiny", "small"} {
		moe, _ := ConfigFor("moe", size, 32000)
		dense, _ := ConfigFor("llama", size, 32000)
		H, I, L, E, k := int64(moe.HiddenSize), int64(moe.IntermediateSize), int64(moe.NumHiddenLayers), int64(moe.NumLocalExperts), int64(moe.NumExpertsPerTok)
		active := moe.ParamCount() - (E-k)*3*I*H*L
		if want := dense.ParamCount() + E*H*L; active != want {
			t.Errorf("moe %s: %d active parameters, want %d", size, active, want)
		}
	}
	for _, bad := range [][2]string{{"gpt2", "tiny"}, {"llama", "huge"}} {
		if _, err := ConfigFor(bad[0], bad[1], 100); err == nil {
			t.Errorf("ConfigFor(%q, %q) succeeded", bad[0], bad[1])
		}
	}
	if _, err := ConfigFor("llama", "tiny", 0); err == nil || !strings.Contains(err.Error(), "vocab_size") {
		t.Errorf("ConfigFor with vocab 0: %v", err)
	}
}
