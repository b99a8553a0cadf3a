package harness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/verisim/verisim/internal/pathglob"
)

// errStopWalk ends a walk early without error.
var errStopWalk = errors.New("stop walk")

// walk calls fn for every entry below dir, a workspace path, in lexical
// order, with the entry's path joined to dir. It skips .git and does not
// follow symlinked directories. Directories that cannot be read are
// skipped; only an infrastructure failure, or fn's error, ends the walk.
// It reports whether it stopped at maxWalkEntries.
func walk(ctx context.Context, ws Workspace, dir string, fn func(p string, fi FileInfo) error) (bool, error) {
	ents, err := ws.ReadDir(ctx, dir)
	if err != nil {
		return false, err
	}
	seen := 0
	type frame struct {
		dir  string
		ents []FileInfo
	}
	sortByName := func(e []FileInfo) []FileInfo {
		slices.SortFunc(e, func(a, b FileInfo) int { return strings.Compare(a.Name, b.Name) })
		return e
	}
	stack := []frame{{dir, sortByName(ents)}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if len(top.ents) == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		e := top.ents[0]
		top.ents = top.ents[1:]
		if e.Name == ".git" {
			continue
		}
		if seen++; seen > maxWalkEntries {
			return true, nil
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		p := joinPath(top.dir, e.Name)
		if err := fn(p, e); err != nil {
			if errors.Is(err, errStopWalk) {
				return false, nil
			}
			return false, err
		}
		if e.IsDir() {
			sub, err := ws.ReadDir(ctx, p)
			if err != nil {
				if isModelError(err) {
					continue
				}
				return false, err
			}
			stack = append(stack, frame{p, sortByName(sub)})
		}
	}
	return false, nil
}

func joinPath(dir, name string) string {
	if dir == "." {
		return name
	}
	return path.Join(dir, name)
}

// relPath makes an absolute path under the workspace root relative to it,
// so that output names files the way the model usually does.
func relPath(ws Workspace, p string) string {
	root := ws.Root()
	if p == root {
		return "."
	}
	if rest, ok := strings.CutPrefix(p, strings.TrimSuffix(root, "/")+"/"); ok {
		return path.Clean(rest)
	}
	return path.Clean(p)
}

// expandBraces expands "{a,b}" alternatives, as in "*.{go,mod}".
func expandBraces(pattern string) []string {
	open := strings.IndexByte(pattern, '{')
	if open < 0 {
		return []string{pattern}
	}
	end := strings.IndexByte(pattern[open:], '}')
	if end < 0 {
		return []string{pattern}
	}
	end += open
	var out []string
	for alt := range strings.SplitSeq(pattern[open+1:end], ",") {
		out = append(out, expandBraces(pattern[:open]+alt+pattern[end+1:])...)
	}
	return out
}

// compileGlob checks pattern and returns its brace expansions, or a
// model-facing reason it is invalid.
func compileGlob(pattern string) ([]string, string) {
	pats := expandBraces(pattern)
	if len(pats) > 64 {
		return nil, "too many {} alternatives"
	}
	for _, p := range pats {
		for seg := range strings.SplitSeq(p, "/") {
			if _, err := path.Match(seg, ""); err != nil {
				return nil, fmt.Sprintf("invalid pattern %q: %v", pattern, err)
			}
		}
	}
	return pats, ""
}

func matchAny(pats []string, name string) bool {
	for _, p := range pats {
		if pathglob.Match(p, name) {
			return true
		}
	}
	return false
}

// staticPrefix is the leading directory of pattern free of glob syntax,
// where a walk for it can start.
func staticPrefix(pattern string) string {
	segs := strings.Split(pattern, "/")
	i := 0
	for i < len(segs)-1 && !strings.ContainsAny(segs[i], `*?[\{`) {
		i++
	}
	if i == 0 {
		return "."
	}
	return strings.Join(segs[:i], "/")
}

type globArgs struct {
	Pattern string `json:"pattern"`
}

func globTool() Tool {
	params := []param{{"pattern", "string", `Glob relative to the workspace root; ** matches any number of directories, {a,b} alternatives (e.g. "**/*.go", "src/**/test_*.py").`, true}}
	return define("glob",
		"Find files and directories whose paths match a glob pattern. Results are sorted; directories end in /. .git is skipped.",
		params, func(ctx context.Context, ws Workspace, a globArgs) (Result, error) {
			pattern := strings.TrimPrefix(relPath(ws, a.Pattern), "./")
			if path.IsAbs(pattern) {
				return modelError("pattern %q must be relative to the workspace root", a.Pattern), nil
			}
			pats, msg := compileGlob(pattern)
			if msg != "" {
				return modelError("%s", msg), nil
			}
			var matches []string
			start := staticPrefix(pattern)
			stopped, err := walk(ctx, ws, start, func(p string, fi FileInfo) error {
				if matchAny(pats, p) {
					matches = append(matches, p+typeSuffix(fi.Mode&fs.ModeDir))
				}
				return nil
			})
			if err != nil {
				if isModelError(err) {
					return Result{Output: "No files matched."}, nil
				}
				return Result{}, err
			}
			if len(matches) == 0 {
				return Result{Output: "No files matched."}, nil
			}
			slices.Sort(matches)
			res := capped(matches, maxGlobMatches, "matches")
			if stopped {
				res.Truncated = true
				res.Output += fmt.Sprintf("\n[search stopped after %d entries; use a narrower pattern]", maxWalkEntries)
			}
			return res, nil
		})
}

type grepArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Include string `json:"include"`
}

func grepTool() Tool {
	params := []param{
		{"pattern", "string", "Regular expression (Go RE2 syntax) to search for, line by line.", true},
		{"path", "string", `File or directory to search, relative to the workspace root (default ".").`, false},
		{"include", "string", `Only search files whose name matches this glob (e.g. "*.go", "*.{ts,tsx}").`, false},
	}
	return define("grep",
		"Search file contents for a regular expression. Prints path:line:text for each matching line. Skips .git and binary files.",
		params, grep)
}

func grep(ctx context.Context, ws Workspace, a grepArgs) (Result, error) {
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return modelError("invalid regular expression: %v", err), nil
	}
	var include []string
	if a.Include != "" {
		var msg string
		if include, msg = compileGlob(a.Include); msg != "" {
			return modelError("include: %s", msg), nil
		}
	}
	if a.Path == "" {
		a.Path = "."
	}
	root := relPath(ws, a.Path)
	var out []string
	capReached := false
	search := func(p string, fi FileInfo) error {
		if !fi.Mode.IsRegular() || fi.Size > maxReadFileSize {
			return nil
		}
		if include != nil && !matchAny(include, path.Base(p)) && !matchAny(include, p) {
			return nil
		}
		data, err := ws.ReadFile(ctx, p)
		if err != nil {
			if isModelError(err) {
				return nil
			}
			return err
		}
		if isBinary(data) {
			return nil
		}
		for i, line := range strings.Split(string(data), "\n") {
			if !re.MatchString(line) {
				continue
			}
			if len(out) == maxGrepMatches {
				capReached = true
				return errStopWalk
			}
			if len(line) > maxGrepLineLen {
				line = strings.ToValidUTF8(line[:maxGrepLineLen], "") + "…"
			}
			out = append(out, fmt.Sprintf("%s:%d:%s", p, i+1, line))
		}
		return nil
	}
	fi, err := ws.Stat(ctx, root)
	if err != nil {
		return fsResult(a.Path, err)
	}
	if fi.Mode&fs.ModeSymlink != 0 {
		// A link named explicitly is followed, within the workspace's rules.
		if _, err := ws.ReadDir(ctx, root); err == nil {
			fi.Mode = fs.ModeDir
		} else if errors.Is(err, syscall.ENOTDIR) {
			fi.Mode = 0
		} else {
			return fsResult(a.Path, err)
		}
	}
	stopped := false
	if fi.IsDir() {
		stopped, err = walk(ctx, ws, root, search)
	} else {
		include = nil // a file named explicitly is searched whatever its name
		if err = search(root, fi); errors.Is(err, errStopWalk) {
			err = nil
		}
	}
	if err != nil {
		return fsResult(a.Path, err)
	}
	if len(out) == 0 {
		return Result{Output: "No matches found."}, nil
	}
	res := Result{Output: strings.Join(out, "\n")}
	if capReached {
		res.Truncated = true
		res.Output += fmt.Sprintf("\n[results capped at %d matching lines; narrow the pattern, path or include]", maxGrepMatches)
	}
	if stopped {
		res.Truncated = true
		res.Output += fmt.Sprintf("\n[search stopped after %d entries; narrow the path or include]", maxWalkEntries)
	}
	return res, nil
}
