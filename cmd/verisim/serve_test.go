package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/trajectory"
)

// TestServeWithAgent serves a freshly initialised model and runs verisim's
// own agent against it: the policy client gets token ids, logprobs and the
// weights version from the built-in server.
func TestServeWithAgent(t *testing.T) {
	// A real vocabulary, so that the agent's system prompt and tool
	// schemas fit the tiny model's context.
	tok := filepath.Join(t.TempDir(), "tokenizer.json")
	if r := runVerisim(t, nil, "tokenizer", "train", "--vocab", "4096", "--max-bytes", "2000000", "--out", tok); r.code != 0 {
		t.Fatalf("train: %s", r.stderr)
	}
	dir := filepath.Join(t.TempDir(), "tiny")
	if r := runVerisim(t, nil, "model", "init", "--tokenizer", tok, "--out", dir); r.code != 0 {
		t.Fatalf("model init: %s", r.stderr)
	}
	url, stop := startServing(t, "serve", "--model", dir, "--addr", "127.0.0.1:0", "--weights-version", "step-0")

	resp, err := http.Get(url + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", err, resp)
	}
	resp.Body.Close()

	traj := filepath.Join(t.TempDir(), "t.jsonl")
	r := runVerisim(t, nil, "agent", "--model", url, "--yes", "--dir", t.TempDir(), "--max-turns", "1", "--max-tokens", "16", "--trajectory", traj, "say hi")
	if r.code != 0 && r.code != 1 {
		t.Fatalf("agent against the built-in server: exit %d\n%s", r.code, r.stderr)
	}
	trajs, err := trajectory.ReadFile(traj)
	if err != nil || len(trajs) != 1 || len(trajs[0].Turns) == 0 {
		t.Fatalf("trajectory: %v; %d records; agent exit %d\n%s", err, len(trajs), r.code, r.stderr)
	}
	turn := trajs[0].Turns[0]
	if len(turn.PromptTokenIDs) == 0 || len(turn.CompletionTokenIDs) == 0 || len(turn.CompletionLogprobs) != len(turn.CompletionTokenIDs) || turn.WeightsVersion != "step-0" {
		t.Errorf("turn lacks what RL needs: %d prompt ids, %d completion ids, %d logprobs, version %q",
			len(turn.PromptTokenIDs), len(turn.CompletionTokenIDs), len(turn.CompletionLogprobs), turn.WeightsVersion)
	}

	if err := stop(); err != nil {
		t.Errorf("serve after Ctrl-C: %v", err)
	}

	if r := runVerisim(t, nil, "serve", "--model", dir, "--port", "70000"); r.code != exitUsage || !strings.Contains(r.stderr, "--port 70000") {
		t.Errorf("bad port: exit %d, %s", r.code, r.stderr)
	}
	r = runVerisim(t, nil, "serve", "--model", t.TempDir())
	if r.code != exitFailure || !strings.Contains(r.stderr, "tokenizer.json") && !strings.Contains(r.stderr, "config.json") {
		t.Errorf("empty model dir: exit %d, %s", r.code, r.stderr)
	}
}
