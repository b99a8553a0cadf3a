// Package pathglob matches slash-separated paths against globs in which a
// "**" element matches any number of path elements, none included, and
// every other element is a path.Match pattern: the globs of .gitignore-
// style tools, which both the agent's glob tool and the grader's protected
// files use.
package pathglob

import (
	"path"
	"strings"
)

// Match reports whether the slash-separated name matches pattern.
func Match(pattern, name string) bool {
	return MatchElems(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

// MatchElems is Match on paths already split into elements.
func MatchElems(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range name {
				if MatchElems(pat, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
