package task

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const goodYAML = `id: fix-parse
instruction: |
  ParseDuration("1h30m") fails
repo:
  dir: repo
  name: timeparse
setup:
  - go build ./...
grade:
  command: go test -v ./...
  format: go
  reward: fraction
  timeout: 2m
  protect: ["**/*_test.go"]
  tests: [TestParse]
timeouts:
  agent: 10m
limits: memory=2g,pids=512
tags: [go, bugfix]
metadata:
  source: bundled
`

func writeTask(t *testing.T, dir, yaml string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "repo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "repo", "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoad(t *testing.T) {
	dir := writeTask(t, t.TempDir(), goodYAML)
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Task{
		ID: "fix-parse", Instruction: `ParseDuration("1h30m") fails`,
		Repo:  Repo{Dir: "repo", Name: "timeparse"},
		Setup: []string{"go build ./..."},
		Grade: Grade{Command: "go test -v ./...", Format: FormatGo, Reward: RewardFraction, Timeout: 2 * time.Minute,
			Protect: []string{"**/*_test.go"}, Tests: []string{"TestParse"}},
		Timeouts: Timeouts{Setup: DefaultSetupTimeout, Agent: 10 * time.Minute},
		LimitsS:  "memory=2g,pids=512",
		Tags:     []string{"go", "bugfix"},
		Meta:     map[string]string{"source": "bundled"},
		Dir:      dir,
	}
	want.Limits.MemoryBytes, want.Limits.PIDs = 2<<30, 512
	if !reflect.DeepEqual(*tk, want) {
		t.Fatalf("got  %+v\nwant %+v", *tk, want)
	}
	// Encode and parse again: the same task.
	data, err := Encode(tk)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("again", data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	again.Dir = dir
	if !reflect.DeepEqual(again, tk) {
		t.Fatalf("round trip:\n%s\ngot  %+v\nwant %+v", data, again, tk)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // substrings, each in the error
	}{
		{"empty", "", []string{"task.yaml:1: the file is empty"}},
		{"syntax", "id: [a\n", []string{"task.yaml:", "invalid YAML"}},
		{"not a mapping", "- a\n", []string{"want a mapping of task fields"}},
		{"unknown field", strings.Replace(goodYAML, "  timeout: 2m", "  timout: 2m", 1), []string{`task.yaml:13: field "grade.timout": unknown field; did you mean "timeout"?`}},
		{"unknown field far off", goodYAML + "owner: me\n", []string{`task.yaml:22: field "owner": unknown field; known fields here: grade, id,`}},
		{"bad format", strings.Replace(goodYAML, "format: go", "format: junit", 1), []string{`task.yaml:11: field "grade.format": unknown format "junit"`}},
		{"bad duration", strings.Replace(goodYAML, "agent: 10m", "agent: soon", 1), []string{`task.yaml:17: field "timeouts.agent": "soon" is not a positive duration`}},
		{"bad id", strings.Replace(goodYAML, "id: fix-parse", "id: Fix Parse", 1), []string{`task.yaml:1: field "id"`}},
		{"missing id and command", strings.NewReplacer("id: fix-parse\n", "", "  command: go test -v ./...\n", "").Replace(goodYAML), []string{`field "id": missing`, `field "grade.command": missing`}},
		{"two sources", strings.Replace(goodYAML, "  dir: repo", "  dir: repo\n  archive: r.tgz", 1), []string{`field "repo": give only one`}},
		{"git without commit", strings.Replace(goodYAML, "  dir: repo", "  git: https://example.com/r.git", 1), []string{`field "repo.commit": missing`}},
		{"list not string", strings.Replace(goodYAML, "instruction: |\n  ParseDuration(\"1h30m\") fails", "instruction: [a, b]", 1), []string{`field "instruction": want a string, got a list`}},
		{"bad limits", strings.Replace(goodYAML, "pids=512", "gpus=1", 1), []string{`field "limits": unknown limit "gpus"`}},
		{"twice", goodYAML + "id: again\n", []string{`field "id": given twice`}},
		{"missing dir", strings.Replace(goodYAML, "dir: repo", "dir: nowhere", 1), []string{`field "repo.dir": nowhere does not exist`}},
		{"dir outside", strings.Replace(goodYAML, "dir: repo", "dir: ../repo", 1), []string{`field "repo.dir": "../repo" must be a path inside`}},
		{"reward file with go", strings.Replace(goodYAML, "  tests: [TestParse]", "  reward_file: /r.txt", 1), []string{`field "grade.reward_file": only goes with format exit`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTask(t, t.TempDir(), tc.yaml)
			_, err := Load(dir)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Errorf("error %T is not a *FieldError", err)
			}
		})
	}
}

func TestLoadSuite(t *testing.T) {
	root := t.TempDir()
	writeTask(t, filepath.Join(root, "b"), strings.Replace(goodYAML, "fix-parse", "b-task", 1))
	writeTask(t, filepath.Join(root, "group", "a"), strings.Replace(goodYAML, "fix-parse", "a-task", 1))
	ts, err := LoadSuite(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].ID != "a-task" || ts[1].ID != "b-task" {
		t.Fatalf("got %v", ts)
	}
	writeTask(t, filepath.Join(root, "c"), strings.Replace(goodYAML, "fix-parse", "a-task", 1))
	if _, err := LoadSuite(root); err == nil || !strings.Contains(err.Error(), `task id "a-task" is also the id of`) {
		t.Fatalf("duplicate ids: %v", err)
	}
	if _, err := LoadSuite(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no tasks under") {
		t.Fatalf("empty suite: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(goodYAML))
	f.Add([]byte("id: x\ninstruction: y\nrepo: {dir: r}\ngrade: {command: true}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := Parse("f", data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a FieldError: %v", err, err)
			}
			return
		}
		out, err := Encode(tk)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse("again", out)
		if err != nil {
			t.Fatalf("re-parse of\n%s\n: %v", out, err)
		}
		if !reflect.DeepEqual(again, tk) {
			t.Fatalf("round trip changed the task:\n%+v\n%+v", tk, again)
		}
	})
}

func TestScrub(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"pkg/mod.py":                          "x = 1\n",
		"pkg/__pycache__/mod.cpython-311.pyc": "\x00bytecode",
		"pkg/old.pyc":                         "\x00",
		".mypy_cache/3.11/pkg/mod.data.json":  "{}",
		"main.go":                             "package main\n",
		"main.go~":                            "package main // old\n",
		".main.go.swp":                        "swap",
		"app":                                 "\x7fELF\x02\x01\x01\x00binary",
		"notes.txt":                           "MZ is a fine way to start a note\n",
		"coverage.out":                        "mode: set\n",
		"Foo.class":                           "\xca\xfe\xba\xbe",
		"vendor/.git/HEAD":                    "ref: refs/heads/main\n",
		"fix.orig":                            "old\n",
	}
	for p, c := range files {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := Scrub(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".main.go.swp", ".mypy_cache/", "Foo.class", "app", "coverage.out", "fix.orig", "main.go~", "pkg/__pycache__/", "pkg/old.pyc", "vendor/.git/"}
	if !reflect.DeepEqual(removed, want) {
		t.Fatalf("removed %q\nwant    %q", removed, want)
	}
	for _, keep := range []string{"pkg/mod.py", "main.go", "notes.txt"} {
		if _, err := os.Stat(filepath.Join(root, keep)); err != nil {
			t.Errorf("%s was removed", keep)
		}
	}
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitOut(t.Context(), dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var author = Author{Name: "Maya Chen", Email: "maya@example.com"}

func TestMaterializeTree(t *testing.T) {
	needGit(t)
	dir := writeTask(t, t.TempDir(), goodYAML)
	for p, c := range map[string]string{
		"repo/README.md":               "# timeparse\n",
		"repo/go.mod":                  "module example.com/timeparse\n",
		"repo/parse/parse.go":          "package parse\n",
		"repo/parse/parse_test.go":     "package parse\n",
		"repo/parse/__pycache__/x.pyc": "leak",
		"repo/cmd/tp/main.go":          "package main\n",
	} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644)
	}
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	repo, err := Materialize(t.Context(), tk, cache, author)
	if err != nil {
		t.Fatal(err)
	}
	log := git(t, repo, "log", "--reverse", "--format=%an <%ae>|%s")
	want := "Maya Chen <maya@example.com>|Initial commit\n" +
		"Maya Chen <maya@example.com>|Add main.go\n" +
		"Maya Chen <maya@example.com>|Add cmd\n" +
		"Maya Chen <maya@example.com>|Add parse\n" +
		"Maya Chen <maya@example.com>|Add tests for parse"
	if log != want {
		t.Fatalf("history:\n%s\nwant:\n%s", log, want)
	}
	if st := git(t, repo, "status", "--porcelain", "--ignored"); st != "" {
		t.Fatalf("tree not clean: %s", st)
	}
	if _, err := os.Stat(filepath.Join(repo, "parse", "__pycache__")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("bytecode cache survived")
	}
	// Dates are in the past, in order.
	dates := strings.Fields(git(t, repo, "log", "--reverse", "--format=%ct"))
	if dates[0] >= dates[len(dates)-1] {
		t.Errorf("commit dates not increasing: %v", dates)
	}
	again, err := Materialize(t.Context(), tk, cache, author)
	if err != nil || again != repo {
		t.Fatalf("second call: %q, %v; want the cached %q", again, err, repo)
	}
	// A changed tree is a new repository.
	os.WriteFile(filepath.Join(dir, "repo", "parse", "parse.go"), []byte("package parse // v2\n"), 0o644)
	if other, err := Materialize(t.Context(), tk, cache, author); err != nil || other == repo {
		t.Fatalf("changed tree reused %q (%v)", other, err)
	}
}

func TestMaterializeGitAndArchive(t *testing.T) {
	needGit(t)
	src := t.TempDir()
	git(t, src, "init", "--quiet", "--initial-branch=main")
	env := []string{"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b"}
	commit := func(content string) string {
		os.WriteFile(filepath.Join(src, "f.txt"), []byte(content), 0o644)
		git(t, src, "add", "f.txt")
		if _, err := gitEnv(t.Context(), src, env, "commit", "--quiet", "-m", content); err != nil {
			t.Fatal(err)
		}
		return git(t, src, "rev-parse", "HEAD")
	}
	first := commit("one")
	commit("two")

	dir := t.TempDir()
	tk := &Task{ID: "g", Dir: dir, Repo: Repo{Git: "https://github.com/o/r.git", Commit: first, Clone: src}}
	repo, err := Materialize(t.Context(), tk, t.TempDir(), author)
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, repo, "rev-parse", "HEAD"); got != first {
		t.Fatalf("HEAD %s, want %s", got, first)
	}
	if got := git(t, repo, "remote", "get-url", "origin"); got != "https://github.com/o/r.git" {
		t.Fatalf("origin %s", got)
	}
	tk.Repo.Commit = strings.Repeat("ab", 20)
	if _, err := Materialize(t.Context(), tk, t.TempDir(), author); err == nil || !strings.Contains(err.Error(), "fetch it there first") {
		t.Fatalf("unknown commit: %v", err)
	}

	// An archive with a file and a path that tries to escape.
	arch := filepath.Join(dir, "r.tgz")
	f, _ := os.Create(arch)
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "proj/main.py", Mode: 0o644, Size: 6, Typeflag: tar.TypeReg})
	tw.Write([]byte("x = 1\n"))
	tw.Close()
	gz.Close()
	f.Close()
	ta := &Task{ID: "a", Dir: dir, Repo: Repo{Archive: "r.tgz"}}
	repo, err = Materialize(t.Context(), ta, t.TempDir(), author)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(repo, "main.py")); err != nil || string(b) != "x = 1\n" {
		t.Fatalf("archive content: %q %v", b, err)
	}
	// An empty tree has no repository.
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	te := &Task{ID: "e", Dir: dir, Repo: Repo{Dir: "empty"}}
	if repo, err := Materialize(t.Context(), te, t.TempDir(), author); err != nil || repo != "" {
		t.Fatalf("empty tree: %q %v", repo, err)
	}
}

func TestArchiveCannotEscape(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	arch := filepath.Join(dir, "evil.tar")
	f, _ := os.Create(arch)
	tw := tar.NewWriter(f)
	tw.WriteHeader(&tar.Header{Name: "a", Typeflag: tar.TypeSymlink, Linkname: "."})
	tw.WriteHeader(&tar.Header{Name: "a/b", Typeflag: tar.TypeSymlink, Linkname: ".."})
	tw.WriteHeader(&tar.Header{Name: "a/b/ESCAPED", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	tw.Write([]byte("x\n"))
	tw.Close()
	f.Close()
	cache := t.TempDir()
	tk := &Task{ID: "evil", Dir: dir, Repo: Repo{Archive: "evil.tar"}}
	_, err := Materialize(t.Context(), tk, cache, author)
	if err == nil {
		t.Error("an archive that links its way out was unpacked")
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(cache), "*", "ESCAPED"))
	if m2, _ := filepath.Glob(filepath.Join(cache, "ESCAPED")); len(matches)+len(m2) > 0 {
		t.Fatalf("a file escaped the extraction directory: %v %v", matches, m2)
	}
}

func TestRepoDirMustNotHoldTheTask(t *testing.T) {
	dir := writeTask(t, t.TempDir(), strings.Replace(goodYAML, "dir: repo", "dir: .", 1))
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), `field "repo.dir": "." holds the task's`) {
		t.Fatalf("repo.dir: . loaded: %v", err)
	}
}
