// Package traintest makes the small models and corpora that tests of
// training runs use, so that the run package and the commands built on it
// test against the same fixtures.
package traintest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/safetensors"
	"github.com/verisim/verisim/internal/engine/tokenizer"
)

// MicroModel writes a two-layer Llama model of width hidden and context
// maxPos, with a tokenizer.json trained on Go text, to a fresh directory
// and returns it: small enough that a test trains it in seconds.
func MicroModel(t testing.TB, hidden, maxPos int) string {
	t.Helper()
	src := strings.Repeat("package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n", 20)
	tok, err := tokenizer.Train(t.Context(), strings.NewReader(src), 300, tokenizer.DefaultSpecial())
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.Config{
		Architectures: []string{model.ArchLlama}, ModelType: "llama",
		VocabSize: tok.VocabSize(), HiddenSize: hidden, IntermediateSize: 2 * hidden,
		NumHiddenLayers: 2, NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: hidden / 2,
		MaxPositionEmbeddings: maxPos, RMSNormEps: 1e-5, RopeTheta: 10000, TieWordEmbeddings: true,
		HiddenAct: "silu", TorchDType: "float32",
	}
	m, err := model.Init(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "micro")
	if err := m.Save(dir, safetensors.F32); err != nil {
		t.Fatal(err)
	}
	if err := tok.Save(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// GoCorpus writes n small Go files to a fresh directory and returns it.
func GoCorpus(t testing.TB, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		src := fmt.Sprintf("package p%d\n\n// F%d returns %d.\nfunc F%d() int {\n\tfmt.Println(\"hello\", %d)\n\treturn %d\n}\n", i, i, i*7, i, i, i*7)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.go", i)), []byte(strings.Repeat(src, 3)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
