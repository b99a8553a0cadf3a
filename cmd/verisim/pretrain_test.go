package main

import (
	"bufio"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/tokenizer"
	"github.com/verisim/verisim/internal/train/run"
	"github.com/verisim/verisim/internal/train/traintest"
)

// microModel is a model far smaller than the tiny preset, with a context
// long enough for the SFT demonstrations, that trains in seconds.
func microModel(t *testing.T, hidden int) string { return traintest.MicroModel(t, hidden, 16384) }

func goCorpus(t *testing.T, n int) string { return traintest.GoCorpus(t, n) }

// readMetricLines reads metrics.jsonl with the wall-time field removed.
func readMetricLines(t *testing.T, out string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(out, run.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		var m map[string]any
		if err := json.Unmarshal(s.Bytes(), &m); err != nil {
			t.Fatalf("metrics line %q: %v", s.Text(), err)
		}
		delete(m, "seconds")
		b, _ := json.Marshal(m)
		lines = append(lines, string(b))
	}
	return lines
}

func TestPretrain(t *testing.T) {
	mdl := microModel(t, 32)
	corpus := goCorpus(t, 12)
	common := []string{"pretrain", "--model", mdl, "--corpus", corpus, "--seq-len", "16", "--batch", "2",
		"--eval-every", "3", "--eval-seqs", "2", "--held-out", "0.2", "--decay-steps", "6", "--warmup", "1"}
	pretrain := func(out string, extra ...string) result {
		return runVerisim(t, nil, append(append(append([]string{}, common...), "--out", out), extra...)...)
	}

	full := filepath.Join(t.TempDir(), "full")
	r := pretrain(full, "--steps", "6")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "unigram baseline") || !strings.Contains(r.stderr, "trained 6 steps") {
		t.Errorf("stderr lacks the summary:\n%s", r.stderr)
	}
	lines := readMetricLines(t, full)
	if len(lines) != 7 { // step 0 (held-out only), then one per step
		t.Fatalf("%d metrics lines, want 7:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	var last run.Metric
	json.Unmarshal([]byte(lines[6]), &last)
	if last.Step != 6 || last.Loss == nil || last.HeldOutLoss == nil || last.Tokens != 6*2*16 {
		t.Errorf("last metrics line %s", lines[6])
	}
	f, err := os.Open(filepath.Join(full, run.LossPlotFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(f); err != nil {
		t.Errorf("loss.png: %v", err)
	}
	f.Close()
	ckpt := filepath.Join(full, run.CheckpointDir)
	if _, err := model.Load(ckpt); err != nil {
		t.Errorf("checkpoint: %v", err)
	}
	if _, err := tokenizer.Load(filepath.Join(ckpt, run.TokenizerFile)); err != nil {
		t.Errorf("checkpoint tokenizer: %v", err)
	}

	// 3 steps, then 3 more resumed, draw the same curve as 6 at once.
	split := filepath.Join(t.TempDir(), "split")
	if r := pretrain(split, "--steps", "3"); r.code != 0 {
		t.Fatalf("first half: exit %d: %s", r.code, r.stderr)
	}
	if r := pretrain(split, "--steps", "6", "--resume"); r.code != 0 || !strings.Contains(r.stderr, "resumed at step 3") {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	if got := readMetricLines(t, split); strings.Join(got, "\n") != strings.Join(lines, "\n") {
		t.Errorf("resumed run's metrics differ:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(lines, "\n"))
	}

	// Bad input.
	before, _ := os.ReadFile(filepath.Join(full, run.MetricsFile))
	other := microModel(t, 16)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"exists", append(append([]string{}, common...), "--out", full), "already holds a checkpoint"},
		{"other model", []string{"pretrain", "--model", other, "--corpus", corpus, "--seq-len", "16", "--out", full, "--resume", "--steps", "9"}, "different model"},
		{"other settings", append(append([]string{}, common...), "--out", full, "--resume", "--steps", "9", "--seed", "2"), "seed was 1, now 2"},
		{"empty corpus", []string{"pretrain", "--model", mdl, "--corpus", t.TempDir(), "--out", filepath.Join(t.TempDir(), "x")}, "no readable text files"},
		{"no model", []string{"pretrain", "--model", corpus, "--out", filepath.Join(t.TempDir(), "y")}, "--model"},
	} {
		r := runVerisim(t, nil, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: exit %d, want %d with %q: %s", tc.name, r.code, exitUsage, tc.want, r.stderr)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(full, run.MetricsFile)); string(after) != string(before) {
		t.Error("a refused run changed metrics.jsonl")
	}
}
