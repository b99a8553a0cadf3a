package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// goSource returns about n bytes of standard library source.
func goSource(b *testing.B, n int) []byte {
	b.Helper()
	var out []byte
	root := filepath.Join(GoSource(), "net", "http")
	ents, err := os.ReadDir(root)
	if err != nil {
		b.Skipf("no Go source at %s: %v", root, err)
	}
	for _, e := range ents {
		if len(out) >= n || filepath.Ext(e.Name()) != ".go" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data...)
	}
	return out[:min(n, len(out))]
}

func BenchmarkEncode(b *testing.B) {
	tok := goTokenizer(b)
	src := goSource(b, 1<<20)
	b.SetBytes(int64(len(src)))
	var ids int
	for b.Loop() {
		ids = len(tok.EncodeBytes(src))
	}
	b.ReportMetric(float64(len(src))/float64(ids), "bytes/token")
}

func BenchmarkTrain(b *testing.B) {
	if testing.Short() {
		b.Skip("trains on 4 MB of GOROOT/src")
	}
	for _, size := range []int{8192} {
		b.Run("vocab=8192/corpus=4MB", func(b *testing.B) {
			for b.Loop() {
				start := time.Now()
				tok, err := TrainOnDir(b.Context(), "", nil, size, DefaultSpecial(), 4<<20)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(time.Since(start).Seconds(), "s/train")
				b.ReportMetric(float64(tok.VocabSize()), "vocab")
			}
		})
	}
}
