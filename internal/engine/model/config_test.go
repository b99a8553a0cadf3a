package model

import (
	"errors"
	"os"
	"path/filepath"
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
			if back.ParamCount() != tc.want || back.ModelType != tc.arch {
				t.Errorf("round trip: %+v", back)
			}
		})
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
