package persona

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("needs the git binary: %v", err)
	}
}

// git runs git in dir as a test helper, isolated from the host's config.
func git(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append([]string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C",
		"GIT_AUTHOR_NAME=Ana Souza", "GIT_AUTHOR_EMAIL=ana@widgets.io",
		"GIT_COMMITTER_NAME=Ana Souza", "GIT_COMMITTER_EMAIL=ana@widgets.io",
	}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// testRepo is a source checkout made by a test.
type testRepo struct {
	dir     string
	commits []string // oldest first, on main
	future  string   // a commit on a branch ahead of main, never to be cloned
}

// makeRepo creates a Go repository with n commits on main, a day apart
// and ending two days before testNow, an annotated tag, a merged branch
// and a branch ahead of main.
func makeRepo(t *testing.T, n int) *testRepo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "widget-src")
	git(t, t.TempDir(), nil, "init", "-q", "-b", "main", dir)
	r := &testRepo{dir: dir}
	write := func(name, content string, mode fs.FileMode) {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(i int, msg string) string {
		at := testNow.Add(-time.Duration(n-i+1) * 24 * time.Hour)
		date := fmt.Sprintf("@%d +0100", at.Unix())
		git(t, dir, nil, "add", "-A")
		git(t, dir, []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}, "commit", "-q", "-m", msg)
		return git(t, dir, nil, "rev-parse", "HEAD")
	}
	write("go.mod", "module example.com/widget\n\ngo 1.22\n", 0o644)
	write("README.md", "# widget\n", 0o644)
	write("scripts/build.sh", "#!/bin/sh\ngo build ./...\n", 0o755)
	if err := os.Symlink("README.md", filepath.Join(dir, "README")); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		write(fmt.Sprintf("internal/part%d/part.go", i), fmt.Sprintf("package part%d\n", i), 0o644)
		write("internal/store/store.go", fmt.Sprintf("package store\n\nconst version = %d\n", i), 0o644)
		r.commits = append(r.commits, commit(i, fmt.Sprintf("change %d", i)))
		if i == 1 {
			date := fmt.Sprintf("GIT_COMMITTER_DATE=@%d +0100", testNow.Add(-time.Duration(n-i)*24*time.Hour).Unix())
			git(t, dir, []string{date}, "tag", "-a", "v0.1.0", "-m", "first release")
			git(t, dir, nil, "branch", "old-feature")
		}
	}
	git(t, dir, nil, "checkout", "-q", "-b", "future")
	write("internal/store/answer.go", "package store\n\nconst answer = 42\n", 0o644)
	r.future = commit(n, "the fix nobody may see")
	git(t, dir, nil, "tag", "future-tag")
	git(t, dir, nil, "checkout", "-q", "main")
	return r
}

func placeTestRepo(t *testing.T, r *testRepo, p *Persona) (layer, clone string) {
	t.Helper()
	layer = writeTestLayer(t, p, ubuntuBase)
	ws, err := PlaceRepo(t.Context(), r.dir, layer, p, "widget")
	if err != nil {
		t.Fatalf("PlaceRepo: %v", err)
	}
	if ws != "/home/maya/src/widget" {
		t.Errorf("workspace = %q", ws)
	}
	return layer, filepath.Join(layer, ws)
}

func TestPlaceRepo(t *testing.T) {
	requireGit(t)
	r := makeRepo(t, 8)
	p := testPersona()
	layer, clone := placeTestRepo(t, r, p)

	// Nothing under the clone may point back at the host.
	needles := [][]byte{[]byte(r.dir), []byte(filepath.Base(r.dir)), []byte(layer), []byte("/tmp/")}
	filepath.WalkDir(clone, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			if st := statT(t, path); st.Uid != 1000 || st.Gid != 1000 {
				t.Errorf("%s owned by %d:%d", path, st.Uid, st.Gid)
			}
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range needles {
			if bytes.Contains(data, n) {
				t.Errorf("%s mentions %q", path, n)
			}
		}
		return nil
	})
	if got := strings.Fields(git(t, clone, nil, "log", "--format=%H", "--reverse")); !slices.Equal(got, r.commits) {
		t.Errorf("clone history = %q, want %q", got, r.commits)
	}
	if got := git(t, clone, nil, "remote", "get-url", "origin"); got != "git@github.com:maya/widget.git" {
		t.Errorf("origin = %q", got)
	}
	if got := git(t, clone, nil, "rev-parse", "--abbrev-ref", "HEAD@{upstream}"); got != "origin/main" {
		t.Errorf("upstream = %q", got)
	}
	if got := git(t, clone, nil, "status", "--porcelain"); got != "" {
		t.Errorf("clone is not clean:\n%s", got)
	}
	if got := git(t, clone, nil, "diff-files", "--name-only"); got != "" {
		t.Errorf("index is stale for:\n%s", got)
	}
	git(t, clone, nil, "fsck", "--no-progress", "--strict")
	if got := git(t, clone, nil, "tag"); got != "v0.1.0" {
		t.Errorf("tags = %q, want only the one HEAD contains", got)
	}
	if err := exec.Command("git", "-C", clone, "-c", "safe.directory=*", "cat-file", "-e", r.future).Run(); err == nil {
		t.Error("the clone holds a commit newer than HEAD")
	}
	reflog := strings.Split(git(t, clone, nil, "reflog", "--format=%gs"), "\n")
	if last := reflog[len(reflog)-1]; last != "clone: from git@github.com:maya/widget.git" {
		t.Errorf("first reflog entry = %q", last)
	}
	for _, e := range reflog[:len(reflog)-1] {
		if e != "pull: Fast-forward" {
			t.Errorf("reflog entry %q after the clone", e)
		}
	}
	if who := git(t, clone, nil, "reflog", "-1", "--format=%gn <%ge>"); who != "Maya Chen <maya.chen@fastmail.com>" {
		t.Errorf("reflog identity = %q", who)
	}

	if fi, err := os.Stat(filepath.Join(clone, "scripts/build.sh")); err != nil || fi.Mode() != 0o755 {
		t.Errorf("build.sh: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(clone, "go.mod")); err != nil || fi.Mode() != 0o644 {
		t.Errorf("go.mod: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(clone, "README")); err != nil || target != "README.md" {
		t.Errorf("README -> %q %v", target, err)
	}

	for _, gone := range []string{"objects/info/alternates", "FETCH_HEAD.lock", "shallow"} {
		if _, err := os.Stat(filepath.Join(clone, ".git", gone)); err == nil {
			t.Errorf(".git/%s exists", gone)
		}
	}

	hist := readLayer(t, layer, "home/maya/.bash_history")
	for _, want := range []string{"git clone git@github.com:maya/widget.git", "cd ~/src/widget", "go test"} {
		if !strings.Contains(hist, want) {
			t.Errorf("history does not mention %q", want)
		}
	}
	if !strings.Contains(hist, "internal/") {
		t.Error("history names no file of the repository")
	}
}

func TestPlaceRepoTimestamps(t *testing.T) {
	requireGit(t)
	r := makeRepo(t, 12)
	p := testPersona()
	layer, clone := placeTestRepo(t, r, p)

	created := p.accountCreated(testNow)
	firstCommit := testNow.Add(-13 * 24 * time.Hour)
	mtimes := map[time.Time]bool{}
	err := filepath.WalkDir(clone, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		m := fi.ModTime()
		if m.After(testNow) || m.Before(created) || m.Before(firstCommit) {
			t.Errorf("%s mtime %v outside [max(account %v, first commit %v), now]", path, m, created, firstCommit)
		}
		mtimes[m] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(mtimes) < 20 {
		t.Errorf("only %d distinct mtimes in the clone", len(mtimes))
	}
	// No working file may be older than the clone, nor newer than the last
	// pull by more than a checkout's few seconds.
	headTime := lastReflogTime(t, clone)
	for _, f := range []string{"go.mod", "internal/store/store.go"} {
		fi, err := os.Stat(filepath.Join(clone, f))
		if err != nil {
			t.Fatal(err)
		}
		if d := fi.ModTime().Sub(headTime); d > 10*time.Second {
			t.Errorf("%s written %v after the last clone or pull", f, d)
		}
	}
	if fi, _ := os.Stat(filepath.Join(clone, "internal/store/store.go")); fi.ModTime().Before(headTime) {
		t.Errorf("store.go, changed by every commit, is older than the last pull (%v < %v)", fi.ModTime(), headTime)
	}
	src, _ := os.Stat(filepath.Join(layer, "home/maya/src"))
	first := firstReflogTime(t, clone)
	if src.ModTime().Truncate(time.Second) != first {
		t.Errorf("~/src mtime %v, want the clone time %v", src.ModTime(), first)
	}
}

// reflogTimes reads HEAD's reflog timestamps, oldest first.
func reflogTimes(t *testing.T, clone string) []time.Time {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(clone, ".git/logs/HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		head, _, _ := strings.Cut(line, "\t")
		f := strings.Fields(head)
		var sec int64
		fmt.Sscan(f[len(f)-2], &sec)
		out = append(out, time.Unix(sec, 0))
	}
	return out
}

func lastReflogTime(t *testing.T, clone string) time.Time {
	ts := reflogTimes(t, clone)
	return ts[len(ts)-1]
}

func firstReflogTime(t *testing.T, clone string) time.Time {
	return reflogTimes(t, clone)[0]
}

func TestPlaceRepoDeterministic(t *testing.T) {
	requireGit(t)
	r := makeRepo(t, 6)
	_, a := placeTestRepo(t, r, testPersona())
	_, b := placeTestRepo(t, r, testPersona())
	sa, sb := snapshot(t, a), snapshot(t, b)
	for name, ra := range sa {
		if strings.HasPrefix(name, ".git/objects/") || name == ".git/index" {
			continue // pack layout and index stat data depend on the run
		}
		rb := sb[name]
		if !ra.mtime.Equal(rb.mtime) || ra.mode != rb.mode || ra.content != rb.content {
			t.Errorf("%s differs between runs: %v %v vs %v %v", name, ra.mtime, ra.mode, rb.mtime, rb.mode)
		}
	}
}

func TestPlaceRepoOrigin(t *testing.T) {
	requireGit(t)
	cases := []struct{ origin, want string }{
		{"https://ana:ghp_secret@github.com/acme/widget.git", "https://github.com/acme/widget.git"},
		{"git@gitlab.com:acme/widget.git", "git@gitlab.com:acme/widget.git"},
		{"ssh://git@github.com/acme/widget.git", "ssh://git@github.com/acme/widget.git"},
		{"/srv/mirrors/widget.git", "git@github.com:maya/widget.git"},
		{"file:///srv/mirrors/widget.git", "git@github.com:maya/widget.git"},
	}
	r := makeRepo(t, 3)
	for _, tc := range cases {
		t.Run(tc.origin, func(t *testing.T) {
			git(t, r.dir, nil, "config", "remote.origin.url", tc.origin)
			_, clone := placeTestRepo(t, r, testPersona())
			if got := git(t, clone, nil, "remote", "get-url", "origin"); got != tc.want {
				t.Errorf("origin = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPlaceRepoDetachedHead(t *testing.T) {
	requireGit(t)
	r := makeRepo(t, 5)
	git(t, r.dir, nil, "checkout", "-q", "--detach", r.commits[2])
	_, clone := placeTestRepo(t, r, testPersona())
	if got := git(t, clone, nil, "rev-parse", "HEAD"); got != r.commits[2] {
		t.Errorf("HEAD = %s, want %s", got, r.commits[2])
	}
	if got := git(t, clone, nil, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Errorf("branch = %q, want main", got)
	}
	for _, newer := range append([]string{r.future}, r.commits[3:]...) {
		if err := exec.Command("git", "-C", clone, "-c", "safe.directory=*", "cat-file", "-e", newer).Run(); err == nil {
			t.Errorf("the clone holds %s, newer than the checked-out commit", newer)
		}
	}
	if got := git(t, clone, nil, "status", "--porcelain"); got != "" {
		t.Errorf("clone is not clean:\n%s", got)
	}
}

// TestPlaceRepoFreshLayer places a repository in a layer WriteLayer did
// not write: the home and workspace directories are made as useradd and
// mkdir would have.
func TestPlaceRepoFreshLayer(t *testing.T) {
	requireGit(t)
	r := makeRepo(t, 3)
	layer := t.TempDir()
	ws, err := PlaceRepo(t.Context(), r.dir, layer, testPersona(), "")
	if err != nil {
		t.Fatal(err)
	}
	if ws != "/home/maya/src/widget-src" {
		t.Errorf("workspace = %q, want the source's base name", ws)
	}
	for _, d := range []struct {
		path     string
		mode     fs.FileMode
		uid, gid uint32
	}{
		{"home", 0o755, 0, 0},
		{"home/maya", 0o750, 1000, 1000},
		{"home/maya/src", 0o755, 1000, 1000},
	} {
		st := statT(t, filepath.Join(layer, d.path))
		if fs.FileMode(st.Mode&0o7777) != d.mode || (os.Geteuid() == 0 && (st.Uid != d.uid || st.Gid != d.gid)) {
			t.Errorf("%s: mode %o owner %d:%d, want %o %d:%d", d.path, st.Mode&0o7777, st.Uid, st.Gid, d.mode, d.uid, d.gid)
		}
	}
	if _, err := os.Stat(filepath.Join(layer, "home/maya/.bash_history")); err == nil {
		t.Error("PlaceRepo wrote a history into a layer that had none")
	}
}

func TestPlaceRepoBranch(t *testing.T) {
	requireGit(t)
	cases := []struct {
		name, checkout, want string
		upstream             bool // src's origin has the branch
	}{
		{"default branch", "main", "main", false},
		{"upstream branch", "feature-x", "feature-x", true},
		{"tool-made branch", "sandbox-prep", "main", false},
		{"local-only branch", "swe-task-1234", "main", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := makeRepo(t, 3)
			if tc.checkout != "main" {
				git(t, r.dir, nil, "checkout", "-q", "-b", tc.checkout, "main")
			}
			if tc.upstream {
				git(t, r.dir, nil, "update-ref", "refs/remotes/origin/"+tc.checkout, "HEAD")
			}
			_, clone := placeTestRepo(t, r, testPersona())
			if got := git(t, clone, nil, "rev-parse", "--abbrev-ref", "HEAD"); got != tc.want {
				t.Errorf("branch = %q, want %q", got, tc.want)
			}
			if got := git(t, clone, nil, "rev-parse", "--abbrev-ref", "HEAD@{upstream}"); got != "origin/"+tc.want {
				t.Errorf("upstream = %q", got)
			}
			if refs := git(t, clone, nil, "for-each-ref", "--format=%(refname)"); strings.Contains(refs, tc.checkout) && tc.checkout != tc.want {
				t.Errorf("the clone has a ref named after src's branch %q:\n%s", tc.checkout, refs)
			}
		})
	}
}

func TestPlaceRepoErrors(t *testing.T) {
	requireGit(t)
	r := makeRepo(t, 2)
	plain := t.TempDir()
	os.WriteFile(filepath.Join(plain, "main.go"), []byte("package main\n"), 0o644)
	empty := filepath.Join(t.TempDir(), "empty")
	git(t, t.TempDir(), nil, "init", "-q", empty)
	missing := filepath.Join(t.TempDir(), "nope")

	cases := []struct {
		name, src, repo string
		prepare         func(layer string)
		want            string
	}{
		{"missing", missing, "x", nil, "repo path " + missing + " does not exist; pass a git checkout with --repo"},
		{"plain directory", plain, "x", nil, "is not a git checkout"},
		{"subdirectory", filepath.Join(r.dir, "internal"), "x", nil, "is inside the git checkout"},
		{"no commits", empty, "x", nil, "has no commits"},
		{"bad name", r.dir, "../x", nil, "not a single directory name"},
		{"exists", r.dir, "widget", func(layer string) {
			os.MkdirAll(filepath.Join(layer, "home/maya/src/widget"), 0o755)
		}, "already exists"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			layer := t.TempDir()
			if tc.prepare != nil {
				tc.prepare(layer)
			}
			before := listDir(t, layer)
			_, err := PlaceRepo(t.Context(), tc.src, layer, testPersona(), tc.repo)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PlaceRepo = %v, want an error saying %q", err, tc.want)
			}
			if after := listDir(t, layer); !slices.Equal(before, after) {
				t.Errorf("PlaceRepo left %q behind", after)
			}
		})
	}
}

// TestPlaceRepoPulled checks, over many seeds, that a repository with
// history to pull from never comes out as a checkout only ever cloned,
// every file stamped in the same second (what the fidelity audit's
// repo-mtimes probe reads as an extracted archive).
func TestPlaceRepoPulled(t *testing.T) {
	requireGit(t)
	r := makeRepo(t, 3)
	for seed := range uint64(16) {
		p := testPersona()
		p.Seed = seed + 1
		_, clone := placeTestRepo(t, r, p)
		mtimes := map[int64]bool{}
		filepath.WalkDir(clone, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				fi, _ := d.Info()
				mtimes[fi.ModTime().Unix()] = true
			}
			return nil
		})
		if len(mtimes) < 2 {
			t.Errorf("seed %d: every file of the clone has the same mtime", p.Seed)
		}
	}
}
