package data

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/engine/tokenizer"
	"github.com/verisim/verisim/internal/train"
)

// testTokenizer trains a small tokenizer on Go-like text.
func testTokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	src := strings.Repeat("package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n", 20)
	tok, err := tokenizer.Train(t.Context(), strings.NewReader(src), 300, tokenizer.DefaultSpecial())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// writeCorpus writes files (relative path → content) under a new directory.
func writeCorpus(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func goFiles(n int) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("pkg%d/f%d.go", i%5, i)] = fmt.Sprintf("package pkg%d\n\n// F%d returns %d.\nfunc F%d() int { return %d }\n", i%5, i, i*i, i, i*i)
	}
	return files
}

func TestOpenCorpus(t *testing.T) {
	files := goFiles(40)
	files["bin/blob.go"] = "package x\x00\x01\x02"     // binary: skipped
	files["bad/latin1.go"] = "package x // caf\xe9\n"  // not UTF-8: skipped
	files["x/testdata/golden.go"] = "package golden\n" // testdata: skipped
	files[".git/config.go"] = "package hidden\n"       // hidden: skipped
	files["README.md"] = "# not Go\n"                  // other extension
	dir := writeCorpus(t, files)
	tok := testTokenizer(t)
	c, err := OpenCorpus(t.Context(), dir, tok, CorpusOptions{SeqLen: 16, Exts: []string{".go"}, HeldOutFraction: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.TrainFiles) + len(c.HeldOutFiles); got != 40 {
		t.Errorf("%d files read, want 40 (train %v held out %v)", got, c.TrainFiles, c.HeldOutFiles)
	}
	if c.Skipped != 2 {
		t.Errorf("skipped %d files, want 2 (binary, latin-1)", c.Skipped)
	}
	if len(c.HeldOutFiles) == 0 || len(c.HeldOutFiles) > 12 {
		t.Errorf("%d held-out files of 40 at 10%%", len(c.HeldOutFiles))
	}
	for _, f := range c.HeldOutFiles {
		if slices.Contains(c.TrainFiles, f) {
			t.Errorf("%s is in both splits", f)
		}
	}
	// The streams are the files' tokens, each followed by end-of-text.
	eot, _ := tok.Special(tokenizer.EndOfText)
	first := tok.Encode(files[c.TrainFiles[0]])
	if !slices.Equal(c.TrainIDs[:len(first)], first) || c.TrainIDs[len(first)] != eot {
		t.Errorf("training stream does not start with %s and end-of-text", c.TrainFiles[0])
	}
	if n := c.NumSequences(); n != (len(c.TrainIDs)-1)/16 || len(c.Sequence(n-1)) != 17 {
		t.Errorf("%d sequences of %d tokens from %d tokens", n, len(c.Sequence(n-1)), len(c.TrainIDs))
	}
	// Consecutive sequences overlap by one token, so each token is predicted once.
	if c.Sequence(1)[0] != c.Sequence(0)[16] {
		t.Error("sequences do not overlap by one token")
	}
	for _, d := range c.HeldOut() {
		if len(d.Tokens) < 2 || len(d.Tokens) > 17 {
			t.Errorf("held-out sequence of %d tokens", len(d.Tokens))
		}
	}
}

// TestSplitStable checks that a file's side of the split depends on its
// path alone: adding files moves no existing file across.
func TestSplitStable(t *testing.T) {
	tok := testTokenizer(t)
	small := goFiles(60)
	big := goFiles(200)
	a, err := OpenCorpus(t.Context(), writeCorpus(t, small), tok, CorpusOptions{SeqLen: 8, HeldOutFraction: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenCorpus(t.Context(), writeCorpus(t, big), tok, CorpusOptions{SeqLen: 8, HeldOutFraction: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range a.HeldOutFiles {
		if !slices.Contains(b.HeldOutFiles, f) {
			t.Errorf("%s held out of 60 files but trained on among 200", f)
		}
	}
	for _, f := range a.TrainFiles {
		if slices.Contains(b.HeldOutFiles, f) {
			t.Errorf("%s trained on among 60 files but held out of 200", f)
		}
	}
	if len(b.HeldOutFiles) < 5 || len(b.HeldOutFiles) > 40 {
		t.Errorf("%d of 200 files held out at 10%%", len(b.HeldOutFiles))
	}
	// Opening the same tree twice gives the same corpus.
	a2, err := OpenCorpus(t.Context(), writeCorpus(t, small), tok, CorpusOptions{SeqLen: 8, HeldOutFraction: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if a.Fingerprint() != a2.Fingerprint() {
		t.Error("the same files give different fingerprints")
	}
}

func TestOpenCorpusCaps(t *testing.T) {
	tok := testTokenizer(t)
	dir := writeCorpus(t, goFiles(100))
	c, err := OpenCorpus(t.Context(), dir, tok, CorpusOptions{SeqLen: 8, MaxFiles: 30})
	if err != nil {
		t.Fatal(err)
	}
	files := append(slices.Clone(c.TrainFiles), c.HeldOutFiles...)
	if len(files) != 30 {
		t.Fatalf("%d files with --max-files 30", len(files))
	}
	// The sample is spread over the tree, not its first directory.
	dirs := map[string]bool{}
	for _, f := range files {
		dirs[filepath.Dir(f)] = true
	}
	if len(dirs) < 3 {
		t.Errorf("capped sample covers directories %v only", dirs)
	}
	c2, err := OpenCorpus(t.Context(), dir, tok, CorpusOptions{SeqLen: 8, MaxBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if c2.Bytes < 1000 || c2.Bytes > 1100 {
		t.Errorf("read %d bytes with a budget of 1000 (files are ~50 bytes)", c2.Bytes)
	}
}

func TestOpenCorpusErrors(t *testing.T) {
	tok := testTokenizer(t)
	for _, tc := range []struct {
		name  string
		files map[string]string
		opts  CorpusOptions
		want  []string
	}{
		{"no files", map[string]string{"a.txt": "text"}, CorpusOptions{SeqLen: 8, Exts: []string{".go"}}, []string{"no readable text files ending in .go"}},
		{"binary only", map[string]string{"a.go": "\x00\x00", "b.go": "\xff\xfe"}, CorpusOptions{SeqLen: 8}, []string{"no readable text files", "2 skipped"}},
		{"one file", map[string]string{"a.go": "package a\n"}, CorpusOptions{SeqLen: 8}, []string{"only one readable file (a.go)"}},
		{"too few tokens", goFiles(3), CorpusOptions{SeqLen: 4096}, []string{"training tokens in", "too few for one sequence of 4097"}},
		{"bad seq len", goFiles(3), CorpusOptions{SeqLen: 0}, []string{"sequence length 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeCorpus(t, tc.files)
			_, err := OpenCorpus(t.Context(), dir, tok, tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, dir) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := OpenCorpus(t.Context(), filepath.Join(t.TempDir(), "missing"), tok, CorpusOptions{SeqLen: 8}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing directory: %v", err)
	}
}

func TestUnigramCrossEntropy(t *testing.T) {
	// Vocabulary of 4; fit counts: 0→3, 1→1, 2→0, 3→0 (4 tokens), so with
	// add-one smoothing p = (4, 2, 1, 1)/8.
	fit := []int32{0, 0, 0, 1}
	eval := []train.Datum{
		{Tokens: []int32{3, 0, 1}}, // position 0 is not predicted
		{Tokens: []int32{9, 2}},
	}
	want := -(math.Log(4.0/8) + math.Log(2.0/8) + math.Log(1.0/8)) / 3
	if got := UnigramCrossEntropy(fit, eval, 4); math.Abs(got-want) > 1e-12 {
		t.Errorf("cross-entropy %v, want %v", got, want)
	}
	// A corpus's baseline lies between 0 and the uniform model's log V.
	c, err := OpenCorpus(t.Context(), writeCorpus(t, goFiles(50)), testTokenizer(t), CorpusOptions{SeqLen: 8})
	if err != nil {
		t.Fatal(err)
	}
	if b := c.UnigramBaseline(); b <= 0 || b >= math.Log(300) {
		t.Errorf("baseline %v nats, want in (0, log 300)", b)
	}
}

// BenchmarkOpenCorpus tokenises the local Go installation's source tree
// (capped by -benchtime=1x and the file cap below); it reports tokens/s.
func BenchmarkOpenCorpus(b *testing.B) {
	dir := tokenizer.GoSource()
	if _, err := os.Stat(dir); err != nil {
		b.Skip("no Go source tree at", dir)
	}
	tok := testTokenizer(b)
	for _, files := range []int{500, 2000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			var c *Corpus
			start := time.Now()
			for b.Loop() {
				var err error
				c, err = OpenCorpus(b.Context(), dir, tok, CorpusOptions{SeqLen: 256, Exts: []string{".go"}, MaxFiles: files})
				if err != nil {
					b.Fatal(err)
				}
			}
			sec := time.Since(start).Seconds() / float64(b.N)
			b.ReportMetric(float64(len(c.TrainIDs)+len(c.HeldOutIDs))/sec, "tokens/s")
			b.ReportMetric(float64(c.Bytes)/sec/1e6, "MB/s")
		})
	}
}
