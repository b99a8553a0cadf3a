package model

import (
	"testing"

	"github.com/verisim/verisim/internal/engine/safetensors"
)

// BenchmarkDecode measures batch-1 decode: one token per Forward call
// against a cache that holds a 64-token prompt plus what was decoded,
// rewound to the prompt before it would overflow max_position_embeddings.
// The vocabulary is 32000, a Llama-2-sized tokenizer.
func BenchmarkDecode(b *testing.B) {
	for _, size := range []string{"tiny", "small"} {
		b.Run("size="+size, func(b *testing.B) {
			cfg, err := ConfigFor("llama", size, 32000)
			if err != nil {
				b.Fatal(err)
			}
			cfg.MaxPositionEmbeddings = 512
			m, err := Init(cfg, 1)
			if err != nil {
				b.Fatal(err)
			}
			const prompt = 64
			cache := m.NewKVCache()
			toks := tokensFor(prompt, cfg.VocabSize, 1)
			if _, err := m.Forward(cache, toks, 0); err != nil {
				b.Fatal(err)
			}
			tok := []int32{7}
			for b.Loop() {
				pos := cache.Len()
				if pos == cfg.MaxPositionEmbeddings {
					pos = prompt
				}
				if _, err := m.Forward(cache, tok, pos); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkPrefill measures the time to the first token's logits for a
// 1000-token prompt on an empty cache (time to first token, less
// tokenizing and sampling), vocabulary 8192.
func BenchmarkPrefill(b *testing.B) {
	for _, size := range []string{"tiny", "small"} {
		b.Run("size="+size+"/tokens=1000", func(b *testing.B) {
			cfg, err := ConfigFor("llama", size, 8192)
			if err != nil {
				b.Fatal(err)
			}
			m, err := Init(cfg, 1)
			if err != nil {
				b.Fatal(err)
			}
			toks := tokensFor(1000, cfg.VocabSize, 1)
			for b.Loop() {
				if _, err := m.Forward(m.NewKVCache(), toks, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/prompt")
		})
	}
}

// BenchmarkLoad measures reading a bf16 checkpoint of the small model
// (vocabulary 8192) into fp32 weights: the bulk of a hot reload, which
// then swaps one pointer.
func BenchmarkLoad(b *testing.B) {
	cfg, err := ConfigFor("llama", "small", 8192)
	if err != nil {
		b.Fatal(err)
	}
	m, err := Init(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := m.Save(dir, safetensors.BF16); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/load")
}
