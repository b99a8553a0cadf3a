package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/train/run"
	"github.com/verisim/verisim/internal/trajectory"
)

func TestSFTTrajectories(t *testing.T) {
	mdl := microModel(t, 32)
	rec := func(task string, turns ...trajectory.Turn) *trajectory.Trajectory {
		for i := range turns {
			turns[i].Index = i
		}
		return &trajectory.Trajectory{Version: trajectory.Version, TaskID: task, Status: trajectory.StatusOK, Turns: turns, Started: time.Unix(0, 0), Finished: time.Unix(1, 0)}
	}
	var b bytes.Buffer
	w := trajectory.NewWriter(&b)
	for i := range 4 {
		id := int32(10 + i)
		w.Write(rec("t", trajectory.Turn{PromptTokenIDs: []int32{1, 2, id}, CompletionTokenIDs: []int32{id + 20, id + 21}},
			trajectory.Turn{PromptTokenIDs: []int32{1, 2, id, id + 20, id + 21, 5}, CompletionTokenIDs: []int32{id + 30}}))
	}
	good := filepath.Join(t.TempDir(), "good.jsonl")
	os.WriteFile(good, b.Bytes(), 0o644)
	out := filepath.Join(t.TempDir(), "sft")
	r := runVerisim(t, nil, "sft", "--model", mdl, "--data", good, "--out", out, "--epochs", "2", "--batch", "2", "--eval-tasks", "0")
	if r.code != 0 || !strings.Contains(r.stderr, "trained 4 steps, 24 tokens") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if _, err := model.Load(filepath.Join(out, run.CheckpointDir)); err != nil {
		t.Error(err)
	}
	if lines := readMetricLines(t, out); len(lines) != 4 {
		t.Errorf("%d metrics lines, want 4", len(lines))
	}

	// A malformed line is refused, naming it.
	lines := strings.SplitAfter(b.String(), "\n")
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(lines[0]+lines[1]+"{\"version\": 1, \"task_id\": \n"+lines[2]), 0o644)
	noIDs := filepath.Join(t.TempDir(), "noids.jsonl")
	var nb bytes.Buffer
	trajectory.NewWriter(&nb).Write(rec("x", trajectory.Turn{}))
	os.WriteFile(noIDs, []byte(lines[0]+nb.String()), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", bad}, "line 3"},
		{[]string{"--data", noIDs}, "line 2: x/0 turn 0: trajectory has no token ids"},
		{[]string{"--data", good, "--from-solutions"}, "one of --data FILE and --from-solutions"},
	} {
		r := runVerisim(t, nil, append([]string{"sft", "--model", mdl, "--out", filepath.Join(t.TempDir(), "o"), "--eval-tasks", "0"}, tc.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q: %s", tc.args, r.code, exitUsage, tc.want, r.stderr)
		}
	}
}

func TestSFTFromSolutions(t *testing.T) {
	// Three small tasks in the bundled tasks' shape: two to train on, one
	// held out.
	tasks := t.TempDir()
	for i, id := range []string{"fix-a", "fix-b", "fix-c"} {
		files := map[string]string{
			"task.yaml":           fmt.Sprintf("id: %s\ninstruction: make f return %d\nrepo:\n  dir: repo\ngrade:\n  command: sh f.sh\n", id, i),
			"repo/f.sh":           "echo 0\n",
			"solution/solve.sh":   "#!/bin/bash\nset -euo pipefail\ncp \"$SOLUTION_DIR/files/f.sh\" f.sh\nchmod +x f.sh\n",
			"solution/files/f.sh": fmt.Sprintf("echo %d\n", i),
		}
		for name, content := range files {
			p := filepath.Join(tasks, id, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	mdl := microModel(t, 32)
	out := filepath.Join(t.TempDir(), "sft")
	r := runVerisim(t, nil, "sft", "--model", mdl, "--from-solutions", "--tasks", tasks, "--out", out,
		"--epochs", "1", "--batch", "2", "--max-len", "16384", "--eval-tasks", "1", "--eval-samples", "1", "--eval-max-tokens", "2")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"2 training sequences", "1 held-out tasks", "before: 1 samples", "after:  1 samples"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "well-formed tool calls on 1 held-out tasks × 1 samples: before ") {
		t.Errorf("stdout: %q", r.stdout)
	}
	if _, err := model.Load(filepath.Join(out, run.CheckpointDir)); err != nil {
		t.Error(err)
	}
}
