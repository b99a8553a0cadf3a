package generate

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/tokenizer"
)

const toyCorpus = `the quick brown fox jumps over the lazy dog.
func main() { fmt.Println("hello, world") }
<|im_start|>user
what is the weather in paris?<|im_end|>
<|im_start|>assistant
it is sunny in paris today.<|im_end|>
`

var (
	toyOnce sync.Once
	toyTok  *tokenizer.Tokenizer
	toyErr  error
)

// testTokenizer is a tokenizer trained on a toy corpus, with verisim's
// special tokens.
func testTokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	toyOnce.Do(func() {
		toyTok, toyErr = tokenizer.Train(context.Background(), strings.NewReader(strings.Repeat(toyCorpus, 4)), 320, tokenizer.DefaultSpecial())
	})
	if toyErr != nil {
		t.Fatal(toyErr)
	}
	return toyTok
}

// testModel is a 2-layer Qwen2 model over the toy tokenizer's vocabulary.
// Its weights are scaled up from Init's 0.02 so that logits differ clearly
// between tokens and greedy choices are not decided by rounding.
func testModel(t testing.TB, maxPos int) *model.Model {
	t.Helper()
	tok := testTokenizer(t)
	cfg, err := model.ConfigFor("qwen2", "tiny", tok.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumHiddenLayers = 32, 64, 2
	cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim = 4, 2, 8
	cfg.MaxPositionEmbeddings = maxPos
	m, err := model.Init(cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	scale := func(w []float32, f float32) {
		for i := range w {
			w[i] *= f
		}
	}
	scale(m.Embed, 50) // LMHead is tied to it
	for _, l := range m.Layers {
		for _, w := range [][]float32{l.Q, l.K, l.V, l.O, l.Gate, l.Up, l.Down} {
			scale(w, 10)
		}
	}
	return m
}

func testPrompt(t testing.TB) []int32 {
	return testTokenizer(t).Encode("<|im_start|>user\nwhat is the weather?<|im_end|>\n<|im_start|>assistant\n")
}

// fullLogits runs tokens through m in one Forward call on a fresh cache.
func fullLogits(t testing.TB, m *model.Model, tokens []int32) [][]float32 {
	t.Helper()
	flat, err := m.Forward(m.NewKVCache(), tokens, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := m.Config.VocabSize
	rows := make([][]float32, len(tokens))
	for i := range rows {
		rows[i] = flat[i*v : (i+1)*v]
	}
	return rows
}

func seed(s uint64) *uint64 { return &s }
