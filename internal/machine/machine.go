// Package machine assembles a developer's machine from its parts: an image
// (the operating system), a persona (the person who uses it) and optionally a
// repository checked out in the persona's workspace. The result is a
// sandbox.Spec any backend can start.
//
// Persona layers are cached per persona and image; a workspace layer is made
// for each machine and is owned by the sandbox (deleted with it, or kept by
// its snapshots). Builder is safe for concurrent use.
package machine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/verisim/verisim/internal/image"
	"github.com/verisim/verisim/internal/persona"
	"github.com/verisim/verisim/internal/sandbox"
)

// Builder turns machine descriptions into specs, keeping generated layers
// under a directory.
type Builder struct {
	dir    string
	caches string // layers that depend only on the toolchain and user
}

// Option configures a Builder.
type Option func(*Builder)

// WithCaches keeps the layers that hold toolchain caches (see WarmGoCache)
// in dir instead, so that several builders, and processes, share them.
func WithCaches(dir string) Option { return func(b *Builder) { b.caches = dir } }

// NewBuilder keeps generated layers in dir (for example <state>/layers).
func NewBuilder(dir string, opts ...Option) *Builder {
	b := &Builder{dir: dir, caches: dir}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Machine describes one developer machine.
type Machine struct {
	Image   *image.Image
	Persona *persona.Persona
	// Repo is a git checkout on the host to clone into the persona's
	// workspace; "" for none.
	Repo string
	// RepoName is the workspace directory's name (default: Repo's or
	// View's base name).
	RepoName string
	// View is a host directory shown copy-on-write as the persona's
	// workspace, instead of a clone: the machine sees it as it is,
	// uncommitted changes included, and what it changes stays in the
	// machine. The persona's user takes the directory owner's uid and gid,
	// so that the files are the user's own, as on a developer's machine; a
	// directory owned by root is refused. Not with Repo.
	View string
	// WarmGoCache gives the user a Go build cache already holding the
	// compiled standard library, as a developer's machine has, when the
	// image's Go toolchain is the host's (see goCacheLayer). The first
	// machine built this way waits for the cache to be filled once.
	WarmGoCache bool
	Limits      sandbox.Limits
	Keep        bool
}

// ErrRepo marks a repository that cannot be placed.
var ErrRepo = errors.New("bad repository")

// Spec builds the layers the machine needs and returns its spec. On error
// nothing it made is left behind.
func (b *Builder) Spec(ctx context.Context, m Machine) (_ sandbox.Spec, retErr error) {
	p := m.Persona
	if p == nil {
		p = persona.Default()
	}
	if m.Image == nil {
		return sandbox.Spec{}, fmt.Errorf("machine has no image")
	}
	var view sandbox.View
	if m.View != "" {
		if m.Repo != "" {
			return sandbox.Spec{}, errors.New("a machine has a repository or a view, not both")
		}
		var err error
		if view, p, err = viewOf(m.View, m.RepoName, p); err != nil {
			return sandbox.Spec{}, err
		}
	}
	pl, err := b.personaLayer(m.Image, p)
	if err != nil {
		return sandbox.Spec{}, err
	}
	user := p.User()
	// A cached layer was written by another process: take the groups from
	// its /etc/group rather than from the persona's memory of writing it.
	groups, err := memberOf(filepath.Join(pl, "etc", "group"), user.Name)
	if err != nil {
		return sandbox.Spec{}, err
	}
	user.Groups = append([]uint32{user.GID}, groups...)
	spec := sandbox.Spec{
		Layers:   append([]string{pl}, m.Image.Layers...),
		Binds:    m.Image.Binds,
		Hostname: p.Hostname,
		User:     user,
		Env:      p.Env(),
		Dir:      p.Home,
		Limits:   m.Limits,
		Keep:     m.Keep,
	}
	if view.Source != "" {
		spec.Views = []sandbox.View{view}
		spec.Dir = view.Target
	}
	if m.WarmGoCache {
		gl, err := b.goCacheLayer(ctx, m.Image, p, pl)
		if err != nil {
			return sandbox.Spec{}, err
		}
		if gl != "" {
			spec.Layers = append([]string{gl}, spec.Layers...)
		}
	}
	if m.Repo != "" {
		ws := filepath.Join(b.dir, "ws-"+randomID())
		defer func() {
			if retErr != nil {
				os.RemoveAll(ws)
			}
		}()
		if err := os.MkdirAll(ws, 0o755); err != nil {
			return sandbox.Spec{}, err
		}
		src, err := filepath.Abs(m.Repo)
		if err != nil {
			return sandbox.Spec{}, err
		}
		dir, err := persona.PlaceRepo(ctx, src, ws, p, m.RepoName)
		if err != nil {
			return sandbox.Spec{}, fmt.Errorf("%w: %w", ErrRepo, err)
		}
		spec.Layers = append([]string{ws}, spec.Layers...)
		spec.OwnedLayers = []string{ws}
		spec.Dir = dir
	}
	return spec, nil
}

// viewOf resolves a view of the host directory dir as p's workspace, and
// the persona as the directory's owner.
func viewOf(dir, name string, p *persona.Persona) (sandbox.View, *persona.Persona, error) {
	src, err := filepath.Abs(dir)
	if err != nil {
		return sandbox.View{}, nil, err
	}
	fi, err := os.Stat(src)
	switch {
	case err != nil:
		return sandbox.View{}, nil, fmt.Errorf("%w: %v", ErrRepo, err)
	case !fi.IsDir():
		return sandbox.View{}, nil, fmt.Errorf("%w: %s is not a directory", ErrRepo, src)
	}
	if name == "" {
		name = filepath.Base(src)
	}
	if uid, gid, ok := owner(fi); ok {
		if uid == 0 {
			return sandbox.View{}, nil, fmt.Errorf("%w: %s belongs to root, so the machine's user could not change it; use a directory a user owns", ErrRepo, src)
		}
		if gid == 0 { // a user's file in root's group: keep the persona's own group
			gid = int(p.GID)
		}
		if uint32(uid) != p.UID || uint32(gid) != p.GID {
			q := *p
			q.UID, q.GID = uint32(uid), uint32(gid)
			p = &q
		}
	}
	return sandbox.View{Source: src, Target: p.Workspace(name)}, p, nil
}

// personaLayer returns the cached layer for p over img, building it if
// needed. The key covers the layer format, the persona and the image's
// account files, which the layer merges.
func (b *Builder) personaLayer(img *image.Image, p *persona.Persona) (string, error) {
	data, err := p.Marshal()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "format %d\x00", persona.LayerFormat)
	h.Write(data)
	for _, f := range []string{"/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow"} {
		c, err := img.ReadFile(f)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("read %s from image: %w", f, err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(c))
		h.Write(c)
	}
	dir := filepath.Join(b.dir, "persona-"+hex.EncodeToString(h.Sum(nil))[:16])
	if cacheHit(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return "", err
	}
	tmp := tempName(dir)
	defer os.RemoveAll(tmp)
	if err := p.WriteLayer(tmp, img.ReadFile); err != nil {
		return "", fmt.Errorf("build persona layer: %w", err)
	}
	// Directories the persona owns whole (/home) hide the image's.
	for _, d := range p.OpaqueDirs() {
		if err := markOpaque(filepath.Join(tmp, d)); err != nil {
			return "", fmt.Errorf("build persona layer: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process may have built the same layer first.
		if _, serr := os.Stat(dir); serr == nil {
			return dir, nil
		}
		return "", fmt.Errorf("build persona layer: %w", err)
	}
	return dir, nil
}

// cacheHit reports whether the cached layer dir exists, and marks it used
// now: its modification time is when a machine last used it, by which
// "verisim sandbox gc" tells a cache in use from one left behind (a
// persona changed, an older layer format, another Go release).
//
// Marking is the check: a layer gc has just moved aside fails it, and one
// marked before gc moves it is seen by gc as in use and put back. A layer
// this user may not mark (another user's) is a hit when it exists.
func cacheHit(dir string) bool {
	now := time.Now()
	err := os.Chtimes(dir, now, now)
	if errors.Is(err, fs.ErrPermission) {
		_, err = os.Stat(dir)
	}
	return err == nil
}

// memberOf lists the gids of the groups in an /etc/group file that name
// user as a member.
func memberOf(groupFile, user string) ([]uint32, error) {
	b, err := os.ReadFile(groupFile)
	if err != nil {
		return nil, fmt.Errorf("read persona groups: %w", err)
	}
	var out []uint32
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) != 4 {
			continue
		}
		for _, m := range strings.Split(f[3], ",") {
			if m == user {
				if gid, err := strconv.ParseUint(f[2], 10, 32); err == nil {
					out = append(out, uint32(gid))
				}
			}
		}
	}
	return out, nil
}

// tempName names the directory a layer is built in before it is renamed
// to dir: "<dir>.tmp-<pid>-<random>", so that "verisim sandbox gc" leaves
// it alone while this process lives, however long the build takes.
func tempName(dir string) string {
	return dir + ".tmp-" + strconv.Itoa(os.Getpid()) + "-" + randomID()
}

func randomID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
