package model

import (
	"strconv"
	"testing"

	"github.com/verisim/verisim/internal/engine/safetensors"
)

// BenchmarkDecode measures decoding with batch sequences at once, one
// token each per ForwardBatch call, each against a cache that holds a
// 64-token prompt plus what was decoded, rewound to the prompt before it
// would overflow max_position_embeddings. tokens/s counts every
// sequence's token. The vocabulary is 32000, a Llama-2-sized tokenizer.
// arch=moe is the Mixtral preset of the size: the same attention and as
// many active MLP weights per token, spread over 8 experts.
func BenchmarkDecode(b *testing.B) {
	for _, arch := range []string{"llama", "moe"} {
		for _, size := range []string{"tiny", "small"} {
			for _, batch := range []int{1, 32} {
				b.Run("arch="+arch+"/size="+size+"/batch="+strconv.Itoa(batch), func(b *testing.B) {
					benchDecode(b, arch, size, batch)
				})
			}
		}
	}
}

func benchDecode(b *testing.B, arch, size string, batch int) {
	cfg, err := ConfigFor(arch, size, 32000)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxPositionEmbeddings = 512
	m, err := Init(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	const prompt = 64
	seqs := make([]Seq, batch)
	for i := range seqs {
		seqs[i] = Seq{Cache: m.NewKVCache(), Tokens: []int32{int32(7 + i)}}
		if _, err := m.Forward(seqs[i].Cache, tokensFor(prompt, cfg.VocabSize, uint64(i)), 0); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		for i := range seqs {
			pos := seqs[i].Cache.Len()
			if pos == cfg.MaxPositionEmbeddings {
				pos = prompt
			}
			seqs[i].Pos = pos
		}
		if _, err := m.ForwardBatch(seqs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkPrefill measures the time to the first token's logits for a
// 1000-token prompt on an empty cache (time to first token, less
// tokenizing and sampling), vocabulary 8192.
func BenchmarkPrefill(b *testing.B) {
	for _, arch := range []string{"llama", "moe"} {
		for _, size := range []string{"tiny", "small"} {
			b.Run("arch="+arch+"/size="+size+"/tokens=1000", func(b *testing.B) {
				benchPrefill(b, arch, size)
			})
		}
	}
}

func benchPrefill(b *testing.B, arch, size string) {
	cfg, err := ConfigFor(arch, size, 8192)
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
