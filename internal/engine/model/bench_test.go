package model

import (
	"testing"
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
