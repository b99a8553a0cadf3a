package reward

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/verisim/verisim/internal/sandbox"
)

// gradeRun is the state of one Run.
type gradeRun struct {
	g       *Grader
	sb      sandbox.Sandbox
	ws      string
	target  string // absolute tests_target
	changes []Change
	notes   []string
	// dirs are workspace-relative directories known to be real
	// directories now.
	dirs map[string]bool
	// want is every protected workspace path and what it must hold (nil:
	// nothing).
	want map[string]*File
	// canaries are the failing tests placed beside the hidden ones.
	canaries []canary
}

// rel returns the workspace-relative form of the absolute path p, and
// whether p is in the workspace.
func (r *gradeRun) rel(p string) (string, bool) {
	if p == r.ws {
		return ".", true
	}
	if rest, ok := strings.CutPrefix(p, r.ws+"/"); ok {
		return rest, true
	}
	return p, false
}

func (r *gradeRun) abs(rel string) string { return path.Join(r.ws, rel) }

func (r *gradeRun) record(p, kind string) { r.changes = append(r.changes, Change{Path: p, Kind: kind}) }

// isMissing reports an error that means nothing is at the path, including
// a parent that is not a directory, or a symbolic link that loops on the
// way (the agent's: ensureParent removes it).
func isMissing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP)
}

// hiddenInWorkspace returns the workspace-relative paths of the hidden
// tests when they are copied into the workspace.
func (r *gradeRun) hiddenInWorkspace() []string {
	base, in := r.rel(r.target)
	if !in {
		return nil
	}
	out := make([]string, len(r.g.tests))
	for i, t := range r.g.tests {
		out[i] = path.Join(base, t.Path)
	}
	return out
}

func (r *gradeRun) restore(ctx context.Context) error {
	r.want = map[string]*File{}
	for p, f := range r.g.originals {
		r.want[p] = &f
	}
	hidden := map[string]*File{}
	for i, p := range r.hiddenInWorkspace() {
		hidden[p] = &r.g.tests[i]
		if _, ok := r.want[p]; ok {
			continue
		}
		f, ok := r.g.testOrig[p]
		if r.g.testOrig == nil {
			var err error
			if f, ok, err = readRepoFile(r.g.repoDir, p); err != nil {
				return fmt.Errorf("original of %s: %w", p, err)
			}
		}
		if ok {
			r.want[p] = &f
		} else {
			r.want[p] = nil
		}
	}
	paths := make([]string, 0, len(r.want))
	for p := range r.want {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if err := r.settle(ctx, p, r.want[p], hidden[p]); err != nil {
			return err
		}
	}
	return r.removeAdded(ctx)
}

// settle makes the workspace path p hold orig (nothing, when nil), and
// records how it differed. A path a hidden test will occupy is only
// cleared, since the test overwrites it next; and if it already holds that
// test, an earlier grading put it there, so grading again finds nothing.
func (r *gradeRun) settle(ctx context.Context, p string, orig, hidden *File) error {
	overwritten := hidden != nil
	full := r.abs(p)
	fi, err := r.sb.Stat(ctx, full)
	if isMissing(err) {
		if orig == nil {
			return nil
		}
		r.record(p, ChangeDeleted)
		if overwritten {
			return nil
		}
		return r.put(ctx, p, orig)
	}
	if err != nil {
		return fmt.Errorf("stat %s: %w", full, err)
	}
	if overwritten {
		if kind, err := r.diff(ctx, full, fi, hidden); err != nil || kind == "" {
			return err
		}
	}
	if orig == nil {
		r.record(p, ChangeAdded)
		return r.remove(ctx, full)
	}
	kind, err := r.diff(ctx, full, fi, orig)
	if err != nil || kind == "" {
		return err
	}
	r.record(p, kind)
	if fi.Mode.IsDir() {
		if err := r.remove(ctx, full); err != nil {
			return err
		}
	}
	if overwritten {
		return nil
	}
	return r.put(ctx, p, orig)
}

// diff says how the file at full differs from orig. Of the mode, only the
// executable bits count: they are all git keeps, and how the workspace was
// placed may have changed the others.
func (r *gradeRun) diff(ctx context.Context, full string, fi sandbox.FileInfo, orig *File) (string, error) {
	if orig.Mode&fs.ModeSymlink != 0 {
		if fi.Mode&fs.ModeSymlink == 0 || fi.Link != string(orig.Data) {
			return ChangeModified, nil
		}
		return "", nil
	}
	if !fi.Mode.IsRegular() || fi.Size != int64(len(orig.Data)) {
		// The size alone settles it, without reading what may be a huge
		// file the agent left in a protected path.
		return ChangeModified, nil
	}
	data, err := r.sb.ReadFile(ctx, full)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", full, err)
	}
	if !bytes.Equal(data, orig.Data) {
		return ChangeModified, nil
	}
	if fi.Mode.Perm()&0o111 != orig.Mode.Perm()&0o111 {
		return ChangeMode, nil
	}
	return "", nil
}

// put writes orig at the workspace path p. WriteFile makes the file the
// machine user's, so restored files stay theirs to use.
func (r *gradeRun) put(ctx context.Context, p string, orig *File) error {
	if err := r.ensureParent(ctx, p); err != nil {
		return err
	}
	full := r.abs(p)
	if orig.Mode&fs.ModeSymlink != 0 {
		return r.helper(ctx, nil, "ln", "-sfn", "--", string(orig.Data), full)
	}
	if err := r.sb.WriteFile(ctx, full, orig.Data, orig.Mode.Perm()); err != nil {
		return fmt.Errorf("write %s: %w", full, err)
	}
	return nil
}

// ensureParent makes the parent of the workspace path p a real directory.
// Anything else on the way (a file, or a link that would carry the write
// out of the workspace) is something the agent put there: it is recorded
// and removed.
func (r *gradeRun) ensureParent(ctx context.Context, p string) error {
	dir := path.Dir(p)
	if dir == "." || r.dirs[dir] {
		return nil
	}
	segs := strings.Split(dir, "/")
	for i := range segs {
		a := strings.Join(segs[:i+1], "/")
		if r.dirs[a] {
			continue
		}
		fi, err := r.sb.Stat(ctx, r.abs(a))
		if err == nil && fi.Mode.IsDir() {
			r.dirs[a] = true
			continue
		}
		if err != nil && !isMissing(err) {
			return fmt.Errorf("stat %s: %w", r.abs(a), err)
		}
		if err == nil {
			r.record(a, ChangeAdded)
			if err := r.remove(ctx, r.abs(a)); err != nil {
				return err
			}
		}
		if err := r.mkdirAll(ctx, r.abs(dir)); err != nil {
			return err
		}
		break
	}
	for i := range segs {
		r.dirs[strings.Join(segs[:i+1], "/")] = true
	}
	return nil
}

// removeAdded removes files matching grade.protect that the repository did
// not have. It does not follow links, and leaves .git and node_modules
// alone.
func (r *gradeRun) removeAdded(ctx context.Context) error {
	roots := walkRoots(r.g.protect.globs)
	seen := 0
	for _, root := range roots {
		stack := []string{root}
		if root != "." {
			fi, err := r.sb.Stat(ctx, r.abs(root))
			if isMissing(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("stat %s: %w", r.abs(root), err)
			}
			if !fi.Mode.IsDir() {
				if err := r.removeIfAdded(ctx, root); err != nil {
					return err
				}
				continue
			}
		}
		for len(stack) > 0 {
			dir := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			ents, err := r.sb.ReadDir(ctx, r.abs(dir))
			if isMissing(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read directory %s: %w", r.abs(dir), err)
			}
			for _, e := range ents {
				if seen++; seen > maxWalk {
					r.notes = append(r.notes, fmt.Sprintf("search for added protected files stopped after %d entries", maxWalk))
					return nil
				}
				p := path.Join(dir, e.Name)
				if e.Mode.IsDir() {
					if !skipDir(e.Name) {
						stack = append(stack, p)
					}
					continue
				}
				if err := r.removeIfAdded(ctx, p); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (r *gradeRun) removeIfAdded(ctx context.Context, p string) error {
	if _, ok := r.want[p]; ok || !r.g.protect.matchGlobs(p) {
		return nil
	}
	r.record(p, ChangeAdded)
	return r.remove(ctx, r.abs(p))
}

// walkRoots are the directories to search for files the patterns match:
// the fixed leading directories of anchored patterns, or the whole
// workspace when a pattern matches at any depth.
func walkRoots(globs []protectGlob) []string {
	var roots []string
	for _, g := range globs {
		if !g.anchored {
			return []string{"."}
		}
		i := 0
		for i < len(g.segs)-1 && !strings.ContainsAny(g.segs[i], `*?[\`) {
			i++
		}
		if i == 0 {
			return []string{"."}
		}
		roots = append(roots, strings.Join(g.segs[:i], "/"))
	}
	slices.Sort(roots)
	roots = slices.Compact(roots)
	// Drop roots inside another root.
	out := roots[:0]
	for _, r := range roots {
		if len(out) > 0 && strings.HasPrefix(r, out[len(out)-1]+"/") {
			continue
		}
		out = append(out, r)
	}
	return out
}

func (r *gradeRun) placeTests(ctx context.Context) error {
	for _, t := range r.g.tests {
		full := path.Join(r.target, t.Path)
		if rel, in := r.rel(full); in {
			if err := r.ensureParent(ctx, rel); err != nil {
				return err
			}
		} else {
			fi, err := r.sb.Stat(ctx, full)
			switch {
			case err == nil && fi.Mode.IsDir():
				if err := r.remove(ctx, full); err != nil {
					return err
				}
			case err != nil && !isMissing(err):
				return fmt.Errorf("stat %s: %w", full, err)
			}
			if err := r.ensureDir(ctx, path.Dir(full)); err != nil {
				return err
			}
		}
		if err := r.sb.WriteFile(ctx, full, t.Data, t.Mode.Perm()); err != nil {
			return fmt.Errorf("write %s: %w", full, err)
		}
	}
	if err := r.placeCanaries(ctx); err != nil {
		return err
	}
	return r.sealTests(ctx)
}

// sealTests gives the hidden tests, and the directories that hold them, to
// root, writable by no one else, so that the grade command, run as the
// machine's user, reads them but cannot change or replace them: the
// agent's code runs inside it, bash reads a script as it goes (code that
// rewrote the rest of tests/run.sh in place while bash ran it decided what
// the run reported), and a test runner opens one test file after another
// (code imported by the first could have swapped the next). The
// workspace's own directory stays the user's: a directory of tests in it
// can still be renamed away and replaced, a hole left open, for a
// repository owned by another user breaks git in the tests.
func (r *gradeRun) sealTests(ctx context.Context) error {
	if r.g.grade.User == "root" || len(r.g.tests) == 0 {
		return nil
	}
	files := make([]string, 0, len(r.g.tests)+len(r.canaries))
	for _, t := range r.g.tests {
		files = append(files, path.Join(r.target, t.Path))
	}
	for _, c := range r.canaries {
		files = append(files, c.file)
	}
	var dirs []string
	seen := map[string]bool{}
	// Below the workspace, or below tests_target's parent where the tests
	// go outside it (/tests): never a directory above those.
	stop := path.Dir(r.target)
	if _, in := r.rel(r.target); in {
		stop = r.ws
	}
	for _, f := range files {
		if !strings.HasPrefix(f, stop+"/") {
			continue
		}
		for d := path.Dir(f); d != stop && strings.HasPrefix(d, stop+"/") && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	u := rootUser
	// -h: a hidden test that is a symbolic link is sealed, not its target.
	if err := r.helper(ctx, &u, append([]string{"chown", "-h", "root:root", "--"}, append(files, dirs...)...)...); err != nil {
		return err
	}
	if len(dirs) == 0 {
		return nil
	}
	return r.helper(ctx, &u, append([]string{"chmod", "go-w", "--"}, dirs...)...)
}

// ensureDir makes dir exist. Something else in its place (the agent
// replaced the workspace, or a tests_target parent, with a file or a link)
// is removed and recorded: it must fail the grade, not make grading fail,
// which would read as an infrastructure error and drop the episode.
func (r *gradeRun) ensureDir(ctx context.Context, dir string) error {
	fi, err := r.sb.Stat(ctx, dir)
	if err == nil && fi.Mode.IsDir() {
		return nil
	}
	if err != nil && !isMissing(err) && !errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if err == nil {
		r.record(dir, "added")
		if dir == r.ws || dir == "/" {
			u := rootUser
			if err := r.helper(ctx, &u, "rm", "-f", "--", dir); err != nil {
				return err
			}
		} else if err := r.remove(ctx, dir); err != nil {
			return err
		}
	} else if parent := path.Dir(dir); parent != dir && parent != "/" {
		// A file where a parent should be.
		if err := r.ensureDir(ctx, parent); err != nil {
			return err
		}
	}
	return r.mkdirAll(ctx, dir)
}

// clearRewardFile removes a reward file left before the command runs, so
// that only the command can write one; one the agent wrote is tampering.
// It also makes the file's directory, which Harbor-style commands expect to
// exist.
func (r *gradeRun) clearRewardFile(ctx context.Context) error {
	rf := r.g.grade.RewardFile
	if rf == "" {
		return nil
	}
	full := rf
	if !path.IsAbs(full) {
		full = r.abs(rf)
	}
	switch _, err := r.sb.Stat(ctx, full); {
	case err == nil:
		p, _ := r.rel(full)
		if _, ok := r.want[p]; !ok {
			r.record(p, ChangeAdded)
		}
		if err := r.remove(ctx, full); err != nil {
			return err
		}
	case !isMissing(err):
		return fmt.Errorf("stat %s: %w", full, err)
	}
	return r.ensureDir(ctx, path.Dir(full))
}

// rootUser removes what the agent left: its files may be anyone's.
var rootUser = sandbox.User{Name: "root", Home: "/root"}

func (r *gradeRun) remove(ctx context.Context, full string) error {
	if full == r.ws || full == "/" {
		return fmt.Errorf("refusing to remove %s", full)
	}
	u := rootUser
	return r.helper(ctx, &u, "rm", "-rf", "--", full)
}

// mkdirAll makes dir as the machine's user, so that the grade command may
// write in it; where that user may not (an absolute tests_target such as
// /tests), as root, giving the new directory to the workspace's owner.
func (r *gradeRun) mkdirAll(ctx context.Context, dir string) error {
	if err := r.helper(ctx, nil, "mkdir", "-p", "--", dir); err == nil {
		return nil
	}
	u := rootUser
	if err := r.helper(ctx, &u, "mkdir", "-p", "--", dir); err != nil {
		return err
	}
	return r.helper(ctx, &u, "chown", "--reference="+r.ws, "--", dir)
}

// helpers are the commands the grader runs, by absolute path: a name
// would be looked up in a PATH the agent can write to.
var helpers = map[string]string{"rm": "/bin/rm", "mkdir": "/bin/mkdir", "chown": "/bin/chown", "chmod": "/bin/chmod", "ln": "/bin/ln"}

// helper runs a small command the Sandbox interface has no method for.
func (r *gradeRun) helper(ctx context.Context, u *sandbox.User, args ...string) error {
	var out tailBuffer
	out.max = 4 << 10
	bin, ok := helpers[args[0]]
	if !ok {
		return fmt.Errorf("grader helper %s is not known", args[0])
	}
	env := r.g.Env
	if u != nil && u.UID == 0 {
		env = rootEnv(env)
	}
	cmd := sandbox.Cmd{Args: append([]string{bin}, args[1:]...), Env: env, Dir: "/", User: u, Stdout: &out, Stderr: &out, Timeout: helperTime}
	st, err := r.sb.Run(ctx, cmd)
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	if st.Code != 0 || st.TimedOut {
		return fmt.Errorf("%s: exit %d: %s", strings.Join(args, " "), st.Code, strings.TrimSpace(out.String()))
	}
	return nil
}
