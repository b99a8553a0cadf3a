package generate

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/task"
)

// goEnv is the environment the tests run the go command in: offline, as
// the generators do.
func goEnv() []string {
	return append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
}

func needGo(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the go command on whole modules; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
}

// bash runs a command line in dir as the grader would.
func bash(t *testing.T, dir, cmdline string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "-c", cmdline)
	cmd.Dir = dir
	cmd.Env = append(goEnv(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// copyDir copies a tree, writable.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		return os.WriteFile(filepath.Join(dst, rel), data, info.Mode().Perm()|0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// treeHash identifies a tree's content, to show an input was not touched.
func treeHash(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := d.Info()
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s %v\n", rel, info.Mode())
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// checkTask proves a generated task the way `verisim tasks validate` and
// an episode would use it: the repository builds; its visible tests pass
// (a deleted feature) or fail (an injected bug); with the hidden tests in
// place the grade fails; after solve.sh it passes, every graded test
// reporting PASS; and the snippet appears nowhere in the repository.
func checkTask(t *testing.T, dir string, visiblePass bool) *task.Task {
	t.Helper()
	tk, err := task.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tk.Grade.Tests) == 0 || tk.Grade.Format != task.FormatGo || tk.Meta["snippet"] == "" || tk.Meta["source"] != "generate" {
		t.Fatalf("task %s: grade %+v, metadata %v", tk.ID, tk.Grade, tk.Meta)
	}
	repo := filepath.Join(dir, tk.Repo.Dir)
	filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(tk.Meta["snippet"])) {
				t.Errorf("task %s: snippet %q is still in %s", tk.ID, tk.Meta["snippet"], p)
			}
		}
		return err
	})

	ws := filepath.Join(t.TempDir(), tk.Repo.Name)
	copyDir(t, repo, ws)
	for _, s := range tk.Setup {
		if out, err := bash(t, ws, s); err != nil {
			t.Fatalf("task %s: setup %q: %v\n%s", tk.ID, s, err, out)
		}
	}
	visible := strings.Replace(tk.Grade.Command, " -v", "", 1)
	if out, err := bash(t, ws, visible); (err == nil) != visiblePass {
		t.Errorf("task %s: the repository's own tests: err = %v, want passing %v\n%s", tk.ID, err, visiblePass, out)
	}
	copyDir(t, tk.TestsPath(), ws)
	if out, err := bash(t, ws, tk.Grade.Command); err == nil {
		t.Errorf("task %s: the grade passes with nothing done:\n%s", tk.ID, out)
	}
	sol := filepath.Join(dir, task.SolutionDir)
	if out, err := bash(t, ws, "bash "+filepath.Join(sol, task.SolveScript), "SOLUTION_DIR="+sol); err != nil {
		t.Fatalf("task %s: solve.sh: %v\n%s", tk.ID, err, out)
	}
	out, err := bash(t, ws, tk.Grade.Command)
	if err != nil {
		t.Errorf("task %s: the grade fails with the solution: %v\n%s", tk.ID, err, out)
	}
	for _, name := range tk.Grade.Tests {
		if !strings.Contains(out, "--- PASS: "+name+" ") {
			t.Errorf("task %s: %s does not pass with the solution", tk.ID, name)
		}
	}
	return tk
}

// shapesModule is a small module written for these tests: quick to build,
// and shaped to exercise the edits (imports only the deleted function
// uses, a test helper, an external test file left empty).
var shapesModule = map[string]string{
	"go.mod": "module example.com/shapes\n\ngo 1.22\n",
	"shapes.go": `// Package shapes measures rectangles.
package shapes

import (
	"fmt"
	"strings"
)

// Rect is a rectangle.
type Rect struct{ W, H int }

// Area returns the area of r.
func (r Rect) Area() int { return r.W * r.H }

// Describe returns the sides of r, and whether it is a square.
func (r Rect) Describe() string {
	var parts []string
	parts = append(parts, fmt.Sprintf("w=%d", r.W))
	parts = append(parts, fmt.Sprintf("h=%d", r.H))
	if r.W == r.H {
		parts = append(parts, "square")
	}
	return strings.Join(parts, " ")
}

// Largest finds the index of the rectangle with the largest area, -1 for
// none.
func Largest(rs []Rect) int {
	best := -1
	for i := range rs {
		if best < 0 || rs[i].Area() > rs[best].Area() {
			best = i
		}
	}
	return best
}
`,
	"shapes_test.go": `package shapes

import "testing"

func TestArea(t *testing.T) {
	if got := (Rect{2, 3}).Area(); got != 6 {
		t.Errorf("Area = %d, want 6", got)
	}
}

func describe(r Rect) string { return r.Describe() }

func TestDescribe(t *testing.T) {
	if got := describe(Rect{2, 2}); got != "w=2 h=2 square" {
		t.Errorf("Describe = %q", got)
	}
	if got := describe(Rect{1, 2}); got != "w=1 h=2" {
		t.Errorf("Describe = %q", got)
	}
}

func TestLargest(t *testing.T) {
	if got := Largest([]Rect{{1, 1}, {3, 3}, {2, 2}}); got != 1 {
		t.Errorf("Largest = %d, want 1", got)
	}
	if got := Largest(nil); got != -1 {
		t.Errorf("Largest(nil) = %d, want -1", got)
	}
}
`,
	"describe_test.go": `package shapes_test

import (
	"testing"

	"example.com/shapes"
)

func TestDescribeExternal(t *testing.T) {
	if got := (shapes.Rect{W: 4, H: 5}).Describe(); got != "w=4 h=5" {
		t.Errorf("Describe = %q", got)
	}
}
`,
}

func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shapes")
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o444); err != nil { // read-only, like the module cache
			t.Fatal(err)
		}
	}
	return dir
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func TestDeleteFeatureShapes(t *testing.T) {
	needGo(t)
	t.Parallel()
	mod := writeModule(t, shapesModule)
	before := treeHash(t, mod)
	out := t.TempDir()
	dirs, err := DeleteFeature(t.Context(), mod, out, Options{Max: 5, Seed: 1, Log: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if treeHash(t, mod) != before {
		t.Error("DeleteFeature changed its input module")
	}
	var ids []string
	for _, d := range dirs {
		ids = append(ids, filepath.Base(d))
	}
	slices.Sort(ids)
	// Area is too small to ask for; Describe and Largest qualify.
	if want := []string{"shapes-delete-describe", "shapes-delete-largest"}; !slices.Equal(ids, want) {
		t.Fatalf("tasks %q, want %q", ids, want)
	}
	tk := checkTask(t, filepath.Join(out, "shapes-delete-describe"), true)
	if want := []string{"TestDescribe", "TestDescribeExternal"}; !slices.Equal(tk.Grade.Tests, want) {
		t.Errorf("graded tests %q, want %q", tk.Grade.Tests, want)
	}
	if tk.Meta["symbol"] != "Rect.Describe" || tk.Meta["module"] != "example.com/shapes" || tk.Meta["generator"] != "delete-feature" {
		t.Errorf("metadata %v", tk.Meta)
	}
	if !strings.Contains(tk.Instruction, "`func (r Rect) Describe() string`") || !strings.Contains(tk.Instruction, "it should return the sides of r, and whether it is a square") {
		t.Errorf("instruction %q lacks the signature or what the doc comment says", tk.Instruction)
	}
	repo := filepath.Join(tk.Dir, tk.Repo.Dir)
	// The imports only Describe used are gone; the external test file,
	// left with nothing but imports, is gone; the helper went with the
	// test that used it, the other tests stayed.
	src, _ := os.ReadFile(filepath.Join(repo, "shapes.go"))
	if bytes.Contains(src, []byte("import")) || bytes.Contains(src, []byte("Describe")) || !bytes.Contains(src, []byte("func Largest")) {
		t.Errorf("shapes.go after the deletion:\n%s", src)
	}
	if _, err := os.Stat(filepath.Join(repo, "describe_test.go")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("describe_test.go should be gone (stat: %v)", err)
	}
	test, _ := os.ReadFile(filepath.Join(repo, "shapes_test.go"))
	if bytes.Contains(test, []byte("describe")) || !bytes.Contains(test, []byte("func TestArea")) || !bytes.Contains(test, []byte("func TestLargest")) {
		t.Errorf("shapes_test.go after the deletion:\n%s", test)
	}
	for _, f := range []string{"shapes_test.go", "describe_test.go"} {
		if got, want := readFile(t, filepath.Join(tk.TestsPath(), f)), shapesModule[f]; got != want {
			t.Errorf("hidden %s differs from the original", f)
		}
	}
	if got := readFile(t, filepath.Join(tk.Dir, task.SolutionDir, "files", "shapes.go")); got != shapesModule["shapes.go"] {
		t.Error("solution/files/shapes.go differs from the original")
	}
	checkTask(t, filepath.Join(out, "shapes-delete-largest"), true)

	// A second run makes nothing new and overwrites nothing.
	if _, err := DeleteFeature(t.Context(), mod, out, Options{Max: 5, Seed: 1}); !errors.Is(err, ErrNoCandidates) {
		t.Errorf("second run: err = %v, want ErrNoCandidates", err)
	}
}

func TestInjectBugShapes(t *testing.T) {
	needGo(t)
	t.Parallel()
	mod := writeModule(t, shapesModule)
	before := treeHash(t, mod)
	out := t.TempDir()
	dirs, err := InjectBug(t.Context(), mod, out, Options{Max: 2, Seed: 7, Log: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if treeHash(t, mod) != before {
		t.Error("InjectBug changed its input module")
	}
	if len(dirs) != 2 {
		t.Fatalf("%d tasks, want 2", len(dirs))
	}
	mutations := map[string]bool{}
	for i, d := range dirs {
		if want := fmt.Sprintf("shapes-bug-%d", i+1); filepath.Base(d) != want {
			t.Errorf("task dir %s, want %s", d, want)
		}
		tk := checkTask(t, d, false)
		mutations[tk.Meta["mutation"]] = true
		// One line changed, the one the metadata names.
		orig := strings.Split(shapesModule["shapes.go"], "\n")
		got := strings.Split(readFile(t, filepath.Join(d, "repo", "shapes.go")), "\n")
		var changed []int
		for j := range min(len(orig), len(got)) {
			if orig[j] != got[j] {
				changed = append(changed, j+1)
			}
		}
		if len(orig) != len(got) || len(changed) != 1 || !strings.HasPrefix(tk.Meta["mutation"], fmt.Sprintf("shapes.go:%d: ", changed[0])) {
			t.Errorf("task %s: lines changed %v, mutation %q", tk.ID, changed, tk.Meta["mutation"])
		}
		if !strings.Contains(tk.Instruction, tk.Grade.Tests[0]) && !slices.ContainsFunc(tk.Grade.Tests, func(n string) bool { return strings.Contains(tk.Instruction, n) }) {
			t.Errorf("instruction %q names none of the failing tests %q", tk.Instruction, tk.Grade.Tests)
		}
		for _, f := range []string{"shapes_test.go", "describe_test.go"} {
			if got := readFile(t, filepath.Join(tk.TestsPath(), f)); got != shapesModule[f] {
				t.Errorf("hidden %s differs from the original", f)
			}
		}
	}

	// Running again adds only mutations not made before.
	more, err := InjectBug(t.Context(), mod, out, Options{Max: 2, Seed: 7})
	if err != nil && !errors.Is(err, ErrNoCandidates) {
		t.Fatal(err)
	}
	for _, d := range more {
		tk, err := task.Load(d)
		if err != nil {
			t.Fatal(err)
		}
		if mutations[tk.Meta["mutation"]] {
			t.Errorf("second run made %s again as %s", tk.Meta["mutation"], tk.ID)
		}
		if slices.Contains(dirs, d) {
			t.Errorf("second run overwrote %s", d)
		}
	}
}

func TestModuleTestsMustPass(t *testing.T) {
	needGo(t)
	t.Parallel()
	files := maps.Clone(shapesModule)
	files["shapes_test.go"] = strings.Replace(files["shapes_test.go"], "got != 6", "got != 7", 1)
	for name, gen := range map[string]func() error{
		"delete-feature": func() error {
			_, err := DeleteFeature(t.Context(), writeModule(t, files), t.TempDir(), Options{})
			return err
		},
		"inject-bug": func() error {
			_, err := InjectBug(t.Context(), writeModule(t, files), t.TempDir(), Options{})
			return err
		},
	} {
		if err := gen(); !errors.Is(err, ErrModuleTests) || !strings.Contains(err.Error(), "TestArea") {
			t.Errorf("%s: err = %v, want ErrModuleTests naming TestArea", name, err)
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

// cachedModule finds a module of this repository's build in the module
// cache, or skips: the generators are meant for code nobody here wrote.
func cachedModule(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", path)
	cmd.Env = goEnv()
	out, err := cmd.Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("%s is not in the module cache (go list -m: %v); run go mod download %s", path, err, path)
	}
	return dir
}

func TestGeneratePflag(t *testing.T) {
	needGo(t)
	t.Parallel()
	mod := cachedModule(t, "github.com/spf13/pflag")
	before := treeHash(t, mod)
	t.Cleanup(func() {
		if treeHash(t, mod) != before {
			t.Errorf("the generators changed %s", mod)
		}
	})
	o := Options{Max: 1, Seed: 42, Log: testLogger(t)}
	t.Run("delete-feature", func(t *testing.T) {
		t.Parallel()
		dirs, err := DeleteFeature(t.Context(), mod, t.TempDir(), o)
		if err != nil {
			t.Fatal(err)
		}
		if len(dirs) != 1 || !strings.HasPrefix(filepath.Base(dirs[0]), "pflag-delete-") {
			t.Fatalf("dirs = %v, want one pflag-delete-* task", dirs)
		}
		tk := checkTask(t, dirs[0], true)
		if !strings.HasPrefix(tk.Meta["module"], "github.com/spf13/pflag@v") {
			t.Errorf("metadata module = %q, want path@version", tk.Meta["module"])
		}
		// The declaration is gone from the repository, and nothing else
		// declares that symbol.
		_, name, _ := strings.Cut("."+tk.Meta["symbol"], ".")
		if i := strings.LastIndex(name, "."); i >= 0 {
			name = name[i+1:]
		}
		out, _ := bash(t, filepath.Join(tk.Dir, tk.Repo.Dir), "grep -rn -E 'func (\\([^)]*\\) )?"+name+"\\(' . || true")
		if strings.TrimSpace(out) != "" {
			t.Errorf("%s is still declared:\n%s", tk.Meta["symbol"], out)
		}
	})
	t.Run("inject-bug", func(t *testing.T) {
		t.Parallel()
		dirs, err := InjectBug(t.Context(), mod, t.TempDir(), o)
		if err != nil {
			t.Fatal(err)
		}
		if len(dirs) != 1 || filepath.Base(dirs[0]) != "pflag-bug-1" {
			t.Fatalf("dirs = %v, want pflag-bug-1", dirs)
		}
		checkTask(t, dirs[0], false)
	})
}
