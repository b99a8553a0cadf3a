package persona

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/verisim/verisim/internal/fstree"
)

// PlaceRepo clones the git checkout at src into layerDir at
// p.Workspace(repoName), as if the persona had cloned it from its origin
// some time ago and pulled a few times since, and returns the workspace
// path inside the sandbox. An empty repoName means src's base name.
//
// The clone holds the history of src's HEAD and nothing newer: remote
// branches and tags that are not ancestors of HEAD are left out, so a
// checkout of an old commit does not carry its future. Uncommitted changes
// and untracked files of src are not copied; submodules are not checked
// out. The origin remote is src's own origin when that is a network URL
// (credentials removed), otherwise git@github.com:<user>/<repo>.git.
// Reflogs, FETCH_HEAD and ORIG_HEAD tell the clone-and-pull story in the
// persona's name; no file under the clone mentions src or layerDir. File
// modification times are those of the clone or pull that last wrote them.
//
// When layerDir already holds the persona's ~/.bash_history (from
// WriteLayer) and the persona has no history of its own, the history is
// rewritten to be about this repository.
//
// Only git repositories are accepted: a plain directory has no history to
// make the checkout look cloned, so it is an error. The destination must
// not exist; on error nothing is left in layerDir.
func PlaceRepo(ctx context.Context, src, layerDir string, p *Persona, repoName string) (_ string, retErr error) {
	if repoName == "" {
		repoName = filepath.Base(filepath.Clean(src))
	}
	if repoName == "." || repoName == ".." || repoName == "/" || strings.ContainsAny(repoName, "/\\:\x00\n") || strings.HasPrefix(repoName, "-") {
		return "", fmt.Errorf("repository name %q is not a single directory name; pass e.g. myservice", repoName)
	}
	fi, err := os.Stat(src)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("repo path %s does not exist; pass a git checkout with --repo", src)
	case err != nil:
		return "", fmt.Errorf("repo path %s: %w", src, err)
	case !fi.IsDir():
		return "", fmt.Errorf("repo path %s is not a directory; pass a git checkout with --repo", src)
	}
	bin, err := exec.LookPath("git")
	if err != nil {
		return "", fmt.Errorf("placing a repository needs the git binary: %w", err)
	}
	g := gitCmd{bin: bin}
	s, err := inspectSource(ctx, g, src, p, repoName)
	if err != nil {
		return "", err
	}

	ws := p.Workspace(repoName)
	dst := filepath.Join(layerDir, filepath.FromSlash(ws))
	if _, err := os.Lstat(dst); err == nil {
		return "", fmt.Errorf("workspace %s already exists in layer %s; place each repository once", ws, layerDir)
	}
	now := p.now()
	plan := p.planClone(s, now)

	madeDirs, err := p.makeParents(layerDir, path.Dir(ws))
	defer func() {
		if retErr != nil {
			for i := len(madeDirs) - 1; i >= 0; i-- {
				os.Remove(madeDirs[i])
			}
		}
	}()
	if err != nil {
		return "", err
	}
	parent := filepath.Dir(dst)
	parentInfo, err := os.Stat(parent)
	if err != nil {
		return "", fmt.Errorf("stat workspace parent: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+repoName+".clone-")
	if err != nil {
		return "", fmt.Errorf("create clone directory: %w", err)
	}
	defer func() {
		if retErr != nil {
			os.RemoveAll(tmp)
			os.RemoveAll(dst)
			if !slices.Contains(madeDirs, parent) {
				setTimes(parent, parentInfo.ModTime())
			}
		}
	}()

	if err := p.clone(ctx, g, s, plan, tmp); err != nil {
		return "", fmt.Errorf("clone %s: %w", src, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", fmt.Errorf("move clone into place: %w", err)
	}
	// The clone added an entry to its parent at the clone's time.
	parentTime := plan.events[0].at
	if parentInfo.ModTime().After(parentTime) && !slices.Contains(madeDirs, parent) {
		parentTime = parentInfo.ModTime()
	}
	for _, d := range append(madeDirs, parent) {
		if err := setTimes(d, parentTime); err != nil {
			return "", fmt.Errorf("set workspace parent times: %w", err)
		}
	}
	if err := p.rewriteHistory(layerDir, s.facts); err != nil {
		return "", err
	}
	return ws, nil
}

// source is what PlaceRepo learnt about src.
type source struct {
	dir    string // absolute, symlinks resolved
	head   string // commit id of HEAD
	branch string
	url    string // origin as the clone will know it
	// chain is HEAD's first-parent history, newest first (at most 200).
	chain []commitTime
	// refs are src's branches and tags whose commits HEAD contains.
	refs  []srcRef
	facts *repoFacts
}

type commitTime struct {
	id string
	at time.Time
}

type srcRef struct {
	name   string // refname in src
	id     string // object the ref points at
	peeled string // commit of an annotated tag, "" otherwise
	at     time.Time
}

func inspectSource(ctx context.Context, g gitCmd, src string, p *Persona, repoName string) (*source, error) {
	abs, err := filepath.Abs(src)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("repo path %s: %w", src, err)
	}
	top, err := g.out(ctx, abs, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("repo path %s is not a git checkout (%v); pass the top directory of a git clone with --repo", src, err)
	}
	if top != abs {
		return nil, fmt.Errorf("repo path %s is inside the git checkout %s; pass the checkout's top directory with --repo", src, top)
	}
	s := &source{dir: abs}
	if s.head, err = g.out(ctx, abs, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err != nil {
		return nil, fmt.Errorf("repo path %s has no commits; commit something first", src)
	}
	s.branch = cloneBranch(ctx, g, abs)
	origin, _ := g.out(ctx, abs, "config", "--get", "remote.origin.url")
	s.url = publicURL(origin)
	if s.url == "" {
		s.url = fmt.Sprintf("git@github.com:%s/%s.git", p.UserName, repoName)
	}

	log, err := g.out(ctx, abs, "log", "--first-parent", "--max-count=200", "--format=%H %ct", s.head)
	if err != nil {
		return nil, err
	}
	for _, line := range lines(log) {
		id, ts, _ := strings.Cut(line, " ")
		sec, _ := strconv.ParseInt(ts, 10, 64)
		s.chain = append(s.chain, commitTime{id, time.Unix(sec, 0)})
	}

	refs, err := g.out(ctx, abs, "for-each-ref", "--merged", s.head,
		"--format=%(refname) %(objectname) %(*objectname) %(creatordate:unix)",
		"refs/remotes/origin", "refs/tags")
	if err != nil {
		return nil, err
	}
	for _, line := range lines(refs) {
		f := strings.Fields(line)
		r := srcRef{name: f[0], id: f[1]}
		if len(f) == 4 {
			r.peeled = f[2]
		}
		sec, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
		r.at = time.Unix(sec, 0)
		if r.name != "refs/remotes/origin/HEAD" && mentionsTell(r.name) == "" {
			s.refs = append(s.refs, r)
		}
	}

	files, err := g.out(ctx, abs, "ls-tree", "-r", "--name-only", "-z", s.head)
	if err != nil {
		return nil, err
	}
	s.facts = p.describeRepo(repoName, s, strings.Split(strings.TrimRight(files, "\x00"), "\x00"))
	return s, nil
}

// conventionalBranches are names a default branch has in the wild.
var conventionalBranches = []string{"main", "master", "develop", "trunk"}

// cloneBranch is the branch the clone has checked out. src's own branch is
// used when it looks like one a remote would have (a conventional default
// or one src's origin has); a branch a tool made for the occasion would be
// a tell, so it gives way to origin's default branch, then to main.
func cloneBranch(ctx context.Context, g gitCmd, dir string) string {
	exists := func(ref string) bool {
		_, err := g.out(ctx, dir, "rev-parse", "--verify", "-q", ref)
		return err == nil
	}
	if b, err := g.out(ctx, dir, "symbolic-ref", "-q", "--short", "HEAD"); err == nil && b != "" && mentionsTell(b) == "" {
		if slices.Contains(conventionalBranches, b) || exists("refs/remotes/origin/"+b) {
			return b
		}
	}
	if b, err := g.out(ctx, dir, "symbolic-ref", "-q", "--short", "refs/remotes/origin/HEAD"); err == nil {
		if b = strings.TrimPrefix(b, "origin/"); b != "" && b != "HEAD" && mentionsTell(b) == "" {
			return b
		}
	}
	for _, b := range conventionalBranches {
		if exists("refs/heads/" + b) {
			return b
		}
	}
	return "main"
}

// publicURL is raw if it names a network remote, without credentials;
// "" for local paths, which would point back at the host.
func publicURL(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Host != "" {
		switch u.Scheme {
		case "https", "http", "ssh", "git":
			if u.Scheme != "ssh" {
				u.User = nil
			} else if u.User != nil {
				u.User = url.User(u.User.Username())
			}
			return u.String()
		}
		return ""
	}
	// scp-like: [user@]host:path, where host has no slash.
	if host, rest, ok := strings.Cut(raw, ":"); ok && !strings.Contains(host, "/") && rest != "" && !strings.HasPrefix(rest, "//") {
		return raw
	}
	return ""
}

// event is one step of the clone's story: the clone, then pulls.
type event struct {
	commit commitTime
	at     time.Time
}

// clonePlan is the story PlaceRepo tells: which refs the clone has, and
// when each clone or pull happened.
type clonePlan struct {
	events []event
	packed []srcRef // refs as of the clone, for packed-refs
	loose  []srcRef // tags fetched by later pulls
	others []srcRef // other remote branches (for FETCH_HEAD)
}

// planClone picks the commits the persona cloned and pulled at, along
// HEAD's first-parent history, and when. It never goes before the
// account existed nor after now, when the commits allow.
func (p *Persona) planClone(s *source, now time.Time) clonePlan {
	r := p.rand("clone:" + s.facts.name)
	earliest := p.accountCreated(now).Add(3 * time.Hour)
	eligible := 0
	for _, c := range s.chain {
		if c.at.Before(earliest) {
			break
		}
		eligible++
	}
	var points []int // indices into s.chain, oldest first
	if eligible >= 2 {
		hi := min(eligible-1, 60)
		// At least one pull: a checkout only ever cloned has every file
		// stamped in the same second, which is what an extracted archive
		// looks like; someone working in a repository has pulled since.
		pulls := 1 + r.IntN(min(4, hi))
		chosen := r.Perm(hi)[:pulls]
		for _, c := range chosen {
			points = append(points, c+1)
		}
		sort.Sort(sort.Reverse(sort.IntSlice(points)))
	}
	points = append(points, 0)

	var plan clonePlan
	prev := time.Time{}
	for i, idx := range points {
		c := s.chain[idx]
		lo := latest(c.at.Add(time.Minute), prev.Add(time.Minute), earliest)
		// Origin stayed at c until the next commit landed; a clone or pull
		// that got c happened before that.
		hi := now.Add(-10 * time.Minute)
		if idx > 0 {
			hi = s.chain[idx-1].at
		}
		if i == len(points)-1 {
			hi = minTime(hi, lo.Add(5*24*time.Hour))
		}
		at := between(r, lo, hi)
		plan.events = append(plan.events, event{commit: c, at: at})
		prev = at
	}

	cloned, last := plan.events[0].at, plan.events[len(plan.events)-1].at
	for _, ref := range s.refs { // sorted by name, as for-each-ref lists them
		if strings.HasPrefix(ref.name, "refs/tags/") {
			if !ref.at.After(cloned) {
				plan.packed = append(plan.packed, ref)
			} else if !ref.at.After(last) {
				plan.loose = append(plan.loose, ref)
			}
			continue
		}
		name := strings.TrimPrefix(ref.name, "refs/remotes/origin/")
		if name == s.branch || ref.at.After(cloned) {
			continue
		}
		plan.others = append(plan.others, srcRef{name: name, id: ref.id, at: ref.at})
	}
	return plan
}

func (p *Persona) clone(ctx context.Context, g gitCmd, s *source, plan clonePlan, dir string) error {
	head := plan.events[len(plan.events)-1].commit.id
	if _, err := g.out(ctx, dir, "init", "--quiet", "--initial-branch="+s.branch); err != nil {
		return err
	}
	// Fetch exactly the refs the clone keeps, so that no object newer than
	// HEAD comes along.
	var specs []string
	specs = append(specs, "+"+head+":refs/remotes/origin/"+s.branch)
	for _, o := range plan.others {
		specs = append(specs, "+"+o.id+":refs/remotes/origin/"+o.name)
	}
	for _, t := range append(append([]srcRef{}, plan.packed...), plan.loose...) {
		specs = append(specs, "+"+t.name+":"+t.name)
	}
	if _, err := g.run(ctx, dir, strings.NewReader(strings.Join(specs, "\n")+"\n"),
		"-c", "fetch.unpackLimit=1", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--stdin", s.dir); err != nil {
		return err
	}
	gitDir := filepath.Join(dir, ".git")
	for _, d := range []string{"refs/remotes", "refs/tags", "logs"} {
		if err := os.RemoveAll(filepath.Join(gitDir, d)); err != nil {
			return err
		}
	}
	if err := p.writeRefs(gitDir, s, plan); err != nil {
		return err
	}
	for _, kv := range [][2]string{
		{"remote.origin.url", s.url},
		{"remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"},
		{"branch." + s.branch + ".remote", "origin"},
		{"branch." + s.branch + ".merge", "refs/heads/" + s.branch},
	} {
		if _, err := g.out(ctx, dir, "config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	if _, err := g.out(ctx, dir, "read-tree", "--reset", "-u", "HEAD"); err != nil {
		return err
	}
	meta, err := p.cloneMeta(ctx, g, dir, s.facts.name, plan)
	if err != nil {
		return err
	}
	if err := meta.applyMeta(dir); err != nil {
		return err
	}
	// Record the final owners and times in the index, so git sees a clean
	// tree without rewriting it; then put the index's own metadata back.
	if _, err := g.out(ctx, dir, "update-index", "-q", "--refresh"); err != nil {
		return err
	}
	return tree{"/.git": meta["/.git"], "/.git/index": meta["/.git/index"]}.applyMeta(dir)
}

// writeRefs writes HEAD's branch, the remote-tracking refs, tags, reflogs,
// FETCH_HEAD and ORIG_HEAD as git clone and git pull would have.
func (p *Persona) writeRefs(gitDir string, s *source, plan clonePlan) error {
	first, last := plan.events[0], plan.events[len(plan.events)-1]
	files := map[string]string{}

	originBranch := "refs/remotes/origin/" + s.branch
	packed := []srcRef{{name: originBranch, id: first.commit.id}}
	for _, o := range plan.others {
		packed = append(packed, srcRef{name: "refs/remotes/origin/" + o.name, id: o.id})
	}
	packed = append(packed, plan.packed...)
	sort.Slice(packed, func(i, j int) bool { return packed[i].name < packed[j].name })
	var pr strings.Builder
	pr.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
	for _, ref := range packed {
		pr.WriteString(ref.id + " " + ref.name + "\n")
		if ref.peeled != "" {
			pr.WriteString("^" + ref.peeled + "\n")
		}
	}
	files["packed-refs"] = pr.String()
	files["refs/heads/"+s.branch] = last.commit.id + "\n"
	files["refs/remotes/origin/HEAD"] = "ref: " + originBranch + "\n"
	for _, t := range plan.loose {
		files[t.name] = t.id + "\n"
	}

	zero := strings.Repeat("0", len(first.commit.id))
	clone := p.reflogLine(zero, first.commit.id, first.at, "clone: from "+s.url)
	headLog := clone
	var remoteLog string
	for i := 1; i < len(plan.events); i++ {
		prev, e := plan.events[i-1], plan.events[i]
		headLog += p.reflogLine(prev.commit.id, e.commit.id, e.at, "pull: Fast-forward")
		remoteLog += p.reflogLine(prev.commit.id, e.commit.id, e.at.Add(-time.Second), "pull: fast-forward")
	}
	files["logs/HEAD"] = headLog
	files["logs/refs/heads/"+s.branch] = headLog
	files["logs/refs/remotes/origin/HEAD"] = clone
	if len(plan.events) > 1 {
		files[originBranch] = last.commit.id + "\n"
		files["logs/"+originBranch] = remoteLog
		files["ORIG_HEAD"] = plan.events[len(plan.events)-2].commit.id + "\n"
		fetchURL := fetchHeadURL(s.url)
		fh := last.commit.id + "\t\tbranch '" + s.branch + "' of " + fetchURL + "\n"
		for _, o := range plan.others {
			fh += o.id + "\tnot-for-merge\tbranch '" + o.name + "' of " + fetchURL + "\n"
		}
		files["FETCH_HEAD"] = fh
	}
	for _, name := range sortedKeys(files) {
		full := filepath.Join(gitDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(files[name]), 0o644); err != nil {
			return err
		}
	}
	return os.MkdirAll(filepath.Join(gitDir, "refs", "tags"), 0o755)
}

func (p *Persona) reflogLine(old, new string, at time.Time, msg string) string {
	return fmt.Sprintf("%s %s %s <%s> %d %s\t%s\n", old, new, p.FullName, p.Email, at.Unix(), at.In(p.location()).Format("-0700"), msg)
}

// fetchHeadURL is how git names a remote in FETCH_HEAD: no user, no
// trailing ".git" or slash.
func fetchHeadURL(raw string) string {
	s := raw
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Host != "" {
		u.User = nil
		s = u.String()
	} else if at := strings.Index(s, "@"); at >= 0 && at < strings.Index(s, ":") {
		s = s[at+1:]
	}
	s = strings.TrimSuffix(strings.TrimSuffix(s, "/"), ".git")
	return s
}

// cloneMeta decides the owner, mode and time of every file of the clone.
// A working-tree file was last written by the clone or the pull that last
// changed it; each checkout writes files in index order, a little apart.
func (p *Persona) cloneMeta(ctx context.Context, g gitCmd, dir, name string, plan clonePlan) (tree, error) {
	r := p.rand("clone-times:" + name)
	uid, gid := int(p.UID), int(p.GID)
	written := map[string]time.Time{}

	ls, err := g.out(ctx, dir, "ls-files", "-z")
	if err != nil {
		return nil, err
	}
	indexOrder := strings.Split(strings.TrimRight(ls, "\x00"), "\x00")
	step := map[string]int{}
	for i := 1; i < len(plan.events); i++ {
		changed, err := g.out(ctx, dir, "diff-tree", "-r", "--name-only", "--no-renames", "-z", plan.events[i-1].commit.id, plan.events[i].commit.id)
		if err != nil {
			return nil, err
		}
		for _, f := range strings.Split(strings.TrimRight(changed, "\x00"), "\x00") {
			step[f] = i
		}
	}
	// A clone runs git init, fetches a pack, writes refs at the time its
	// reflog records, then checks files out; a pull fetches, moves refs
	// and checks out what changed.
	first, last := plan.events[0].at, plan.events[len(plan.events)-1].at
	initAt := first.Add(-300*time.Millisecond - time.Duration(r.Int64N(int64(1200*time.Millisecond))))
	cursor := make([]time.Time, len(plan.events))
	for i, e := range plan.events {
		cursor[i] = e.at.Add(5*time.Millisecond + time.Duration(r.Int64N(int64(20*time.Millisecond))))
	}
	for _, f := range indexOrder {
		if f == "" {
			continue
		}
		i := step[f]
		gap := 20*time.Microsecond + time.Duration(r.Int64N(int64(400*time.Microsecond)))
		if r.IntN(50) == 0 {
			gap += time.Duration(r.Int64N(int64(15 * time.Millisecond)))
		}
		cursor[i] = cursor[i].Add(gap)
		written["/"+f] = cursor[i]
	}
	git := func(name string, at time.Time) { written["/.git/"+name] = at }
	for _, f := range []string{"description", "info/", "hooks/", "branches/"} {
		git(f, initAt)
	}
	git("objects/pack/", first.Add(-10*time.Millisecond-time.Duration(r.Int64N(int64(30*time.Millisecond)))))
	for _, f := range []string{"HEAD", "config", "packed-refs", "refs/remotes/origin/HEAD", "logs/refs/remotes/origin/HEAD"} {
		git(f, first)
	}
	for _, f := range []string{"ORIG_HEAD", "logs/HEAD", "refs/heads/", "logs/refs/heads/", "refs/remotes/origin/", "logs/refs/remotes/origin/"} {
		git(f, last)
	}
	git("FETCH_HEAD", last.Add(-300*time.Millisecond-time.Duration(r.Int64N(int64(1200*time.Millisecond)))))
	for _, t := range plan.loose {
		for _, e := range plan.events {
			if !e.at.Before(t.at) {
				git(t.name, e.at)
				break
			}
		}
	}
	// git without nanosecond support treats entries written in the index's
	// own second as racy and rewrites the index on the next status; end
	// the checkout in the next second, as slower checkouts do.
	lastCheckout := cursor[len(cursor)-1]
	git("index", lastCheckout.Truncate(time.Second).Add(time.Second+time.Duration(r.Int64N(int64(300*time.Millisecond)))))

	meta := tree{}
	err = filepath.WalkDir(dir, func(host string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, host)
		inImage := path.Clean("/" + filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		n := &node{uid: uid, gid: gid}
		switch {
		case d.IsDir():
			n.kind, n.mode = kindDir, 0o755
		case d.Type()&fs.ModeSymlink != 0:
			n.kind = kindSymlink
		default:
			n.kind, n.mode = kindFile, normalMode(info.Mode())
		}
		if t, ok := written[inImage]; ok {
			n.mtime = t
		} else if strings.HasPrefix(inImage, "/.git/") && n.kind != kindDir {
			n.mtime = gitFileTime(written, inImage, initAt)
		}
		meta[inImage] = n
		return nil
	})
	if err != nil {
		return nil, err
	}
	meta.resolveDirTimes(first)
	return meta, nil
}

// gitFileTime is the time of a file under .git that the plan did not
// name: that of its closest named directory ("refs/heads/"), else a moment
// after git init.
func gitFileTime(written map[string]time.Time, name string, initAt time.Time) time.Time {
	for dir := path.Dir(name); dir != "/"; dir = path.Dir(dir) {
		if t, ok := written[dir+"/"]; ok {
			return t
		}
	}
	return initAt.Add(time.Duration(len(name)) * 50 * time.Microsecond)
}

// normalMode is the mode git would give a file under umask 022:
// executables 0755, read-only files (objects) 0444, the rest 0644.
func normalMode(m fs.FileMode) fs.FileMode {
	mode := fs.FileMode(0o644)
	if m&0o111 != 0 {
		mode = 0o755
	}
	if m&0o200 == 0 {
		mode &^= 0o222
	}
	return mode
}

// makeParents creates the directories of dir (a path inside the image)
// missing from layerDir. Those inside the home belong to the persona.
func (p *Persona) makeParents(layerDir, dir string) ([]string, error) {
	var made []string
	cur := "/"
	var own fstree.Owner
	for _, elem := range strings.Split(strings.Trim(dir, "/"), "/") {
		if elem == "" {
			continue
		}
		cur = path.Join(cur, elem)
		host := filepath.Join(layerDir, filepath.FromSlash(cur))
		if _, err := os.Lstat(host); err == nil {
			continue
		}
		mode, uid, gid := fs.FileMode(0o755), 0, 0
		if cur == p.Home || strings.HasPrefix(cur, p.Home+"/") {
			uid, gid = int(p.UID), int(p.GID)
			if cur == p.Home {
				mode = 0o750
			}
		}
		if err := os.Mkdir(host, mode); err != nil {
			return made, fmt.Errorf("create %s in layer: %w", cur, err)
		}
		made = append(made, host)
		if err := os.Chmod(host, mode); err != nil {
			return made, err
		}
		if err := own.Lchown(host, uid, gid); err != nil {
			return made, err
		}
	}
	return made, nil
}

// rewriteHistory makes an existing generated ~/.bash_history in the layer
// about repo, keeping the file's owner, mode and time.
func (p *Persona) rewriteHistory(layerDir string, facts *repoFacts) error {
	host := filepath.Join(layerDir, filepath.FromSlash(p.Home), ".bash_history")
	info, err := os.Lstat(host)
	if err != nil || !info.Mode().IsRegular() || len(p.History) > 0 {
		return nil
	}
	data, ok := p.historyFile(facts)
	if !ok {
		return nil
	}
	if err := os.WriteFile(host, data, info.Mode().Perm()); err != nil {
		return fmt.Errorf("rewrite shell history: %w", err)
	}
	return setTimes(host, info.ModTime())
}

var sourceExt = map[string][]string{
	"go":     {".go"},
	"python": {".py"},
	"node":   {".ts", ".tsx", ".js", ".jsx"},
	"rust":   {".rs"},
}

// describeRepo gathers the repository facts the shell history uses.
func (p *Persona) describeRepo(name string, s *source, files []string) *repoFacts {
	f := &repoFacts{name: name, url: s.url, branch: s.branch, dir: p.tildePath(p.Workspace(name))}
	has := map[string]bool{}
	for _, file := range files {
		has[file] = true
	}
	switch {
	case has["go.mod"]:
		f.lang = "go"
	case has["Cargo.toml"]:
		f.lang = "rust"
	case has["package.json"]:
		f.lang = "node"
	case has["pyproject.toml"] || has["setup.py"] || has["requirements.txt"]:
		f.lang = "python"
	case has["Makefile"]:
		f.lang = "make"
	}
	skip := regexp.MustCompile(`(^|/)(vendor|node_modules|third_party|testdata|\.[^/]+)/`)
	pkgs := map[string]bool{}
	for _, file := range files {
		if skip.MatchString(file) {
			continue
		}
		ext := path.Ext(file)
		if f.lang == "" || slices.Contains(sourceExt[f.lang], ext) {
			f.files = append(f.files, file)
		}
		switch {
		case f.lang == "go" && ext == ".go" && path.Dir(file) != ".":
			pkgs[path.Dir(file)] = true
		case f.lang == "python" && strings.HasPrefix(path.Base(file), "test_") && ext == ".py":
			pkgs[file] = true
		}
	}
	if len(f.files) == 0 {
		for _, file := range files {
			if strings.HasSuffix(file, ".md") {
				f.files = append(f.files, file)
			}
		}
	}
	r := p.rand("repo-files:" + name)
	r.Shuffle(len(f.files), func(i, j int) { f.files[i], f.files[j] = f.files[j], f.files[i] })
	f.files = f.files[:min(len(f.files), 12)]
	for pkg := range pkgs {
		f.pkgs = append(f.pkgs, pkg)
	}
	sort.Strings(f.pkgs)
	r.Shuffle(len(f.pkgs), func(i, j int) { f.pkgs[i], f.pkgs[j] = f.pkgs[j], f.pkgs[i] })
	f.pkgs = f.pkgs[:min(len(f.pkgs), 6)]
	return f
}

// gitCmd runs git isolated from the host's configuration: no system or
// global config, no inherited GIT_* variables, so the clone depends only
// on src.
type gitCmd struct{ bin string }

func (g gitCmd) run(ctx context.Context, dir string, stdin *strings.Reader, args ...string) (string, error) {
	full := append([]string{"-c", "safe.directory=*"}, args...)
	cmd := exec.CommandContext(ctx, g.bin, full...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=/nonexistent",
		"XDG_CONFIG_HOME=/nonexistent",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	}
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", subcommand(args), msg)
	}
	return strings.TrimRight(stdout.String(), "\n"), nil
}

func (g gitCmd) out(ctx context.Context, dir string, args ...string) (string, error) {
	return g.run(ctx, dir, nil, args...)
}

// subcommand is the git command args run, for error messages.
func subcommand(args []string) string {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") && (i == 0 || args[i-1] != "-c") {
			return a
		}
	}
	return strings.Join(args, " ")
}

func latest(ts ...time.Time) time.Time {
	out := ts[0]
	for _, t := range ts[1:] {
		if t.After(out) {
			out = t
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
