package importer

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/task"
)

// runGit runs git for a test with a fixed identity and no user config.
func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// sweRepo is a small Python project in a real git repository, with a bug,
// its fix and the tests that show it, made the way SWE-bench records are.
type sweRepo struct {
	clone      string
	base       string
	fixPatch   string
	testPatch  string
	testsAfter map[string]string // test files as test_patch leaves them
	fixedOps   string
}

func newSWERepo(t *testing.T) *sweRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	r := &sweRepo{clone: t.TempDir()}
	runGit(t, r.clone, "init", "-q", "-b", "main")
	writeFiles(t, r.clone, map[string]string{
		"calc/__init__.py":   "from .ops import add, sub\n",
		"calc/ops.py":        "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
		"tests/conftest.py":  "",
		"tests/test_ops.py":  "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n",
		"tests/data/old.txt": "obsolete fixture\n",
	})
	runGit(t, r.clone, "add", "-A")
	runGit(t, r.clone, "commit", "-q", "-m", "calc: add and sub")
	r.base = strings.TrimSpace(runGit(t, r.clone, "rev-parse", "HEAD"))
	runGit(t, r.clone, "remote", "add", "origin", "https://github.com/acme/calc.git")

	r.fixedOps = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
	writeFiles(t, r.clone, map[string]string{"calc/ops.py": r.fixedOps})
	r.fixPatch = runGit(t, r.clone, "diff")
	runGit(t, r.clone, "checkout", "-q", "--", ".")

	r.testsAfter = map[string]string{
		"tests/test_ops.py":  "from calc import add, sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
		"tests/test_more.py": "from calc import add\n\n\ndef test_add_zero():\n    assert add(0, 5) == 5\n",
		"tests/conftest.py":  "import sys\n",
	}
	writeFiles(t, r.clone, r.testsAfter)
	os.Remove(filepath.Join(r.clone, "tests/data/old.txt"))
	runGit(t, r.clone, "add", "-A")
	r.testPatch = runGit(t, r.clone, "diff", "--cached")
	runGit(t, r.clone, "reset", "-q", "--hard")
	return r
}

func (r *sweRepo) record(id string) map[string]any {
	return map[string]any{
		"instance_id":       id,
		"repo":              "acme/calc",
		"base_commit":       r.base,
		"problem_statement": "\r\nadd() subtracts instead of adding\r\n\r\n`add(1, 2)` gives -1.\r\n",
		"patch":             r.fixPatch,
		"test_patch":        r.testPatch,
		// The published datasets hold the lists as strings of JSON.
		"FAIL_TO_PASS":             `["tests/test_ops.py::test_add", "tests/test_more.py::test_add_zero"]`,
		"PASS_TO_PASS":             []string{"tests/test_ops.py::test_sub"},
		"version":                  "1.0",
		"hints_text":               "",
		"environment_setup_commit": r.base,
	}
}

func jsonl(t *testing.T, recs ...map[string]any) string {
	t.Helper()
	var b strings.Builder
	for _, r := range recs {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

// cloneState is everything an import must leave alone in the clone.
func cloneState(t *testing.T, clone string) string {
	return runGit(t, clone, "status", "--porcelain", "--ignored") + runGit(t, clone, "show-ref", "--head") +
		runGit(t, clone, "worktree", "list", "--porcelain") + runGit(t, clone, "stash", "list")
}

func TestSWEBench(t *testing.T) {
	r := newSWERepo(t)
	before := cloneState(t, r.clone)
	out := filepath.Join(t.TempDir(), "tasks")

	dirs, err := SWEBench(t.Context(), strings.NewReader(jsonl(t, r.record("acme__calc-1"), r.record("Acme__Calc-2"))), r.clone, out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(out, "acme__calc-1"), filepath.Join(out, "acme__calc-2")}
	if !reflect.DeepEqual(dirs, want) {
		t.Fatalf("dirs = %v, want %v", dirs, want)
	}
	if after := cloneState(t, r.clone); after != before {
		t.Errorf("the import changed the clone:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 2 {
		t.Errorf("out holds %d entries, want the 2 tasks and no leftovers", len(entries))
	}

	tk, err := task.Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if tk.ID != "acme__calc-1" {
		t.Errorf("id = %q", tk.ID)
	}
	if want := "add() subtracts instead of adding\n\n`add(1, 2)` gives -1."; tk.Instruction != want {
		t.Errorf("instruction = %q, want %q", tk.Instruction, want)
	}
	wantRepo := task.Repo{Git: "https://github.com/acme/calc.git", Commit: r.base, Clone: r.clone, Name: "calc"}
	if tk.Repo != wantRepo {
		t.Errorf("repo = %+v, want %+v", tk.Repo, wantRepo)
	}
	g := tk.Grade
	// conftest.py is hidden and protected, but it is not a test module
	// to name on pytest's command line.
	if want := "python3 -m pytest -rA tests/test_more.py tests/test_ops.py"; g.Command != want {
		t.Errorf("command = %q, want %q", g.Command, want)
	}
	if g.Format != task.FormatPytest || g.Reward != task.RewardPass {
		t.Errorf("format, reward = %q, %q", g.Format, g.Reward)
	}
	if want := []string{"tests/test_ops.py::test_add", "tests/test_more.py::test_add_zero", "tests/test_ops.py::test_sub"}; !reflect.DeepEqual(g.Tests, want) {
		t.Errorf("tests = %q, want %q", g.Tests, want)
	}
	wantProtect := []string{"tests/conftest.py", "tests/test_more.py", "tests/test_ops.py"}
	if got := slices.Sorted(slices.Values(g.Protect)); !reflect.DeepEqual(got, wantProtect) {
		t.Errorf("protect = %q, want %q", got, wantProtect)
	}
	for k, v := range map[string]string{"source": "swebench", "instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": r.base, "version": "1.0"} {
		if tk.Meta[k] != v {
			t.Errorf("metadata %s = %q, want %q", k, tk.Meta[k], v)
		}
	}

	// tests/ holds exactly the files the test patch adds or changes, as
	// the patch leaves them; the file it deletes is not there.
	var hidden []string
	filepath.WalkDir(tk.TestsPath(), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(tk.TestsPath(), p)
			hidden = append(hidden, filepath.ToSlash(rel))
		}
		return err
	})
	if !reflect.DeepEqual(hidden, wantProtect) {
		t.Errorf("tests/ holds %q, want %q", hidden, wantProtect)
	}
	for name, content := range r.testsAfter {
		if got := readFile(t, filepath.Join(tk.TestsPath(), name)); got != content {
			t.Errorf("tests/%s = %q, want %q", name, got, content)
		}
	}

	// The solution, run as the grader would in a checkout of base_commit,
	// fixes the bug.
	co := filepath.Join(t.TempDir(), "calc")
	runGit(t, filepath.Dir(co), "clone", "-q", r.clone, co)
	runGit(t, co, "checkout", "-q", r.base)
	solve := exec.Command("bash", filepath.Join(dirs[0], task.SolutionDir, task.SolveScript))
	solve.Dir = co
	solve.Env = append(os.Environ(), "SOLUTION_DIR="+filepath.Join(dirs[0], task.SolutionDir))
	if out, err := solve.CombinedOutput(); err != nil {
		t.Fatalf("solve.sh: %v\n%s", err, out)
	}
	if got := readFile(t, filepath.Join(co, "calc/ops.py")); got != r.fixedOps {
		t.Errorf("after solve.sh calc/ops.py = %q, want %q", got, r.fixedOps)
	}
}

func TestSWEBenchErrors(t *testing.T) {
	r := newSWERepo(t)
	// A clone whose only remote is a local path says nothing about which
	// repository it is: the first record decides.
	localClone := filepath.Join(t.TempDir(), "calc")
	runGit(t, filepath.Dir(localClone), "clone", "-q", r.clone, localClone)

	good := r.record("acme__calc-1")
	with := func(id string, change func(map[string]any)) map[string]any {
		rec := r.record(id)
		change(rec)
		return rec
	}
	cases := []struct {
		name  string
		input string
		clone string
		want  []string
	}{
		{"bad JSON", jsonl(t, good) + "{\"instance_id\": \"x\",\n", r.clone, []string{"line 2", "invalid JSON"}},
		{"missing field", jsonl(t, good, with("acme__calc-2", func(m map[string]any) { delete(m, "test_patch") })), r.clone, []string{"acme__calc-2", "line 2", `"test_patch"`}},
		{"no failing tests", jsonl(t, with("acme__calc-3", func(m map[string]any) { m["FAIL_TO_PASS"] = "[]" })), r.clone, []string{"acme__calc-3", "FAIL_TO_PASS"}},
		{"bad test list", jsonl(t, with("acme__calc-4", func(m map[string]any) { m["PASS_TO_PASS"] = "not json" })), r.clone, []string{"acme__calc-4", "PASS_TO_PASS"}},
		{"unknown commit", jsonl(t, good, with("acme__calc-5", func(m map[string]any) { m["base_commit"] = strings.Repeat("ab", 20) })), r.clone, []string{"acme__calc-5", "abab", "fetch it first"}},
		{"other repo", jsonl(t, good, with("other__x-1", func(m map[string]any) { m["repo"] = "other/x" })), r.clone, []string{"other__x-1", "other/x", "acme/calc"}},
		{"other repo, local clone", jsonl(t, good, with("other__x-2", func(m map[string]any) { m["repo"] = "other/x" })), localClone, []string{"other__x-2", "other/x", "acme__calc-1"}},
		{"patch does not apply", jsonl(t, good, with("acme__calc-6", func(m map[string]any) {
			m["patch"] = strings.Replace(r.fixPatch, "return a - b", "return a * b", 1)
		})), r.clone, []string{"acme__calc-6", "patch does not apply"}},
		{"test patch does not apply", jsonl(t, with("acme__calc-7", func(m map[string]any) {
			m["test_patch"] = strings.Replace(r.testPatch, "     assert sub(3, 1) == 2\n+", "     assert sub(3, 1) == 7\n+", 1)
		})), r.clone, []string{"acme__calc-7", "test_patch does not apply"}},
		{"same id twice", jsonl(t, good, good), r.clone, []string{"acme__calc-1", "twice"}},
		{"no records", "\n\n", r.clone, []string{"no records"}},
		{"not a clone", jsonl(t, good), t.TempDir(), []string{"not a git repository"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			writeFiles(t, out, map[string]string{"mine.txt": "not the importer's"})
			dirs, err := SWEBench(t.Context(), strings.NewReader(c.input), c.clone, out)
			if err == nil {
				t.Fatalf("no error; wrote %v", dirs)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			// Nothing written, nothing of the caller's removed.
			entries, _ := os.ReadDir(out)
			if len(entries) != 1 || entries[0].Name() != "mine.txt" {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("out holds %q after a failed import, want only mine.txt", names)
			}
		})
	}

	t.Run("existing task", func(t *testing.T) {
		out := t.TempDir()
		writeFiles(t, out, map[string]string{"acme__calc-1/task.yaml": "id: acme__calc-1\n"})
		_, err := SWEBench(t.Context(), strings.NewReader(jsonl(t, good)), r.clone, out)
		if err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("err = %v, want one saying the task already exists", err)
		}
		if got := readFile(t, filepath.Join(out, "acme__calc-1/task.yaml")); got != "id: acme__calc-1\n" {
			t.Errorf("the existing task was changed: %q", got)
		}
	})

	t.Run("out created", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "new", "tasks")
		if _, err := SWEBench(t.Context(), strings.NewReader(jsonl(t, with("x", func(m map[string]any) { m["base_commit"] = "deadbeef" }))), r.clone, out); err == nil {
			t.Fatal("no error")
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("a failed import left the output directory it created (stat: %v)", err)
		}
	})
}

func TestParsePatch(t *testing.T) {
	patch := `diff --git a/src/a.py b/src/a.py
index 1111111..2222222 100644
--- a/src/a.py
+++ b/src/a.py
@@ -1,3 +1,3 @@
--- not a header: a removed line starting with "-- "
+++ nor this
 x
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hi
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 3333333..0000000
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/old name.py b/new name.py
similarity index 90%
rename from old name.py
rename to new name.py
diff --git "a/caf\303\251.txt" "b/caf\303\251.txt"
index 1111111..2222222 100644
--- "a/caf\303\251.txt"
+++ "b/caf\303\251.txt"
@@ -1 +1 @@
-a
+b
diff --git a/img.png b/img.png
index 1111111..2222222 100644
Binary files a/img.png and b/img.png differ
`
	want := []fileChange{
		{"src/a.py", "src/a.py"},
		{"", "new.txt"},
		{"gone.txt", ""},
		{"old name.py", "new name.py"},
		{"café.txt", "café.txt"},
		{"img.png", "img.png"},
	}
	if got := parsePatch(patch); !reflect.DeepEqual(got, want) {
		t.Errorf("parsePatch =\n%q\nwant\n%q", got, want)
	}
}

// FuzzParsePatch checks that any path survives a round trip through a
// git diff, whatever the hunk lines hold.
func FuzzParsePatch(f *testing.F) {
	f.Add("src/a.py", "--- b/evil")
	f.Add("dir with space/x.go", "+++ b/x")
	f.Add("a", "@@ -1 +1 @@")
	f.Fuzz(func(t *testing.T, name, line string) {
		// Names git writes unquoted: printable ASCII but '"' and '\\'.
		if name == "" || strings.HasPrefix(name, " ") || strings.HasSuffix(name, " ") || strings.Contains(line, "\n") ||
			strings.IndexFunc(name, func(r rune) bool { return r < ' ' || r > '~' || r == '"' || r == '\\' }) >= 0 {
			return
		}
		patch := "diff --git a/" + name + " b/" + name + "\nindex 1..2 100644\n--- a/" + name + "\n+++ b/" + name +
			"\n@@ -1 +1 @@\n-" + line + "\n+" + line + "x\n"
		want := []fileChange{{name, name}}
		if got := parsePatch(patch); !reflect.DeepEqual(got, want) {
			t.Fatalf("parsePatch(%q) = %q, want %q", patch, got, want)
		}
	})
}

func TestTaskID(t *testing.T) {
	for in, want := range map[string]string{
		"astropy__astropy-12907": "astropy__astropy-12907",
		"Django__Django-11099":   "django__django-11099",
		"org/Hello World!":       "org-hello-world",
		"--x":                    "x",
		"!!!":                    "task",
	} {
		if got := taskID(in); got != want {
			t.Errorf("taskID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOwnerName(t *testing.T) {
	for url, want := range map[string]string{
		"https://github.com/Acme/Calc.git":   "acme/calc",
		"https://github.com/acme/calc/":      "acme/calc",
		"ssh://git@github.com/acme/calc":     "acme/calc",
		"git@github.com:acme/calc.git":       "acme/calc",
		"https://gitlab.example.com/g/sub/r": "sub/r",
		"/src/calc":                          "",
		"../calc":                            "",
		"file:///src/acme/calc":              "",
	} {
		if got := ownerName(url); got != want {
			t.Errorf("ownerName(%q) = %q, want %q", url, got, want)
		}
	}
}
