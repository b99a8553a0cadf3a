package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/tokenizer"
)

func TestTokenizerTrain(t *testing.T) {
	corpus := t.TempDir()
	src := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n"
	for i := range 20 {
		os.WriteFile(filepath.Join(corpus, strings.Repeat("a", i+1)+".go"), []byte(strings.Repeat(src, i+1)), 0o644)
	}
	out := filepath.Join(t.TempDir(), "tokenizer.json")
	r := runVerisim(t, nil, "tokenizer", "train", "--corpus", corpus, "--vocab", "300", "--out", out)
	if r.code != 0 || !strings.Contains(r.stderr, "wrote "+out) {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	tok, err := tokenizer.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() > 300 || tok.VocabSize() <= 256+len(tokenizer.DefaultSpecial()) {
		t.Errorf("vocabulary of %d tokens, want more than the bytes and specials and at most 300", tok.VocabSize())
	}
	ids := tok.Encode(src)
	if back, err := tok.DecodeString(ids); err != nil || back != src || len(ids) >= len(src) {
		t.Errorf("round trip %q (%v) in %d tokens for %d bytes", back, err, len(ids), len(src))
	}
	for _, bad := range [][]string{
		{"tokenizer", "train", "--out", out, "--vocab", "10"},
		{"tokenizer", "train", "--out", out, "--corpus", filepath.Join(corpus, "missing")},
		{"tokenizer", "train", "--corpus", corpus},
	} {
		if r := runVerisim(t, nil, bad...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", bad, r.code, exitUsage, r.stderr)
		}
	}
}

func TestModelInit(t *testing.T) {
	corpus := t.TempDir()
	os.WriteFile(filepath.Join(corpus, "a.go"), []byte(strings.Repeat("package main\n\nfunc main() { println(\"hi\") }\n", 50)), 0o644)
	tok := filepath.Join(t.TempDir(), "tokenizer.json")
	if r := runVerisim(t, nil, "tokenizer", "train", "--corpus", corpus, "--vocab", "300", "--out", tok); r.code != 0 {
		t.Fatalf("train: %s", r.stderr)
	}
	out := filepath.Join(t.TempDir(), "tiny")
	r := runVerisim(t, nil, "model", "init", "--tokenizer", tok, "--size", "tiny", "--arch", "qwen2", "--dtype", "f32", "--out", out)
	if r.code != 0 || !strings.Contains(r.stderr, "tiny qwen2 model") {
		t.Fatalf("model init: exit %d %s", r.code, r.stderr)
	}
	m, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.Load(filepath.Join(out, "tokenizer.json"))
	if err != nil || m.Config.VocabSize != tk.VocabSize() {
		t.Fatalf("vocabulary: model %d, tokenizer %d (%v)", m.Config.VocabSize, tk.VocabSize(), err)
	}
	cache := m.NewKVCache()
	ids := tk.Encode("func main")
	logits, err := m.Forward(cache, ids, 0)
	if err != nil || len(logits) != len(ids)*m.Config.VocabSize {
		t.Fatalf("forward: %d logits, %v", len(logits), err)
	}
	moe := filepath.Join(t.TempDir(), "moe")
	if r := runVerisim(t, nil, "model", "init", "--tokenizer", tok, "--size", "tiny", "--arch", "moe", "--out", moe); r.code != 0 || !strings.Contains(r.stderr, "tiny moe model") {
		t.Fatalf("model init --arch moe: exit %d %s", r.code, r.stderr)
	}
	mm, err := model.Load(moe)
	if err != nil {
		t.Fatal(err)
	}
	if !mm.Config.MoE() || mm.Config.NumLocalExperts != 8 {
		t.Errorf("--arch moe wrote %+v", mm.Config)
	}
	mc := mm.NewKVCache()
	if _, err := mm.Forward(mc, ids, 0); err != nil || len(mc.Routes(0, len(ids))[0]) != mm.Config.NumHiddenLayers*2 {
		t.Fatalf("moe forward: %v", err)
	}
	for _, bad := range [][]string{
		{"model", "init", "--tokenizer", tok, "--out", out},                                   // exists
		{"model", "init", "--tokenizer", tok, "--out", t.TempDir() + "/x", "--size", "huge"},  // unknown size
		{"model", "init", "--tokenizer", tok, "--out", t.TempDir() + "/y", "--arch", "gpt2"},  // unknown arch
		{"model", "init", "--tokenizer", tok, "--out", t.TempDir() + "/z", "--dtype", "int8"}, // dtype
		{"model", "init", "--tokenizer", filepath.Join(corpus, "a.go"), "--out", t.TempDir() + "/w"},
	} {
		if r := runVerisim(t, nil, bad...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", bad, r.code, exitUsage, r.stderr)
		}
	}
}
