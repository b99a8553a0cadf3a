package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// tool is a default tool: a name, a description, parameters and a function.
type tool struct {
	name, desc string
	schema     json.RawMessage
	call       func(ctx context.Context, ws Workspace, raw json.RawMessage) (Result, error)
}

func (t *tool) Name() string                { return t.name }
func (t *tool) Description() string         { return t.desc }
func (t *tool) Parameters() json.RawMessage { return t.schema }
func (t *tool) Call(ctx context.Context, ws Workspace, args json.RawMessage) (Result, error) {
	return t.call(ctx, ws, args)
}

// define makes a tool whose arguments decode into an A.
func define[A any](name, desc string, params []param, fn func(ctx context.Context, ws Workspace, a A) (Result, error)) Tool {
	return &tool{
		name:   name,
		desc:   desc,
		schema: schema(params...),
		call: func(ctx context.Context, ws Workspace, raw json.RawMessage) (Result, error) {
			return call(ctx, raw, params, func(a A) (Result, error) { return fn(ctx, ws, a) })
		},
	}
}

// DefaultTools returns fresh instances of the default tool set, in the order
// they are offered to the model.
func DefaultTools() []Tool {
	return []Tool{
		readFileTool(), writeFileTool(), editFileTool(), deleteFileTool(),
		listDirTool(), globTool(), grepTool(), runTerminalCmdTool(),
	}
}

// DefaultRegistry returns a registry of DefaultTools.
func DefaultRegistry() *Registry {
	r, err := NewRegistry(DefaultTools()...)
	if err != nil {
		panic(err) // the default names are distinct
	}
	return r
}

// Limits on what one call reads or returns, so that a single observation
// cannot flood the model's context or this process's memory.
const (
	maxReadFileSize = 32 << 20 // bytes read_file and grep read at all
	maxReadLines    = 2000
	maxReadBytes    = 100 << 10
	maxListEntries  = 1000
	maxGlobMatches  = 1000
	maxGrepMatches  = 500
	maxGrepLineLen  = 500
	maxWalkEntries  = 200_000
	binarySniffLen  = 8000
)

func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniffLen)], 0) >= 0
}

var pathParam = param{"path", "string", "File path, relative to the workspace root (absolute paths inside it also work).", true}

type readFileArgs struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
}

func readFileTool() Tool {
	params := []param{
		pathParam,
		{"start_line", "integer", "First line to show, 1-based (default 1).", false},
		{"end_line", "integer", "Last line to show, inclusive (default: end of file).", false},
	}
	return define("read_file",
		"Read a text file. Lines are shown numbered; large files are truncated, so read them in ranges with start_line and end_line.",
		params, readFile)
}

func readFile(ctx context.Context, ws Workspace, a readFileArgs) (Result, error) {
	if a.StartLine < 0 || a.EndLine < 0 {
		return modelError("start_line and end_line must be positive"), nil
	}
	if fi, err := ws.Stat(ctx, a.Path); err != nil {
		return fsResult(a.Path, err)
	} else if fi.IsDir() {
		return modelError("%s: is a directory (use list_dir)", a.Path), nil
	} else if fi.Mode.IsRegular() && fi.Size > maxReadFileSize {
		return modelError("%s: file too large (%d bytes); use run_terminal_cmd with head, tail or sed", a.Path, fi.Size), nil
	}
	data, err := ws.ReadFile(ctx, a.Path)
	if err != nil {
		return fsResult(a.Path, err)
	}
	if isBinary(data) {
		return modelError("%s: binary file (%d bytes), not shown", a.Path, len(data)), nil
	}
	if len(data) == 0 {
		return Result{Output: "(empty file)"}, nil
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	start, end := max(a.StartLine, 1), len(lines)
	if a.EndLine > 0 {
		end = min(a.EndLine, len(lines))
	}
	if start > len(lines) {
		return modelError("start_line %d is past the end of %s (%d lines)", start, a.Path, len(lines)), nil
	}
	if end < start {
		return modelError("end_line %d is before start_line %d", a.EndLine, start), nil
	}
	var b strings.Builder
	last := start - 1
	for i := start; i <= end; i++ {
		if i-start >= maxReadLines || b.Len() >= maxReadBytes {
			break
		}
		fmt.Fprintf(&b, "%6d\t%s\n", i, lines[i-1])
		last = i
	}
	res := Result{Output: b.String()}
	if last < end {
		res.Truncated = true
		res.Output += fmt.Sprintf("[file truncated: showing lines %d-%d of %d; use start_line=%d to read on]\n",
			start, last, len(lines), last+1)
	}
	return res, nil
}

type writeFileArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func writeFileTool() Tool {
	params := []param{pathParam, {"content", "string", "The file's complete new contents.", true}}
	return define("write_file",
		"Create a file, or replace an existing file's contents entirely. Missing parent directories are created.",
		params, func(ctx context.Context, ws Workspace, a writeFileArgs) (Result, error) {
			if err := ws.WriteFile(ctx, a.Path, []byte(a.Content)); err != nil {
				return fsResult(a.Path, err)
			}
			return Result{Output: fmt.Sprintf("Wrote %d bytes to %s", len(a.Content), a.Path)}, nil
		})
}

type editFileArgs struct {
	Path       string `json:"path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

func editFileTool() Tool {
	params := []param{
		pathParam,
		{"old_string", "string", "Exact text to replace, including whitespace and indentation. It must occur exactly once unless replace_all is set.", true},
		{"new_string", "string", "Text to put in its place.", true},
		{"replace_all", "boolean", "Replace every occurrence of old_string (default false).", false},
	}
	return define("edit_file",
		"Replace exact text in a file. Include enough surrounding lines in old_string to make it unique.",
		params, func(ctx context.Context, ws Workspace, a editFileArgs) (Result, error) {
			data, err := ws.ReadFile(ctx, a.Path)
			if err != nil {
				return fsResult(a.Path, err)
			}
			out, n, msg := applyEdit(string(data), a.OldString, a.NewString, a.ReplaceAll)
			if msg != "" {
				return modelError("%s: %s", a.Path, msg), nil
			}
			if err := ws.WriteFile(ctx, a.Path, []byte(out)); err != nil {
				return fsResult(a.Path, err)
			}
			return Result{Output: fmt.Sprintf("Replaced %d occurrence(s) in %s", n, a.Path)}, nil
		})
}

// applyEdit replaces old with new in content: the single occurrence, or all
// of them with all set. It returns the new content and the number of
// replacements, or a model-facing reason for refusing.
func applyEdit(content, old, new string, all bool) (string, int, string) {
	if old == "" {
		return "", 0, "old_string is empty (use write_file to create or overwrite a file)"
	}
	if old == new {
		return "", 0, "old_string and new_string are identical"
	}
	n := strings.Count(content, old)
	switch {
	case n == 0:
		return "", 0, "old_string not found (it must match exactly, including whitespace and indentation)"
	case n > 1 && !all:
		return "", 0, fmt.Sprintf("old_string occurs %d times; include more surrounding context to make it unique, or set replace_all", n)
	}
	return strings.Replace(content, old, new, n), n, ""
}

type pathArgs struct {
	Path string `json:"path"`
}

func deleteFileTool() Tool {
	return define("delete_file", "Delete a file.", []param{pathParam},
		func(ctx context.Context, ws Workspace, a pathArgs) (Result, error) {
			fi, err := ws.Stat(ctx, a.Path)
			if err != nil {
				return fsResult(a.Path, err)
			}
			if fi.IsDir() {
				return modelError("%s: is a directory; delete_file deletes files only", a.Path), nil
			}
			if err := ws.Remove(ctx, a.Path); err != nil {
				return fsResult(a.Path, err)
			}
			return Result{Output: "Deleted " + a.Path}, nil
		})
}

func listDirTool() Tool {
	params := []param{{"path", "string", "Directory, relative to the workspace root (default \".\").", false}}
	return define("list_dir",
		"List a directory's entries, sorted; directories end in / and symlinks in @.",
		params, func(ctx context.Context, ws Workspace, a pathArgs) (Result, error) {
			if a.Path == "" {
				a.Path = "."
			}
			ents, err := ws.ReadDir(ctx, a.Path)
			if err != nil {
				return fsResult(a.Path, err)
			}
			if len(ents) == 0 {
				return Result{Output: "(empty directory)"}, nil
			}
			names := make([]string, len(ents))
			for i, e := range ents {
				names[i] = e.Name + typeSuffix(e.Mode)
			}
			slices.Sort(names)
			return capped(names, maxListEntries, "entries"), nil
		})
}

func typeSuffix(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "/"
	case m&fs.ModeSymlink != 0:
		return "@"
	}
	return ""
}

// capped joins lines, keeping at most limit of them with a note saying how
// many there were.
func capped(lines []string, limit int, what string) Result {
	if len(lines) <= limit {
		return Result{Output: strings.Join(lines, "\n")}
	}
	return Result{
		Output:    strings.Join(lines[:limit], "\n") + fmt.Sprintf("\n[showing first %d of %d %s]", limit, len(lines), what),
		Truncated: true,
	}
}
