package importer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/verisim/verisim/internal/task"
)

// record is one SWE-bench instance as the published datasets write it.
// Other fields (hints_text, created_at, environment_setup_commit, ...) are
// ignored.
type record struct {
	InstanceID       string          `json:"instance_id"`
	Repo             string          `json:"repo"`
	BaseCommit       string          `json:"base_commit"`
	ProblemStatement string          `json:"problem_statement"`
	Patch            string          `json:"patch"`
	TestPatch        string          `json:"test_patch"`
	FailToPass       json.RawMessage `json:"FAIL_TO_PASS"`
	PassToPass       json.RawMessage `json:"PASS_TO_PASS"`
	Version          any             `json:"version"`

	line       int
	failToPass []string
	passToPass []string
}

// where names the record in errors.
func (r *record) where() string {
	if r.InstanceID == "" {
		return fmt.Sprintf("record on line %d", r.line)
	}
	return fmt.Sprintf("record %s (line %d)", r.InstanceID, r.line)
}

// SWEBench imports SWE-bench-style JSONL records, one task per record,
// written to outDir/<instance id>. clone is a local git clone of the
// records' repository (every record must be of that repository, and its
// base_commit must be in the clone); it is only read. The tasks check out
// the repository from clone at base_commit, hide the files test_patch adds
// or changes (as they are after the patch) in tests/, grade with pytest on
// FAIL_TO_PASS ∪ PASS_TO_PASS, and apply the gold patch as the solution.
//
// Any problem (a malformed line, a missing field, an unknown commit, a
// patch that does not apply) fails the whole import and writes nothing.
func SWEBench(ctx context.Context, records io.Reader, clone string, outDir string) ([]string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("importing SWE-bench records needs git: %w", err)
	}
	clone, err := filepath.Abs(clone)
	if err != nil {
		return nil, err
	}
	if _, err := git(ctx, clone, nil, "rev-parse", "--git-dir"); err != nil {
		return nil, fmt.Errorf("clone %s is not a git repository: %w", clone, err)
	}
	recs, err := readRecords(records)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errors.New("no records: the input holds no JSON lines")
	}
	if err := checkRepos(ctx, clone, recs); err != nil {
		return nil, err
	}
	st, err := newStaging(outDir)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			st.abort()
			return nil, err
		}
		if err := writeSWEBench(ctx, st, clone, r); err != nil {
			st.abort()
			return nil, fmt.Errorf("%s: %w", r.where(), err)
		}
	}
	return st.commit()
}

// readRecords parses every line first, so that a bad line fails the import
// before anything is written.
func readRecords(in io.Reader) ([]*record, error) {
	br := bufio.NewReader(in) // not a Scanner: one record's patches can be megabytes long
	var recs []*record
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("records line %d: %w", n, err)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			r, perr := parseRecord(line, n)
			if perr != nil {
				return nil, perr
			}
			recs = append(recs, r)
		}
		if err == io.EOF {
			return recs, nil
		}
	}
}

func parseRecord(line []byte, n int) (*record, error) {
	r := &record{line: n}
	if err := json.Unmarshal(line, r); err != nil {
		return nil, fmt.Errorf("records line %d: invalid JSON: %w", n, err)
	}
	for _, f := range []struct{ name, v string }{
		{"instance_id", r.InstanceID}, {"repo", r.Repo}, {"base_commit", r.BaseCommit},
		{"problem_statement", r.ProblemStatement}, {"patch", r.Patch}, {"test_patch", r.TestPatch},
	} {
		if strings.TrimSpace(f.v) == "" {
			return nil, fmt.Errorf("%s: missing field %q", r.where(), f.name)
		}
	}
	if strings.HasPrefix(r.BaseCommit, "-") {
		return nil, fmt.Errorf("%s: field \"base_commit\" is %q; want a commit hash", r.where(), r.BaseCommit)
	}
	if owner, name, ok := strings.Cut(r.Repo, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%s: field \"repo\" is %q; want owner/name", r.where(), r.Repo)
	}
	var err error
	if r.failToPass, err = testList(r.FailToPass); err != nil {
		return nil, fmt.Errorf("%s: field \"FAIL_TO_PASS\": %w", r.where(), err)
	}
	if len(r.failToPass) == 0 {
		return nil, fmt.Errorf("%s: missing field \"FAIL_TO_PASS\" (or it lists no tests): a task needs a test the fix makes pass", r.where())
	}
	if r.passToPass, err = testList(r.PassToPass); err != nil {
		return nil, fmt.Errorf("%s: field \"PASS_TO_PASS\": %w", r.where(), err)
	}
	return r, nil
}

// testList reads a list of test names written either as a JSON list or,
// as the published datasets do, as a string holding a JSON list.
func testList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		raw = json.RawMessage(s)
	}
	var l []string
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("want a list of test names: %w", err)
	}
	return l, nil
}

// checkRepos makes sure every record is of the repository clone holds:
// the one its remotes name, or, for a clone without a hosted remote, the
// first record's.
func checkRepos(ctx context.Context, clone string, recs []*record) error {
	hosted, err := remoteRepos(ctx, clone)
	if err != nil {
		return err
	}
	for _, r := range recs {
		want := strings.ToLower(r.Repo)
		if len(hosted) > 0 {
			if !hosted[want] {
				return fmt.Errorf("%s: repo %s, but %s is a clone of %s; import each repository's records with its own clone", r.where(), r.Repo, clone, strings.Join(sortedKeys(hosted), ", "))
			}
			continue
		}
		if first := recs[0]; !strings.EqualFold(first.Repo, r.Repo) {
			return fmt.Errorf("%s: repo %s, but %s (the clone of this import) is of %s; import each repository's records with its own clone", r.where(), r.Repo, first.where(), first.Repo)
		}
	}
	return nil
}

// remoteRepos returns the owner/name (lower case) of every remote of clone
// whose URL names a host; remotes that are local paths say nothing about
// which repository this is.
func remoteRepos(ctx context.Context, clone string) (map[string]bool, error) {
	out, err := git(ctx, clone, nil, "config", "--get-regexp", `^remote\..*\.url$`)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 { // no remotes
			return nil, nil
		}
		return nil, err
	}
	repos := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		_, url, _ := strings.Cut(line, " ")
		if r := ownerName(url); r != "" {
			repos[r] = true
		}
	}
	return repos, nil
}

// ownerName reads owner/name from https://host/owner/name(.git),
// ssh://git@host/owner/name and git@host:owner/name.git; "" for anything
// else (local paths, file:// URLs).
func ownerName(url string) string {
	var p string
	switch {
	case strings.HasPrefix(url, "file://"):
		return ""
	case strings.Contains(url, "://"):
		_, rest, _ := strings.Cut(url, "://")
		_, p, _ = strings.Cut(rest, "/")
	case strings.Contains(url, "@") && strings.Contains(url, ":"):
		_, p, _ = strings.Cut(url, ":")
	default:
		return ""
	}
	p = strings.TrimSuffix(strings.Trim(p, "/"), ".git")
	parts := strings.Split(p, "/")
	if len(parts) < 2 {
		return ""
	}
	return strings.ToLower(parts[len(parts)-2] + "/" + parts[len(parts)-1])
}

// writeSWEBench writes one record's task into the staging area.
func writeSWEBench(ctx context.Context, st *staging, clone string, r *record) error {
	commit, err := git(ctx, clone, nil, "rev-parse", "--verify", "--quiet", r.BaseCommit+"^{commit}")
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("base_commit %s is not in %s; fetch it first (git -C %s fetch origin %s)", r.BaseCommit, clone, clone, r.BaseCommit)
	}
	base := strings.TrimSpace(string(commit))
	testChanges := parsePatch(r.TestPatch)
	if len(testChanges) == 0 {
		return errors.New("test_patch touches no files; want a git diff")
	}
	fixChanges := parsePatch(r.Patch)
	if len(fixChanges) == 0 {
		return errors.New("patch touches no files; want a git diff")
	}
	for _, c := range append(append([]fileChange(nil), testChanges...), fixChanges...) {
		for _, p := range []string{c.Old, c.New} {
			if p != "" && !filepath.IsLocal(p) {
				return fmt.Errorf("a patch touches %q, outside the repository", p)
			}
		}
	}

	id := taskID(r.InstanceID)
	dir, err := st.dir(id)
	if err != nil {
		return err
	}
	tests, err := patchedTests(ctx, clone, base, r, testChanges, fixChanges, filepath.Join(dir, task.TestsDir))
	if err != nil {
		return err
	}
	if err := writeSolution(dir, r.Patch); err != nil {
		return err
	}

	owner, name, _ := strings.Cut(r.Repo, "/")
	meta := map[string]string{
		"source":      "swebench",
		"instance_id": r.InstanceID,
		"repo":        r.Repo,
		"base_commit": base,
	}
	if r.Version != nil {
		meta["version"] = fmt.Sprint(r.Version)
	}
	names := union(r.failToPass, r.passToPass)
	t := &task.Task{
		ID:          id,
		Instruction: strings.TrimSpace(strings.ReplaceAll(r.ProblemStatement, "\r\n", "\n")),
		Repo: task.Repo{
			Git:    "https://github.com/" + owner + "/" + name + ".git",
			Commit: base,
			Clone:  clone,
			Name:   name,
		},
		Grade: task.Grade{
			Command: pytestCommand(tests, names),
			Format:  task.FormatPytest,
			Reward:  task.RewardPass,
			Tests:   names,
			Protect: tests,
		},
		Tags: []string{"python", "swebench"},
		Meta: meta,
	}
	return task.WriteFile(dir, t)
}

// patchedTests writes into testsDir the files test_patch adds or changes,
// as they are after applying it to base, and returns their paths. The base
// versions come out of the clone's object store into a scratch directory,
// so the clone's work tree, index and refs are never touched. The gold
// patch is checked against the same base files: a record whose patch does
// not apply would make a task nobody can validate.
func patchedTests(ctx context.Context, clone, base string, r *record, testChanges, fixChanges []fileChange, testsDir string) ([]string, error) {
	scratch, err := os.MkdirTemp("", "verisim-swebench-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	// Its own repository, so that git apply never mistakes it for a
	// subdirectory of some enclosing checkout (and skips every path).
	if _, err := git(ctx, scratch, nil, "init", "-q"); err != nil {
		return nil, err
	}
	var olds []string
	for _, c := range append(append([]fileChange(nil), testChanges...), fixChanges...) {
		if c.Old != "" {
			olds = append(olds, c.Old)
		}
	}
	if err := extract(ctx, clone, base, olds, scratch); err != nil {
		return nil, err
	}
	if _, err := git(ctx, scratch, strings.NewReader(r.Patch), "apply", "--check"); err != nil {
		return nil, fmt.Errorf("patch does not apply to base_commit %s: %w", base, err)
	}
	if _, err := git(ctx, scratch, strings.NewReader(r.TestPatch), "apply"); err != nil {
		return nil, fmt.Errorf("test_patch does not apply to base_commit %s: %w", base, err)
	}
	var paths []string
	for _, c := range testChanges {
		if c.New == "" {
			continue // a deleted test file has nothing to hide
		}
		if err := copyFile(filepath.Join(scratch, c.New), filepath.Join(testsDir, c.New)); err != nil {
			return nil, fmt.Errorf("test file %s after test_patch: %w", c.New, err)
		}
		paths = append(paths, c.New)
	}
	if len(paths) == 0 {
		return nil, errors.New("test_patch only deletes files; there are no tests to hide")
	}
	return paths, nil
}

// extract writes the files at paths as they are in commit into dir,
// keeping executable bits and symlinks. Paths the commit lacks are
// skipped: the patch that claims to change them will fail to apply, which
// is the error to report.
func extract(ctx context.Context, clone, commit string, paths []string, dir string) error {
	if len(paths) == 0 {
		return nil
	}
	args := append([]string{"--literal-pathspecs", "ls-tree", "-z", commit, "--"}, paths...)
	out, err := git(ctx, clone, nil, args...)
	if err != nil {
		return err
	}
	for _, ent := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if ent == "" {
			continue
		}
		meta, p, ok := strings.Cut(ent, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[1] != "blob" || !filepath.IsLocal(p) {
			continue
		}
		data, err := git(ctx, clone, nil, "cat-file", "blob", f[2])
		if err != nil {
			return err
		}
		to := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		switch f[0] {
		case "120000":
			err = os.Symlink(string(data), to)
		case "100755":
			err = os.WriteFile(to, data, 0o755)
		default:
			err = os.WriteFile(to, data, 0o644)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies one file or symlink, making the directories above dst.
func copyFile(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, fi.Mode().Perm()|0o600)
}

func writeSolution(dir, patch string) error {
	sol := filepath.Join(dir, task.SolutionDir)
	if err := os.Mkdir(sol, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(sol, "fix.patch"), []byte(patch), 0o644); err != nil {
		return err
	}
	script := solveHeader + "git apply \"$SOLUTION_DIR/fix.patch\"\n"
	return os.WriteFile(filepath.Join(sol, task.SolveScript), []byte(script), 0o755)
}

// pytestCommand runs pytest on the test modules among the hidden files:
// the ones a listed test lives in, and the ones named like test modules.
// Fixtures and data files the test patch also touches are not arguments.
func pytestCommand(files, names []string) string {
	named := map[string]bool{}
	for _, n := range names {
		if f, _, ok := strings.Cut(n, "::"); ok {
			named[f] = true
		}
	}
	var args []string
	for _, f := range files {
		if isTestModule(f) || named[f] {
			args = append(args, task.ShellQuote(f))
		}
	}
	if len(args) == 0 {
		// No test module among them (e.g. only conftest.py changed): let
		// pytest collect the whole suite rather than run nothing.
		return "python3 -m pytest -rA"
	}
	return "python3 -m pytest -rA " + strings.Join(args, " ")
}

func isTestModule(p string) bool {
	base := path.Base(p)
	if !strings.HasSuffix(base, ".py") || base == "conftest.py" || base == "__init__.py" {
		return false
	}
	if strings.HasPrefix(base, "test") || strings.HasSuffix(base, "_test.py") {
		return true
	}
	for _, d := range strings.Split(path.Dir(p), "/") {
		if d == "tests" || d == "test" || d == "testing" {
			return true // Django-style tests/app/tests.py, models.py beside them
		}
	}
	return false
}

// union is a followed by the names of b not in a, without repeats.
func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range [][]string{a, b} {
		for _, s := range l {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// git runs git in dir; the error carries git's own message.
func git(ctx context.Context, dir string, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[:2000] + " ..."
		}
		return out, fmt.Errorf("git %s: %w: %s", args[0], err, msg)
	}
	return out, nil
}
