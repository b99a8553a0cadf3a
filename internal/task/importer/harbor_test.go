package importer

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/task"
)

// harborTask writes a Harbor task directory laid out as `harbor tasks init`
// makes them, with files overridden or removed (empty content) by extra.
func harborTask(t *testing.T, extra map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "csv-summary")
	files := map[string]string{
		"instruction.md": "# CSV summary\n\nWrite the row count of /app/data.csv to /app/count.txt.\n",
		"task.toml": `version = "1.0"

[metadata]
author_name = "Grace Hopper"
author_email = "grace@example.com"
difficulty = "easy"
category = "data-processing"
tags = ["csv", "bash"]

[verifier]
timeout_sec = 120.0

[agent]
timeout_sec = 900.0

[environment]
build_timeout_sec = 600.0
cpus = 1
memory_mb = 2048
storage_mb = 10240
`,
		"environment/Dockerfile": "# syntax=docker/dockerfile:1\nFROM ubuntu:24.04\n\n# Where the agent works.\nWORKDIR /app\nENV LANG=C.UTF-8 \\\n    TZ=UTC\n",
		"tests/test.sh":          "#!/bin/bash\ncd /tests && python3 -m pytest test_outputs.py && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
		"tests/test_outputs.py":  "def test_count():\n    assert open('/app/count.txt').read().strip() == '3'\n",
		"solution/solve.sh":      "#!/bin/bash\nwc -l < /app/data.csv > /app/count.txt\n",
		"solution/notes.txt":     "the oracle's notes\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	for name, content := range files {
		if content == "" {
			continue
		}
		writeFiles(t, dir, map[string]string{name: content})
		if strings.HasSuffix(name, ".sh") {
			os.Chmod(filepath.Join(dir, name), 0o755)
		}
	}
	return dir
}

func TestHarbor(t *testing.T) {
	src := harborTask(t, nil)
	out := t.TempDir()
	dir, err := Harbor(t.Context(), src, out)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "csv-summary"); dir != want {
		t.Fatalf("dir = %s, want %s", dir, want)
	}
	tk, err := task.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# CSV summary\n\nWrite the row count of /app/data.csv to /app/count.txt."; tk.Instruction != want {
		t.Errorf("instruction = %q, want %q", tk.Instruction, want)
	}
	if want := (task.Repo{Dir: "repo", Name: "app"}); tk.Repo != want {
		t.Errorf("repo = %+v, want %+v", tk.Repo, want)
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "repo")); err != nil || len(entries) != 0 {
		t.Errorf("repo/ should be an empty directory: %v, %v", entries, err)
	}
	wantGrade := task.Grade{
		Command: "mkdir -p /logs/verifier && bash /tests/test.sh", Format: task.FormatExit, Reward: task.RewardPass,
		Timeout: 2 * time.Minute, TestsTarget: "/tests", RewardFile: "/logs/verifier/reward.txt", User: "root",
	}
	if !reflect.DeepEqual(tk.Grade, wantGrade) {
		t.Errorf("grade = %+v\nwant %+v", tk.Grade, wantGrade)
	}
	if tk.Timeouts.Agent != 15*time.Minute {
		t.Errorf("agent timeout = %v, want 15m", tk.Timeouts.Agent)
	}
	if tk.LimitsS != "memory=2048m,cpus=1,disk=10240m" || tk.Limits.MemoryBytes != 2<<30 || tk.Limits.DiskBytes != 10<<30 || tk.Limits.CPUs != 1 {
		t.Errorf("limits = %q (%+v)", tk.LimitsS, tk.Limits)
	}
	if want := []string{"csv", "bash"}; !reflect.DeepEqual(tk.Tags, want) {
		t.Errorf("tags = %q, want %q", tk.Tags, want)
	}
	wantMeta := map[string]string{
		"source": "harbor", "harbor_task": "csv-summary", "image": "ubuntu:24.04",
		"author_name": "Grace Hopper", "author_email": "grace@example.com", "difficulty": "easy", "category": "data-processing",
	}
	if !reflect.DeepEqual(tk.Meta, wantMeta) {
		t.Errorf("metadata = %v\nwant %v", tk.Meta, wantMeta)
	}
	for _, f := range []string{"tests/test.sh", "tests/test_outputs.py", "solution/solve.sh", "solution/notes.txt"} {
		if got, want := readFile(t, filepath.Join(dir, f)), readFile(t, filepath.Join(src, f)); got != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	for _, f := range []string{"tests/test.sh", "solution/solve.sh"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode()&0o100 == 0 {
			t.Errorf("%s lost its executable bit: %v %v", f, fi.Mode(), err)
		}
	}
	if !tk.HasSolution() {
		t.Error("HasSolution = false")
	}
}

func TestHarborNewSchema(t *testing.T) {
	src := harborTask(t, map[string]string{
		"task.toml": `schema_version = "1.1"

[task]
name = "acme/Log-Rotate"
description = "Rotate the logs"
authors = [{ name = "Ada Lovelace", email = "ada@example.com" }, { name = "Bob" }]
keywords = ["logs", "sysadmin"]

[metadata]
difficulty_explanation = "needs care with permissions"
category = "system-administration"
source = "internal"
extra = { reviewed = true, reviewers = ["x", "y"] }

[verifier]
timeout_sec = 90.0
env = { API_KEY = "sk-test 123", MODE = "strict" }
user = "root"

[agent]
user = "agent"

[environment]
cpus = 2
memory = "4G"
storage = "10G"
allow_internet = false
`,
		"environment/Dockerfile": "FROM --platform=linux/amd64 python:3.12-slim AS base\nWORKDIR /srv\nWORKDIR logs\nCMD [\"bash\"]\n",
	})
	dir, err := Harbor(t.Context(), src, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tk.ID != "log-rotate" || tk.Repo.Name != "logs" {
		t.Errorf("id, repo name = %q, %q; want log-rotate, logs", tk.ID, tk.Repo.Name)
	}
	if want := "mkdir -p /logs/verifier && API_KEY='sk-test 123' MODE=strict bash /tests/test.sh"; tk.Grade.Command != want {
		t.Errorf("command = %q, want %q", tk.Grade.Command, want)
	}
	// Harbor's default, not verisim's, when task.toml does not say.
	if tk.Grade.Timeout != 90*time.Second || tk.Timeouts.Agent != 10*time.Minute {
		t.Errorf("timeouts = %v, %v; want 1m30s, 10m", tk.Grade.Timeout, tk.Timeouts.Agent)
	}
	if tk.LimitsS != "memory=4096m,cpus=2,disk=10240m" {
		t.Errorf("limits = %q", tk.LimitsS)
	}
	if want := []string{"logs", "sysadmin"}; !reflect.DeepEqual(tk.Tags, want) {
		t.Errorf("tags = %q, want %q", tk.Tags, want)
	}
	for k, v := range map[string]string{
		"source": "harbor", "harbor_source": "internal", "harbor_task": "acme/Log-Rotate", "description": "Rotate the logs",
		"authors": "Ada Lovelace <ada@example.com>, Bob", "image": "python:3.12-slim", "allow_internet": "false",
		"extra.reviewed": "true", "extra.reviewers": "x, y", "category": "system-administration",
	} {
		if tk.Meta[k] != v {
			t.Errorf("metadata %s = %q, want %q", k, tk.Meta[k], v)
		}
	}
}

func TestHarborErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		is    error
		want  []string
	}{
		{"RUN", map[string]string{"environment/Dockerfile": "FROM ubuntu:24.04\nENV A=1 \\\n    B=2\nRUN apt-get update && apt-get install -y python3 python3-pip curl git jq && rm -rf /var/lib/apt/lists/*\nWORKDIR /app\n"},
			ErrNeedsImageBuild, []string{"Dockerfile:4: RUN apt-get update", "needs an image build", "verisim runs tasks on its own images"}},
		{"COPY after continued comment", map[string]string{"environment/Dockerfile": "FROM ubuntu\nLABEL a=b \\\n# a comment inside\n    c=d\ncopy . /app\n"},
			ErrNeedsImageBuild, []string{"Dockerfile:5: copy . /app"}},
		{"escape directive", map[string]string{"environment/Dockerfile": "# escape=`\nFROM mcr.microsoft.com/windows\nENV A=1 `\n    B=2\nADD x y\n"},
			ErrNeedsImageBuild, []string{"Dockerfile:5: ADD x y"}},
		{"compose", map[string]string{"environment/docker-compose.yaml": "services: {main: {build: .}}\n"},
			ErrNeedsImageBuild, []string{"docker-compose.yaml", "multi-container"}},
		{"no instruction", map[string]string{"instruction.md": ""}, nil, []string{"instruction.md: missing"}},
		{"no test.sh", map[string]string{"tests/test.sh": ""}, nil, []string{filepath.Join("tests", "test.sh") + ": missing"}},
		{"no task.toml", map[string]string{"task.toml": ""}, nil, []string{"task.toml: missing"}},
		{"bad toml", map[string]string{"task.toml": "[environment]\ncpus = \"two\"\n"}, nil, []string{"task.toml", "line 2", "cpus"}},
		{"bad memory", map[string]string{"task.toml": "[environment]\nmemory = \"lots\"\n"}, nil, []string{"memory", `"lots"`}},
		{"gpus", map[string]string{"task.toml": "[environment]\ngpus = 1\n"}, nil, []string{"gpus"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := harborTask(t, c.files)
			out := t.TempDir()
			_, err := Harbor(t.Context(), src, out)
			if err == nil {
				t.Fatal("no error")
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q is not %v", err, c.is)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("a failed import left %d entries in out", len(entries))
			}
		})
	}
}

// FuzzParseDockerfile checks that a Dockerfile that needs no build still
// needs none with metadata appended, and needs one, at the right line,
// with a RUN appended.
func FuzzParseDockerfile(f *testing.F) {
	f.Add("FROM ubuntu\nWORKDIR /app\n")
	f.Add("# escape=`\nFROM x\nENV a=b `\n  c=d\n")
	f.Add("FROM x \\\n# c\n\n  AS y\n")
	f.Add("RUN true\n")
	f.Fuzz(func(t *testing.T, content string) {
		df, err := parseDockerfile("Dockerfile", []byte(content))
		if err != nil {
			if !errors.Is(err, ErrNeedsImageBuild) {
				t.Fatalf("error %v is not ErrNeedsImageBuild", err)
			}
			return
		}
		if df.workspaceName() == "" {
			t.Fatal("empty workspace name")
		}
		// An escape at the end of the last instruction continues it
		// into whatever is appended, blank lines or not.
		content = strings.ReplaceAll(content, "\r\n", "\n")
		for _, l := range slices.Backward(strings.Split(content, "\n")) {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				if strings.HasSuffix(l, "\\") || strings.HasSuffix(l, "`") {
					return
				}
				break
			}
		}
		content += "\n\n"
		lines := strings.Count(content, "\n")
		_, err = parseDockerfile("Dockerfile", []byte(content+"LABEL x=y\n"))
		if err != nil {
			t.Fatalf("LABEL appended to %q: %v", content, err)
		}
		_, err = parseDockerfile("Dockerfile", []byte(content+"RUN make\n"))
		if want := "Dockerfile:" + strconv.Itoa(lines+1) + ": RUN make"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("RUN appended to %q: err = %v, want one naming %q", content, err, want)
		}
	})
}
