package reward

import (
	"fmt"
	"path"
	"strings"

	"github.com/verisim/verisim/internal/pathglob"
)

// protectGlob is a compiled grade.protect pattern. The rules are
// .gitignore's, which task authors already know: "**" is any number of
// directories, each other element is a path.Match pattern, a pattern
// without a "/" matches a name at any depth, a leading "/" anchors a
// pattern at the workspace root, and a trailing "/" matches directories
// only. A pattern that matches a directory protects everything below it.
type protectGlob struct {
	src     string
	segs    []string
	dirOnly bool
	// anchored is false for a pattern that matches a name at any depth.
	anchored bool
}

func compileProtect(pattern string) (protectGlob, error) {
	p := strings.TrimPrefix(strings.TrimSpace(pattern), "./")
	g := protectGlob{src: pattern}
	if strings.HasSuffix(p, "/") {
		g.dirOnly = true
		p = strings.TrimRight(p, "/")
	}
	g.anchored = strings.Contains(p, "/")
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return g, fmt.Errorf("protect pattern %q: empty", pattern)
	}
	g.segs = strings.Split(p, "/")
	for _, s := range g.segs {
		if s == "" || s == "." || s == ".." {
			return g, fmt.Errorf("protect pattern %q: element %q", pattern, s)
		}
		if _, err := path.Match(s, ""); err != nil {
			return g, fmt.Errorf("protect pattern %q: %w", pattern, err)
		}
	}
	if !g.anchored {
		g.segs = append([]string{"**"}, g.segs...)
	}
	return g, nil
}

// match reports whether the clean, slash-separated relative path name is
// protected: matched itself or through one of its parent directories.
func (g protectGlob) match(name string) bool {
	if name == "" || name == "." || strings.HasPrefix(name, "../") || name == ".." || path.IsAbs(name) {
		return false
	}
	segs := strings.Split(name, "/")
	for n := len(segs); n >= 1; n-- {
		if n == len(segs) && g.dirOnly {
			continue
		}
		if pathglob.MatchElems(g.segs, segs[:n]) {
			return true
		}
	}
	return false
}

// within reports whether a file the pattern protects could lie below the
// directory dir, as far as the pattern alone says: "tests/**" lies below
// "tests", but "*_test.go", which may be anywhere, is not taken to lie
// below every directory (that would make "rm -rf build" tampering).
func (g protectGlob) within(dir string) bool {
	if !g.anchored || dir == "" || dir == "." || strings.HasPrefix(dir, "..") || path.IsAbs(dir) {
		return false
	}
	ds := strings.Split(dir, "/")
	for i, d := range ds {
		if i >= len(g.segs) {
			return false
		}
		if g.segs[i] == "**" {
			// Only past a fixed prefix: "**/*_test.go" is not taken to lie
			// below every directory.
			return i > 0
		}
		if ok, _ := path.Match(g.segs[i], d); !ok {
			return false
		}
	}
	return len(g.segs) > len(ds)
}

// protectSet is the protected part of a workspace: patterns plus the exact
// paths the hidden tests occupy (workspace-relative, or absolute when the
// tests go outside the workspace).
type protectSet struct {
	globs []protectGlob
	paths []string
}

func newProtectSet(patterns, paths []string) (protectSet, error) {
	var ps protectSet
	for _, p := range patterns {
		g, err := compileProtect(p)
		if err != nil {
			return ps, err
		}
		ps.globs = append(ps.globs, g)
	}
	ps.paths = paths
	return ps, nil
}

// matchGlobs reports whether a pattern protects name.
func (ps protectSet) matchGlobs(name string) bool {
	for _, g := range ps.globs {
		if g.match(name) {
			return true
		}
	}
	return false
}

// protects reports whether the file p (clean: workspace-relative, or
// absolute outside the workspace) is protected.
func (ps protectSet) protects(p string) bool {
	if ps.matchGlobs(p) {
		return true
	}
	for _, t := range ps.paths {
		if t == p {
			return true
		}
	}
	return false
}

// covers is protects, or else p is a directory holding a protected path,
// for commands that act on whole trees (rm -r, mv, chmod -R).
func (ps protectSet) covers(p string) bool {
	if ps.protects(p) {
		return true
	}
	if p == "." || p == "/" || p == "" {
		return false
	}
	for _, t := range ps.paths {
		if strings.HasPrefix(t, p+"/") {
			return true
		}
	}
	for _, g := range ps.globs {
		if g.within(p) {
			return true
		}
	}
	return false
}
