// Package lazyregexp is a regexp.Regexp compiled on first use. Package-level
// regexps compiled at start-up cost every process that links the package,
// and the verisim binary starts once per sandbox (as its init), so patterns
// are compiled only when something matches against them.
package lazyregexp

import (
	"regexp"
	"sync"
)

// Regexp wraps a pattern that compiles on first use. A bad pattern panics
// then, as regexp.MustCompile would at start-up; tests that touch the
// pattern catch it.
type Regexp struct {
	pattern string
	get     func() *regexp.Regexp
}

// New returns a Regexp for pattern.
func New(pattern string) *Regexp {
	return &Regexp{pattern: pattern, get: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })}
}

// Re returns the compiled regexp.
func (r *Regexp) Re() *regexp.Regexp { return r.get() }

func (r *Regexp) MatchString(s string) bool              { return r.get().MatchString(s) }
func (r *Regexp) FindString(s string) string             { return r.get().FindString(s) }
func (r *Regexp) FindStringSubmatch(s string) []string   { return r.get().FindStringSubmatch(s) }
func (r *Regexp) FindAllString(s string, n int) []string { return r.get().FindAllString(s, n) }
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.get().ReplaceAllString(src, repl)
}
func (r *Regexp) Match(b []byte) bool            { return r.get().Match(b) }
func (r *Regexp) FindSubmatch(b []byte) [][]byte { return r.get().FindSubmatch(b) }
func (r *Regexp) FindAllSubmatch(b []byte, n int) [][][]byte {
	return r.get().FindAllSubmatch(b, n)
}
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.get().FindAllStringSubmatch(s, n)
}
func (r *Regexp) String() string { return r.pattern }
