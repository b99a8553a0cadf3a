package task

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Author is who the synthesised history of a plain tree is written by:
// the persona that owns the machine.
type Author struct {
	Name, Email string
	// Location is the author's time zone (default UTC).
	Location *time.Location
}

// materializeVersion changes when the way trees become repositories does,
// so that old cache entries are not reused.
const materializeVersion = "1"

// Materialize returns a git checkout on the host whose HEAD is t's
// repository at the task's starting state, made under cacheDir and reused
// while the source is unchanged. It returns "" for a task whose repository
// is an empty tree (the workspace is then the user's home).
//
// Plain trees (repo.dir without .git, repo.archive) are copied, scrubbed
// (see Scrub) and given a history of a few commits by author. Git sources
// are cloned at the commit, with the origin remote set to repo.git; their
// history is theirs, so whatever it holds is part of the task.
func Materialize(ctx context.Context, t *Task, cacheDir string, author Author) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", fmt.Errorf("task %s: preparing a repository needs git: %w", t.ID, err)
	}
	if author.Name == "" || author.Email == "" {
		return "", fmt.Errorf("task %s: materialize: author needs a name and an email", t.ID)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	switch {
	case t.Repo.Archive != "":
		return materializeArchive(ctx, t, cacheDir, author)
	case t.Repo.Dir != "":
		src := filepath.Join(t.Dir, t.Repo.Dir)
		if _, err := os.Stat(filepath.Join(src, ".git")); err == nil {
			return materializeGit(ctx, t, cacheDir, src, "HEAD", "")
		}
		return materializeTree(ctx, t, cacheDir, src, author)
	case t.Repo.Git != "":
		src := t.Repo.Clone
		if src == "" {
			src = t.Repo.Git
		}
		return materializeGit(ctx, t, cacheDir, src, t.Repo.Commit, t.Repo.Git)
	}
	return "", fmt.Errorf("task %s: no repository source", t.ID)
}

// materializeTree turns a plain tree into a repository with history.
func materializeTree(ctx context.Context, t *Task, cacheDir, src string, author Author) (string, error) {
	return buildCached(cacheDir, "tree", func(h io.Writer) error {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", materializeVersion, author.Name, author.Email)
		return hashTree(h, src)
	}, func(tmp string) (bool, error) {
		if err := CopyTree(src, tmp); err != nil {
			return false, err
		}
		return commitTree(ctx, tmp, author)
	})
}

func materializeArchive(ctx context.Context, t *Task, cacheDir string, author Author) (string, error) {
	file := filepath.Join(t.Dir, t.Repo.Archive)
	return buildCached(cacheDir, "archive", func(h io.Writer) error {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", materializeVersion, author.Name, author.Email)
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(h, f)
		return err
	}, func(tmp string) (bool, error) {
		if err := unpack(file, tmp); err != nil {
			return false, fmt.Errorf("task %s: repo.archive %s: %w", t.ID, t.Repo.Archive, err)
		}
		if err := hoistSingleDir(tmp); err != nil {
			return false, err
		}
		return commitTree(ctx, tmp, author)
	})
}

// materializeGit clones src at rev; origin, when set, becomes the clone's
// origin remote.
func materializeGit(ctx context.Context, t *Task, cacheDir, src, rev, origin string) (string, error) {
	commit, err := gitOut(ctx, src, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("task %s: commit %s is not in %s; fetch it there first (git -C %s fetch origin %s)", t.ID, rev, src, src, rev)
	}
	branch, _ := gitOut(ctx, src, "symbolic-ref", "--quiet", "--short", "HEAD")
	if branch == "" || rev != "HEAD" {
		branch = "main"
	}
	if origin == "" {
		origin, _ = gitOut(ctx, src, "remote", "get-url", "origin")
	}
	return buildCached(cacheDir, "git", func(h io.Writer) error {
		abs, _ := filepath.Abs(src)
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s", materializeVersion, abs, commit, branch, origin)
		return nil
	}, func(tmp string) (bool, error) {
		if err := os.Remove(tmp); err != nil {
			return false, err
		}
		if _, err := gitOut(ctx, "", "clone", "--quiet", "--no-checkout", "--no-hardlinks", src, tmp); err != nil {
			return false, fmt.Errorf("task %s: clone %s: %w", t.ID, src, err)
		}
		if _, err := gitOut(ctx, tmp, "checkout", "--quiet", "-B", branch, commit); err != nil {
			return false, fmt.Errorf("task %s: check out %s: %w", t.ID, commit, err)
		}
		if origin != "" {
			if _, err := gitOut(ctx, tmp, "remote", "set-url", "origin", origin); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// buildCached returns cacheDir/KIND-HASH, building it with build in a
// temporary directory first when it is not there. build reports false for
// an empty result, recorded so that the next call returns "" too.
func buildCached(cacheDir, kind string, key func(io.Writer) error, build func(tmp string) (bool, error)) (string, error) {
	h := sha256.New()
	if err := key(h); err != nil {
		return "", err
	}
	dir := filepath.Join(cacheDir, kind+"-"+hex.EncodeToString(h.Sum(nil))[:20])
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if _, err := os.Stat(dir + ".empty"); err == nil {
		return "", nil
	}
	tmp := dir + ".tmp-" + randomSuffix()
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	nonEmpty, err := build(tmp)
	if err != nil {
		return "", err
	}
	if !nonEmpty {
		if err := os.WriteFile(dir+".empty", nil, 0o644); err != nil {
			return "", err
		}
		return "", nil
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr == nil {
			return dir, nil // built by another process meanwhile
		}
		return "", err
	}
	return dir, nil
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hashTree feeds the paths, modes and contents of the tree at root to h.
func hashTree(h io.Writer, root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%o\x00", filepath.ToSlash(rel), info.Mode())
		switch {
		case d.Type().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(h, f)
			f.Close()
			return err
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			io.WriteString(h, target)
		}
		return nil
	})
}

// CopyTree copies the regular files, directories and symlinks under src
// into dst (created as needed), keeping permission bits (executable test
// and solution scripts run as they are); sockets and devices are left out.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, data, info.Mode().Perm()|0o600)
		}
		return nil // sockets, devices: not part of a source tree
	})
}

// unpack extracts a tar archive, gzip-compressed or not, into dst. Every
// write goes through an os.Root at dst, so no entry, and no chain of
// symlinks the archive makes, can reach outside it.
func unpack(file, dst string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	var magic [2]byte
	if _, err := io.ReadFull(f, magic[:]); err == nil && magic == [2]byte{0x1f, 0x8b} {
		f.Seek(0, io.SeekStart)
		gz, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		defer gz.Close()
		r = gz
	} else {
		f.Seek(0, io.SeekStart)
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not a readable tar archive: %w", err)
		}
		name := path.Clean("/" + hdr.Name)[1:]
		if name == "" {
			continue
		}
		if err := unpackEntry(root, tr, hdr, name); err != nil {
			return fmt.Errorf("entry %s: %w", hdr.Name, err)
		}
	}
}

func unpackEntry(root *os.Root, tr *tar.Reader, hdr *tar.Header, name string) error {
	switch hdr.Typeflag {
	case tar.TypeDir:
		return root.MkdirAll(name, 0o755)
	case tar.TypeReg:
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		out, err := root.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fs.FileMode(hdr.Mode).Perm()|0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	case tar.TypeSymlink:
		if path.IsAbs(hdr.Linkname) || strings.HasPrefix(path.Clean(path.Join(path.Dir(name), hdr.Linkname)), "..") {
			return fmt.Errorf("links outside the tree (%s)", hdr.Linkname)
		}
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		return root.Symlink(hdr.Linkname, name)
	}
	return nil // hard links, devices, fifos: not part of a source tree
}

// hoistSingleDir moves the contents of dir's only entry up into dir when
// that entry is a directory: archives usually wrap a project in one
// ("project-1.2/").
func hoistSingleDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || !ents[0].IsDir() {
		return err
	}
	inner := filepath.Join(dir, ents[0].Name())
	moved := inner + ".hoist-" + randomSuffix()
	if err := os.Rename(inner, moved); err != nil {
		return err
	}
	sub, err := os.ReadDir(moved)
	if err != nil {
		return err
	}
	for _, e := range sub {
		if err := os.Rename(filepath.Join(moved, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return os.Remove(moved)
}

// commitTree scrubs the tree at dir and makes it a repository whose
// history adds the files a group at a time. It reports false, leaving no
// repository, when the tree holds no file.
func commitTree(ctx context.Context, dir string, a Author) (bool, error) {
	if _, err := Scrub(dir); err != nil {
		return false, err
	}
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	if len(files) == 0 {
		return false, nil
	}
	groups := historyGroups(files)
	if _, err := gitOut(ctx, dir, "init", "--quiet", "--initial-branch=main"); err != nil {
		return false, err
	}
	// The dates: one commit every day or two, ending a few days ago, in
	// working hours, the same for the same tree.
	seed := sha256.Sum256([]byte(strings.Join(files, "\x00")))
	loc := a.Location
	if loc == nil {
		loc = time.UTC
	}
	day := time.Now().In(loc).AddDate(0, 0, -3-2*len(groups))
	day = time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc)
	for i, g := range groups {
		r := binary.BigEndian.Uint16(seed[2*(i%16):])
		day = day.AddDate(0, 0, 1+int(r%2))
		if wd := day.Weekday(); wd == time.Saturday || wd == time.Sunday {
			day = day.AddDate(0, 0, 2)
		}
		when := day.Add(time.Duration(9*3600+int(r)%(9*3600)) * time.Second)
		args := append([]string{"add", "--"}, g.files...)
		if _, err := gitOut(ctx, dir, args...); err != nil {
			return false, err
		}
		stamp := when.Format("2006-01-02T15:04:05-0700")
		env := []string{
			"GIT_AUTHOR_NAME=" + a.Name, "GIT_AUTHOR_EMAIL=" + a.Email, "GIT_AUTHOR_DATE=" + stamp,
			"GIT_COMMITTER_NAME=" + a.Name, "GIT_COMMITTER_EMAIL=" + a.Email, "GIT_COMMITTER_DATE=" + stamp,
		}
		if _, err := gitEnv(ctx, dir, env, "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null", "commit", "--quiet", "--no-verify", "-m", g.message); err != nil {
			return false, err
		}
	}
	return true, nil
}

type group struct {
	message string
	files   []string
}

// historyGroups splits a tree's files into commits the way a project
// grows: the project files first, then each top-level directory's code and
// then its tests, then the loose files at the top.
func historyGroups(files []string) []group {
	sort.Strings(files)
	var meta, rootCode, rootTests []string
	dirs := map[string]*[2][]string{}
	var dirOrder []string
	for _, f := range files {
		top, rest, nested := strings.Cut(f, "/")
		switch {
		case !nested && isProjectFile(f):
			meta = append(meta, f)
		case !nested && isTestFile(f):
			rootTests = append(rootTests, f)
		case !nested:
			rootCode = append(rootCode, f)
		default:
			d, ok := dirs[top]
			if !ok {
				d = &[2][]string{}
				dirs[top] = d
				dirOrder = append(dirOrder, top)
			}
			if isTestFile(rest) || top == "tests" || top == "test" {
				d[1] = append(d[1], f)
			} else {
				d[0] = append(d[0], f)
			}
		}
	}
	var gs []group
	add := func(msg string, fs []string) {
		if len(fs) > 0 {
			gs = append(gs, group{msg, fs})
		}
	}
	add("Initial commit", meta)
	add("Add "+describe(rootCode), rootCode)
	for _, d := range dirOrder {
		add("Add "+d, dirs[d][0])
		add("Add tests for "+d, dirs[d][1])
	}
	add("Add tests", rootTests)
	if len(gs) > 0 && gs[0].message != "Initial commit" {
		gs[0].message = "Initial commit"
	}
	return gs
}

func describe(files []string) string {
	switch len(files) {
	case 0:
		return ""
	case 1:
		return files[0]
	}
	name := strings.TrimSuffix(files[0], path.Ext(files[0]))
	return name + " and friends"
}

func isProjectFile(name string) bool {
	l := strings.ToLower(name)
	for _, p := range []string{"readme", "license", "licence", "copying", "changelog", "contributing"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	switch l {
	case "go.mod", "go.sum", "setup.py", "setup.cfg", "pyproject.toml", "makefile", "gnumakefile",
		".gitignore", ".gitattributes", ".editorconfig", "package.json", "tox.ini", "requirements.txt":
		return true
	}
	return strings.HasPrefix(l, "requirements")
}

func isTestFile(name string) bool {
	base := path.Base(name)
	return strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "test_") && strings.HasSuffix(base, ".py") ||
		strings.HasSuffix(base, "_test.py") || strings.HasSuffix(base, ".bats") || strings.HasPrefix(base, "test_") && strings.HasSuffix(base, ".sh")
}

func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	return gitEnv(ctx, dir, nil, args...)
}

func gitEnv(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New("git " + args[0] + ": " + msg)
	}
	return strings.TrimSpace(out.String()), nil
}
