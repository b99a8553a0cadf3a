package generate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/verisim/verisim/internal/lazyregexp"
)

// Options tune a generator run.
type Options struct {
	// Max is how many tasks to produce (default 3).
	Max int
	// Seed chooses among the candidates; the same seed gives the same tasks.
	Seed int64
	// GoCache is the GOCACHE for the go commands run on the module; empty
	// leaves the go command's default.
	GoCache string
	// Log receives progress; nil discards it.
	Log *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Max <= 0 {
		o.Max = 3
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// maxTries bounds the candidates a run checks with the go command (each
// costs a build and a test run), whatever Max is.
const maxTries = 40

// ErrModuleTests is wrapped by the error for a module whose own tests do
// not pass offline as given: a task made from it could not tell a fix from
// the breakage that was already there.
var ErrModuleTests = errors.New("the module's tests do not pass offline")

// ErrNoCandidates is wrapped by the error of a generator run that made no
// task: nothing in the module qualified, or every candidate tried failed a
// check (or made a task an earlier run already wrote).
var ErrNoCandidates = errors.New("no candidate passed the checks")

// module is a Go module being mined for tasks: the caller's directory,
// only read, and a scratch copy that candidates are tried on.
type module struct {
	src     string // the caller's module directory
	work    string // scratch copy
	path    string // module path, from go.mod
	version string // from a module cache directory name (path@version), else ""
	short   string // the module's name in task ids
	// files holds every regular file of src (VCS metadata aside) by
	// slash-separated path, as read: the originals that edits are made
	// from, restored from, and searched for distinctive lines.
	files map[string]*srcFile
	links map[string]string // symlinks of src, by path, to their targets
	pkgs  []*goPackage
	env   []string
	log   *slog.Logger
	// testTimeout bounds one go test run of a package, from how long the
	// baseline run took.
	testTimeout map[string]time.Duration
}

// srcFile is a file of the input module.
type srcFile struct {
	data []byte
	mode fs.FileMode
}

// goPackage is one package directory of the module.
type goPackage struct {
	dir       string   // slash path relative to the module root, "." for the root
	name      string   // package name
	goFiles   []string // module-relative slash paths of the package's non-test files
	testFiles []string // module-relative slash paths of its _test.go files (both test packages)
}

// pattern is the go command's package pattern for the package.
func (p *goPackage) pattern() string {
	if p.dir == "." {
		return "./"
	}
	return "./" + p.dir + "/"
}

// vcsDirs are never copied: a repository's history would hold the very
// code a task removes.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".bzr": true, ".jj": true}

// openModule copies the module at dir to a scratch directory, finds its
// packages and checks that it builds and its tests pass offline. cover,
// when set, also records the tests' coverage profile there.
func openModule(ctx context.Context, dir string, o Options, cover string) (_ *module, retErr error) {
	src, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a Go module: it has no go.mod", src)
		}
		return nil, err
	}
	m := &module{src: src, path: modulePath(gomod), log: o.Log, testTimeout: map[string]time.Duration{}}
	if m.path == "" {
		return nil, fmt.Errorf("%s: no module line", filepath.Join(src, "go.mod"))
	}
	if _, v, ok := strings.Cut(filepath.Base(src), "@"); ok {
		m.version = v
	}
	m.short = shortName(m.path)
	m.env = append(os.Environ(),
		// -buildvcs=false: the scratch copy is no repository, and may sit
		// inside one whose metadata has nothing to do with the module.
		"GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	if o.GoCache != "" {
		m.env = append(m.env, "GOCACHE="+o.GoCache)
	}
	if m.work, err = os.MkdirTemp("", "verisim-generate-*"); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			m.close()
		}
	}()
	if m.files, m.links, err = readTree(src); err != nil {
		return nil, fmt.Errorf("read module: %w", err)
	}
	if err := m.writeTree(m.work, nil); err != nil {
		return nil, err
	}
	if m.pkgs, err = findPackages(m.work); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("go"); err != nil {
		return nil, fmt.Errorf("generating tasks needs the go command: %w", err)
	}

	start := time.Now()
	if out, err := m.goCmd(ctx, 10*time.Minute, "build", "./..."); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: %w: go build ./... fails%s:\n%s", src, ErrModuleTests, offlineHint(out), tail(out))
	}
	args := []string{"test", "-json"}
	if cover != "" {
		args = append(args, "-coverprofile="+cover)
	}
	res, err := m.goTest(ctx, 20*time.Minute, append(args, "./...")...)
	if err != nil {
		return nil, err
	}
	if !res.ok {
		return nil, fmt.Errorf("%s: %w (failing: %s)%s:\n%s", src, ErrModuleTests, strings.Join(res.failed, ", "), offlineHint([]byte(res.log)), tail([]byte(res.log)))
	}
	for pkg, secs := range res.elapsed {
		// Generous, since a mutant may be slower, yet short enough that a
		// mutant that loops forever costs seconds, not the go command's
		// default ten minutes.
		m.testTimeout[pkg] = 30*time.Second + 10*time.Duration(secs*float64(time.Second))
	}
	// With -mod=mod the go command may have completed go.mod and go.sum
	// (from the module cache). The tasks' repositories get those, so that
	// they build offline with the go command's default -mod=readonly too.
	for _, rel := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(m.work, rel))
		if err != nil {
			continue
		}
		if f, ok := m.files[rel]; !ok || !bytes.Equal(f.data, data) {
			m.log.Info("the go command updated "+rel+"; tasks get the updated file", "module", m.path)
			m.files[rel] = &srcFile{data: data, mode: 0o644}
		}
	}
	m.log.Info("module ready", "module", m.path, "version", m.version, "packages", len(m.pkgs), "baseline", time.Since(start).Round(time.Millisecond))
	return m, nil
}

func (m *module) close() {
	if m.work != "" {
		os.RemoveAll(m.work)
	}
}

// id names the module in metadata: path@version when the version is known.
func (m *module) id() string {
	if m.version == "" {
		return m.path
	}
	return m.path + "@" + m.version
}

// importPath is the import path of a package directory.
func (m *module) importPath(dir string) string {
	if dir == "." {
		return m.path
	}
	return m.path + "/" + dir
}

var moduleLineRE = lazyregexp.New(`(?m)^\s*module\s+"?([^\s"/]+[^\s"]*)"?\s*(//.*)?$`)

func modulePath(gomod []byte) string {
	if m := moduleLineRE.FindSubmatch(gomod); m != nil {
		return string(m[1])
	}
	return ""
}

var majorRE = lazyregexp.New(`^v[0-9]+$`)

// shortName is the last element of a module path that is not a major
// version suffix: github.com/spf13/pflag and example.com/x/v2 give pflag
// and x.
func shortName(modPath string) string {
	parts := strings.Split(modPath, "/")
	name := parts[len(parts)-1]
	if majorRE.MatchString(name) && len(parts) > 1 {
		name = parts[len(parts)-2]
	}
	return taskID(strings.TrimSuffix(name, ".git"))
}

// readTree reads every regular file and symlink under root except VCS
// metadata.
func readTree(root string) (map[string]*srcFile, map[string]string, error) {
	files := map[string]*srcFile{}
	links := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && vcsDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			links[rel] = target
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files[rel] = &srcFile{data: data, mode: info.Mode().Perm()}
		}
		return nil
	})
	return files, links, err
}

// edits are changed files by module-relative path; nil content deletes.
type edits map[string][]byte

// writeTree writes the module, with edits applied, under dir: writable
// (the module cache is read-only) and otherwise with the original modes.
func (m *module) writeTree(dir string, e edits) error {
	for rel, f := range m.files {
		data, changed := e[rel]
		if !changed {
			data = f.data
		} else if data == nil {
			continue
		}
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(rel)), data, f.mode); err != nil {
			return err
		}
	}
	for rel, target := range m.links {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, p); err != nil {
			return err
		}
	}
	return nil
}

// apply writes edits into the scratch copy; restore puts the originals
// back.
func (m *module) apply(e edits) error {
	for rel, data := range e {
		p := filepath.Join(m.work, filepath.FromSlash(rel))
		if data == nil {
			if err := os.Remove(p); err != nil {
				return err
			}
			continue
		}
		if err := writeFile(p, data, m.files[rel].mode); err != nil {
			return err
		}
	}
	return nil
}

func (m *module) restore(e edits) error {
	var errs []error
	for rel := range e {
		errs = append(errs, writeFile(filepath.Join(m.work, filepath.FromSlash(rel)), m.files[rel].data, m.files[rel].mode))
	}
	return errors.Join(errs...)
}

// writeFile writes a file with at least owner read-write permissions,
// making its directory.
func writeFile(p string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, perm|0o600)
}

// findPackages lists the package directories of the module at root as the
// go command would see them: not testdata, vendor, or directories starting
// with . or _, and not nested modules.
func findPackages(root string) ([]*goPackage, error) {
	var pkgs []*goPackage
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if p != root {
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		bp, err := build.Default.ImportDir(p, 0)
		if err != nil {
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				return nil
			}
			return nil // a directory the go command would reject too; nothing to mine there
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		pkg := &goPackage{dir: rel, name: bp.Name}
		for _, f := range bp.GoFiles {
			pkg.goFiles = append(pkg.goFiles, path.Join(rel, f))
		}
		for _, f := range append(slices.Clone(bp.TestGoFiles), bp.XTestGoFiles...) {
			pkg.testFiles = append(pkg.testFiles, path.Join(rel, f))
		}
		slices.Sort(pkg.testFiles)
		pkgs = append(pkgs, pkg)
		return nil
	})
	return pkgs, err
}

// goCmd runs the go command in the scratch copy.
func (m *module) goCmd(ctx context.Context, timeout time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = m.work
	cmd.Env = m.env
	// A test binary left behind by a killed go command must not keep the
	// output pipe, and so this call, open.
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil && err != nil {
		return out, fmt.Errorf("go %s: %w", strings.Join(args, " "), ctx.Err())
	}
	return out, err
}

// testResult is what a go test -json run reported.
type testResult struct {
	ok          bool // the command exited 0
	buildFailed bool // a package (or its tests) did not compile
	timedOut    bool // a test binary hit -timeout
	// passed and failed are top-level test names, in the order they ended.
	passed, failed []string
	// output is each top-level test's output, its subtests' included.
	output map[string]string
	// elapsed is seconds per package import path.
	elapsed map[string]float64
	log     string
}

// testEvent is one line of go test -json (cmd/test2json).
type testEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	Elapsed     float64
	FailedBuild string
}

// goTest runs go test with args (which must include -json) and reads its
// report. Only a failure to run the go command at all is an error; test
// and build failures are in the result.
func (m *module) goTest(ctx context.Context, timeout time.Duration, args ...string) (*testResult, error) {
	out, err := m.goCmd(ctx, timeout, args...)
	res := &testResult{output: map[string]string{}, elapsed: map[string]float64{}}
	var ee *exec.ExitError
	switch {
	case err == nil:
		res.ok = true
	case errors.As(err, &ee):
	default:
		return nil, err
	}
	var log strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev testEvent
		if !bytes.HasPrefix(line, []byte("{")) || json.Unmarshal(line, &ev) != nil {
			log.Write(line) // text the go command printed itself (build errors, go.mod problems)
			log.WriteByte('\n')
			continue
		}
		top, _, _ := strings.Cut(ev.Test, "/")
		switch ev.Action {
		case "output", "build-output":
			log.WriteString(ev.Output)
			if top != "" {
				res.output[top] += ev.Output
			}
			if strings.HasPrefix(ev.Output, "panic: test timed out after") {
				res.timedOut = true
			}
			if strings.Contains(ev.Output, "[build failed]") || strings.Contains(ev.Output, "[setup failed]") {
				res.buildFailed = true
			}
		case "build-fail":
			res.buildFailed = true
		case "pass", "fail":
			switch {
			case ev.Test == "":
				if ev.FailedBuild != "" {
					res.buildFailed = true
				}
				res.elapsed[ev.Package] = ev.Elapsed
			case !strings.Contains(ev.Test, "/") && ev.Action == "pass":
				res.passed = append(res.passed, ev.Test)
			case !strings.Contains(ev.Test, "/"):
				res.failed = append(res.failed, ev.Test)
			}
		}
	}
	res.log = log.String()
	if !res.ok && len(res.failed) == 0 && !res.timedOut {
		// Nothing failed by name, yet the command did: the package
		// could not be built, vetted or set up.
		res.buildFailed = true
	}
	return res, nil
}

// offlineHint explains the go command's complaint about a dependency it
// may not download.
func offlineHint(out []byte) string {
	if bytes.Contains(out, []byte("GOPROXY=off")) {
		return " (a dependency is missing from the module cache; run go mod download in the module first)"
	}
	return ""
}

// tail is the end of a command's output, enough to see why it failed.
func tail(out []byte) string {
	const n = 3000
	s := strings.TrimSpace(string(out))
	if len(s) > n {
		s = "...\n" + s[len(s)-n:]
	}
	return s
}
