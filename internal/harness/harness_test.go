package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/policy"
)

// newDir returns a DirWorkspace over a temporary directory holding files.
func newDir(t testing.TB, files map[string]string) (Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := DirWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ws, dir
}

func callTool(t *testing.T, ws Workspace, name, args string) Result {
	t.Helper()
	tl, ok := DefaultRegistry().Lookup(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	res, err := tl.Call(t.Context(), ws, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): infrastructure error: %v", name, args, err)
	}
	return res
}

type toolCase struct {
	name, tool, args string
	// wantOut and wantErr are substrings of Output and Error; an empty
	// wantErr means Error must be empty.
	wantOut, wantErr string
	notOut           string
	check            func(t *testing.T, dir string)
}

func runCases(t *testing.T, files map[string]string, cases []toolCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws, dir := newDir(t, files)
			res := callTool(t, ws, tc.tool, strings.ReplaceAll(tc.args, "ROOT", dir))
			if tc.wantErr == "" && res.Error != "" {
				t.Fatalf("unexpected model error %q", res.Error)
			}
			if !strings.Contains(res.Error, tc.wantErr) {
				t.Fatalf("Error = %q, want it to contain %q", res.Error, tc.wantErr)
			}
			if !strings.Contains(res.Output, tc.wantOut) {
				t.Fatalf("Output = %q, want it to contain %q", res.Output, tc.wantOut)
			}
			if tc.notOut != "" && strings.Contains(res.Output, tc.notOut) {
				t.Fatalf("Output = %q, must not contain %q", res.Output, tc.notOut)
			}
			if tc.check != nil {
				tc.check(t, dir)
			}
		})
	}
}

func fileIs(name, want string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("%s = %q, want %q", name, got, want)
		}
	}
}

func fileGone(name string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Fatalf("%s still there (err %v)", name, err)
		}
	}
}

func TestReadFile(t *testing.T) {
	files := map[string]string{"a.go": "one\ntwo\nthree\n", "empty": "", "bin": "x\x00y", "d/x": "x"}
	runCases(t, files, []toolCase{
		{name: "whole", tool: "read_file", args: `{"path":"a.go"}`, wantOut: "     1\tone\n     2\ttwo\n     3\tthree\n"},
		{name: "range", tool: "read_file", args: `{"path":"a.go","start_line":2,"end_line":2}`, wantOut: "     2\ttwo\n", notOut: "one"},
		{name: "end past eof", tool: "read_file", args: `{"path":"a.go","start_line":3,"end_line":99}`, wantOut: "     3\tthree"},
		{name: "start past eof", tool: "read_file", args: `{"path":"a.go","start_line":4}`, wantErr: "past the end"},
		{name: "end before start", tool: "read_file", args: `{"path":"a.go","start_line":3,"end_line":2}`, wantErr: "before start_line"},
		{name: "missing", tool: "read_file", args: `{"path":"nope.go"}`, wantErr: "no such file"},
		{name: "directory", tool: "read_file", args: `{"path":"d"}`, wantErr: "is a directory"},
		{name: "empty", tool: "read_file", args: `{"path":"empty"}`, wantOut: "(empty file)"},
		{name: "binary", tool: "read_file", args: `{"path":"bin"}`, wantErr: "binary file"},
		{name: "absolute inside", tool: "read_file", args: `{"path":"ROOT/a.go"}`, wantOut: "one"},
	})
}

func TestReadFileTruncates(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		b.WriteString(strings.Repeat("x", i%7) + "\n")
	}
	ws, _ := newDir(t, map[string]string{"big": b.String()})
	res := callTool(t, ws, "read_file", `{"path":"big"}`)
	if !res.Truncated || !strings.Contains(res.Output, "[file truncated: showing lines 1-2000 of 3000; use start_line=2001") {
		t.Fatalf("no truncation note: truncated=%v tail=%q", res.Truncated, res.Output[len(res.Output)-120:])
	}
	res = callTool(t, ws, "read_file", `{"path":"big","start_line":2001}`)
	if res.Truncated || !strings.Contains(res.Output, "  3000\t") {
		t.Fatalf("reading on: truncated=%v", res.Truncated)
	}
}

func TestWriteEditDelete(t *testing.T) {
	files := map[string]string{"f.txt": "a b a c", "u.txt": "alpha beta", "d/keep": ""}
	runCases(t, files, []toolCase{
		{name: "write new with parents", tool: "write_file", args: `{"path":"x/y/z.txt","content":"hi"}`, wantOut: "Wrote 2 bytes", check: fileIs("x/y/z.txt", "hi")},
		{name: "write overwrite", tool: "write_file", args: `{"path":"f.txt","content":""}`, check: fileIs("f.txt", "")},
		{name: "write missing content", tool: "write_file", args: `{"path":"f.txt"}`, wantErr: `missing required argument "content"`, check: fileIs("f.txt", "a b a c")},
		{name: "write onto directory", tool: "write_file", args: `{"path":"d","content":"x"}`, wantErr: "is a directory"},
		{name: "edit unique", tool: "edit_file", args: `{"path":"u.txt","old_string":"beta","new_string":"gamma"}`, wantOut: "Replaced 1 occurrence(s)", check: fileIs("u.txt", "alpha gamma")},
		{name: "edit not unique", tool: "edit_file", args: `{"path":"f.txt","old_string":"a","new_string":"z"}`, wantErr: "occurs 2 times", check: fileIs("f.txt", "a b a c")},
		{name: "edit replace all", tool: "edit_file", args: `{"path":"f.txt","old_string":"a","new_string":"z","replace_all":true}`, wantOut: "Replaced 2 occurrence(s)", check: fileIs("f.txt", "z b z c")},
		{name: "edit not found", tool: "edit_file", args: `{"path":"f.txt","old_string":"q","new_string":"z"}`, wantErr: "not found"},
		{name: "edit empty old", tool: "edit_file", args: `{"path":"f.txt","old_string":"","new_string":"z"}`, wantErr: "old_string is empty"},
		{name: "edit identical", tool: "edit_file", args: `{"path":"f.txt","old_string":"a","new_string":"a"}`, wantErr: "identical"},
		{name: "edit missing file", tool: "edit_file", args: `{"path":"nope","old_string":"a","new_string":"b"}`, wantErr: "no such file"},
		{name: "edit bad type", tool: "edit_file", args: `{"path":"f.txt","old_string":"a","new_string":"b","replace_all":"yes"}`, wantErr: `"replace_all" must be of type boolean`},
		{name: "delete", tool: "delete_file", args: `{"path":"f.txt"}`, wantOut: "Deleted f.txt", check: fileGone("f.txt")},
		{name: "delete missing", tool: "delete_file", args: `{"path":"nope"}`, wantErr: "no such file"},
		{name: "delete directory", tool: "delete_file", args: `{"path":"d"}`, wantErr: "is a directory"},
	})
}

func TestEditKeepsMode(t *testing.T) {
	ws, dir := newDir(t, map[string]string{"run.sh": "echo a\n"})
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	callTool(t, ws, "edit_file", `{"path":"run.sh","old_string":"a","new_string":"b"}`)
	fi, err := os.Stat(filepath.Join(dir, "run.sh"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode after edit = %v (err %v), want 0755", fi.Mode(), err)
	}
}

func TestListGlobGrep(t *testing.T) {
	files := map[string]string{
		"main.go":             "package main\n\nfunc main() { TODO() }\n",
		"README.md":           "TODO: docs\n",
		"pkg/a/a.go":          "package a\n// TODO a\n",
		"pkg/a/a_test.go":     "package a\n",
		"pkg/b/b.ts":          "todo\n",
		".git/HEAD":           "TODO in git\n",
		"bin/tool":            "TODO\x00binary",
		"pkg/empty/.keep":     "",
		"web/src/app.tsx":     "TODO tsx\n",
		"web/src/app.test.ts": "x\n",
	}
	runCases(t, files, []toolCase{
		{name: "list root", tool: "list_dir", args: `{}`, wantOut: ".git/\nREADME.md\nbin/\nmain.go\npkg/\nweb/"},
		{name: "list sub", tool: "list_dir", args: `{"path":"pkg/a"}`, wantOut: "a.go\na_test.go"},
		{name: "list missing", tool: "list_dir", args: `{"path":"zzz"}`, wantErr: "no such file"},
		{name: "list file", tool: "list_dir", args: `{"path":"main.go"}`, wantErr: "not a directory"},
		{name: "glob doublestar", tool: "glob", args: `{"pattern":"**/*.go"}`, wantOut: "main.go\npkg/a/a.go\npkg/a/a_test.go"},
		{name: "glob prefix", tool: "glob", args: `{"pattern":"pkg/**/*_test.go"}`, wantOut: "pkg/a/a_test.go", notOut: "main.go"},
		{name: "glob braces", tool: "glob", args: `{"pattern":"web/**/*.{ts,tsx}"}`, wantOut: "web/src/app.test.ts\nweb/src/app.tsx"},
		{name: "glob dirs", tool: "glob", args: `{"pattern":"pkg/*"}`, wantOut: "pkg/a/\npkg/b/\npkg/empty/"},
		{name: "glob skips git", tool: "glob", args: `{"pattern":"**/HEAD"}`, wantOut: "No files matched."},
		{name: "glob none", tool: "glob", args: `{"pattern":"nope/**"}`, wantOut: "No files matched."},
		{name: "glob bad", tool: "glob", args: `{"pattern":"[a"}`, wantErr: "invalid pattern"},
		{name: "grep all", tool: "grep", args: `{"pattern":"TODO"}`, wantOut: "README.md:1:TODO: docs\nmain.go:3:func main() { TODO() }\npkg/a/a.go:2:// TODO a\nweb/src/app.tsx:1:TODO tsx", notOut: ".git"},
		{name: "grep skips binary", tool: "grep", args: `{"pattern":"TODO"}`, notOut: "bin/tool"},
		{name: "grep include", tool: "grep", args: `{"pattern":"(?i)todo","include":"*.{go,ts}"}`, wantOut: "main.go:3:", notOut: "README"},
		{name: "grep include ts", tool: "grep", args: `{"pattern":"(?i)todo","include":"*.ts"}`, wantOut: "pkg/b/b.ts:1:todo", notOut: "main.go"},
		{name: "grep path", tool: "grep", args: `{"pattern":"TODO","path":"pkg"}`, wantOut: "pkg/a/a.go:2:", notOut: "main.go"},
		{name: "grep file", tool: "grep", args: `{"pattern":"package","path":"pkg/a/a.go"}`, wantOut: "pkg/a/a.go:1:package a"},
		{name: "grep none", tool: "grep", args: `{"pattern":"zzzz"}`, wantOut: "No matches found."},
		{name: "grep bad regexp", tool: "grep", args: `{"pattern":"("}`, wantErr: "invalid regular expression"},
		{name: "grep missing path", tool: "grep", args: `{"pattern":"a","path":"nope"}`, wantErr: "no such file"},
	})
}

func TestCaps(t *testing.T) {
	files := map[string]string{"many.txt": strings.Repeat("hit\n", maxGrepMatches+10)}
	for i := range maxListEntries + 5 {
		files[fmt.Sprintf("d/f%04d", i)] = ""
	}
	ws, _ := newDir(t, files)
	for _, c := range []struct{ tool, args, note string }{
		{"grep", `{"pattern":"hit"}`, "[results capped at 500 matching lines"},
		{"list_dir", `{"path":"d"}`, "[showing first 1000 of 1005 entries]"},
		{"glob", `{"pattern":"d/*"}`, "[showing first 1000 of 1005 matches]"},
	} {
		res := callTool(t, ws, c.tool, c.args)
		if !res.Truncated || !strings.Contains(res.Output, c.note) {
			t.Errorf("%s: truncated=%v, output tail %q, want note %q", c.tool, res.Truncated, res.Output[max(0, len(res.Output)-100):], c.note)
		}
	}
}

func TestPathEscape(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, dir := newDir(t, map[string]string{"in.txt": "ok"})
	for name, target := range map[string]string{"link_out": outside, "file_out": filepath.Join(outside, "secret"), "dangling_out": filepath.Join(outside, "new"), "link_in": filepath.Join(dir, "in.txt")} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	escapes := []struct{ tool, args string }{
		{"read_file", `{"path":"../x"}`},
		{"read_file", `{"path":"a/../../x"}`},
		{"read_file", `{"path":"OUT/secret"}`},
		{"read_file", `{"path":"/etc/passwd"}`},
		{"read_file", `{"path":"link_out/secret"}`},
		{"read_file", `{"path":"file_out"}`},
		{"write_file", `{"path":"link_out/new","content":"x"}`},
		{"write_file", `{"path":"link_out/a/b/new","content":"x"}`},
		{"write_file", `{"path":"file_out","content":"x"}`},
		{"write_file", `{"path":"../new","content":"x"}`},
		{"edit_file", `{"path":"file_out","old_string":"s3cret","new_string":"x"}`},
		{"delete_file", `{"path":"link_out/secret"}`},
		{"list_dir", `{"path":"link_out"}`},
		{"list_dir", `{"path":".."}`},
		{"grep", `{"pattern":"s3cret","path":"link_out"}`},
	}
	for _, e := range escapes {
		args := strings.ReplaceAll(e.args, "OUT", outside)
		res := callTool(t, ws, e.tool, args)
		if !strings.Contains(res.Error, "outside the workspace") && !strings.Contains(res.Error, "no such file") {
			t.Errorf("%s %s: Error = %q, Output = %q; want it refused", e.tool, args, res.Error, res.Output)
		}
		if strings.Contains(res.Output, "s3cret") {
			t.Errorf("%s %s leaked the secret", e.tool, args)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "secret")); string(got) != "s3cret" {
		t.Fatalf("outside file changed: %q", got)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("files created outside: %v", ents)
	}
	// Inside links work, and deleting a link removes the link only.
	if res := callTool(t, ws, "read_file", `{"path":"link_in"}`); !strings.Contains(res.Output, "ok") {
		t.Fatalf("read through inside link: %+v", res)
	}
	if res := callTool(t, ws, "delete_file", `{"path":"file_out"}`); res.Error != "" {
		t.Fatalf("delete link: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatalf("deleting the link removed its target: %v", err)
	}
	// grep over the root does not follow the link out.
	if res := callTool(t, ws, "grep", `{"pattern":"s3cret"}`); res.Output != "No matches found." {
		t.Fatalf("grep followed a link out: %+v", res)
	}
}

func TestRunTerminalCmd(t *testing.T) {
	runCases(t, map[string]string{"f": "content\n"}, []toolCase{
		{name: "ok", tool: "run_terminal_cmd", args: `{"command":"cat f; echo err >&2"}`, wantOut: "content\nerr\n[exit code: 0]"},
		{name: "exit code", tool: "run_terminal_cmd", args: `{"command":"exit 3"}`, wantOut: "[exit code: 3]"},
		{name: "bash", tool: "run_terminal_cmd", args: `{"command":"[[ 1 == 1 ]] && echo yes"}`, wantOut: "yes"},
		{name: "empty", tool: "run_terminal_cmd", args: `{"command":"  "}`, wantErr: "command is empty"},
		{name: "bad timeout", tool: "run_terminal_cmd", args: `{"command":"true","timeout_seconds":"5"}`, wantErr: `"timeout_seconds" must be of type integer`},
	})
}

func TestRunTerminalCmdTruncates(t *testing.T) {
	ws, _ := newDir(t, nil)
	res := callTool(t, ws, "run_terminal_cmd", `{"command":"echo START; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END"}`)
	if !res.Truncated || !strings.Contains(res.Output, "[output truncated: showing first 16384 and last 16384 of 100011 bytes]") {
		t.Fatalf("truncated=%v, no note in %d bytes", res.Truncated, len(res.Output))
	}
	if !strings.HasPrefix(res.Output, "START\n") || !strings.Contains(res.Output, "END\n[exit code: 0]") {
		t.Fatalf("head or tail lost: %q ... %q", res.Output[:20], res.Output[len(res.Output)-40:])
	}
}

func TestRunTerminalCmdTimeout(t *testing.T) {
	ws, _ := newDir(t, nil)
	start := time.Now()
	// The background sleep holds the output pipe: the whole group must die.
	res := callTool(t, ws, "run_terminal_cmd", `{"command":"echo begun; sleep 30 & sleep 30","timeout_seconds":1}`)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	if !strings.Contains(res.Output, "begun\n[command timed out after 1 seconds and was killed]") {
		t.Fatalf("Output = %q", res.Output)
	}
}

func TestMalformedArgs(t *testing.T) {
	ws, _ := newDir(t, map[string]string{"f": "x"})
	for _, tl := range DefaultTools() {
		for _, args := range []string{`{`, `[1,2]`, `"path"`, `{"path": 5, "pattern": 5, "command": 5}`, `{} trailing`, "\x00"} {
			res, err := tl.Call(t.Context(), ws, json.RawMessage(args))
			if err != nil || res.Error == "" || !res.Malformed {
				t.Errorf("%s(%q) = %+v, %v; want a malformed-call error", tl.Name(), args, res, err)
			}
		}
	}
	if res := callTool(t, ws, "read_file", `{}`); !res.Malformed || !strings.Contains(res.Error, `missing required argument "path"`) {
		t.Fatalf("missing path: %+v", res)
	}
}

func TestRegistry(t *testing.T) {
	reg := DefaultRegistry()
	want := []string{"read_file", "write_file", "edit_file", "delete_file", "list_dir", "glob", "grep", "run_terminal_cmd"}
	specs := reg.Specs()
	if len(specs) != len(want) {
		t.Fatalf("%d specs, want %d", len(specs), len(want))
	}
	for i, s := range specs {
		var sch struct {
			Type     string         `json:"type"`
			Props    map[string]any `json:"properties"`
			Required []string       `json:"required"`
		}
		if s.Name != want[i] || s.Description == "" || json.Unmarshal(s.Parameters, &sch) != nil || sch.Type != "object" || len(sch.Props) == 0 {
			t.Errorf("spec %d = %s %s", i, s.Name, s.Parameters)
		}
	}
	if err := reg.Register(readFileTool()); err == nil {
		t.Fatal("duplicate name registered")
	}
}

func TestCallAll(t *testing.T) {
	ws, _ := newDir(t, map[string]string{"f": "x"})
	reg := DefaultRegistry()
	calls := []policy.ToolCall{
		{ID: "1", Name: "run_terminal_cmd", Arguments: `{"command":"sleep 0.6; echo first"}`},
		{ID: "2", Name: "run_terminal_cmd", Arguments: `{"command":"sleep 0.1; echo second"}`},
		{ID: "3", Name: "nope", Arguments: `{}`},
		{ID: "4", Name: "run_terminal_cmd", Arguments: `{"command":"sleep 0.4; echo fourth"}`},
		{ID: "5", Name: "read_file", Arguments: `{"path":`},
		{ID: "6", Name: "read_file", Arguments: `{"path":"f"}`},
	}
	start := time.Now()
	res, err := CallAll(t.Context(), ws, reg, calls)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	checks := []func(Result) bool{
		func(r Result) bool { return strings.HasPrefix(r.Output, "first\n") },
		func(r Result) bool { return strings.HasPrefix(r.Output, "second\n") },
		func(r Result) bool { return r.Malformed && strings.Contains(r.Error, `unknown tool "nope"`) },
		func(r Result) bool { return strings.HasPrefix(r.Output, "fourth\n") },
		func(r Result) bool { return r.Malformed && strings.Contains(r.Error, "not a valid JSON object") },
		func(r Result) bool { return r.Output == "     1\tx\n" },
	}
	for i, ok := range checks {
		if !ok(res[i]) {
			t.Errorf("result %d = %+v", i, res[i])
		}
	}
	if elapsed >= 1100*time.Millisecond {
		t.Fatalf("CallAll took %v, not less than the 1.1s sum of the sleeps: calls did not overlap", elapsed)
	}
}

type panicTool struct{}

func (panicTool) Name() string                { return "boom" }
func (panicTool) Description() string         { return "panics" }
func (panicTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (panicTool) Call(context.Context, Workspace, json.RawMessage) (Result, error) {
	panic("boom")
}

func TestCallAllInfraError(t *testing.T) {
	ws, _ := newDir(t, nil)
	reg, err := NewRegistry(panicTool{}, readFileTool())
	if err != nil {
		t.Fatal(err)
	}
	res, err := CallAll(t.Context(), ws, reg, []policy.ToolCall{{Name: "boom"}, {Name: "read_file", Arguments: `{"path":"x"}`}})
	if err == nil || !strings.Contains(err.Error(), "panic: boom") {
		t.Fatalf("err = %v, want the panic as an infrastructure error", err)
	}
	if !strings.Contains(res[1].Error, "no such file") {
		t.Fatalf("other call's result lost: %+v", res[1])
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := CallAll(ctx, ws, reg, []policy.ToolCall{{Name: "read_file", Arguments: `{"path":"x"}`}}); err == nil {
		t.Fatal("cancelled context: no error")
	}
}

func TestCapture(t *testing.T) {
	var all strings.Builder
	for i := range 500 {
		fmt.Fprintf(&all, "line %d\n", i)
	}
	data := all.String()
	for _, chunk := range []int{1, 7, 64, 5000} {
		c := &capture{headMax: 100, tailMax: 50}
		for s := data; len(s) > 0; {
			k := min(chunk, len(s))
			c.Write([]byte(s[:k]))
			s = s[k:]
		}
		want := fmt.Sprintf("%s\n[output truncated: showing first 100 and last 50 of %d bytes]\n%s", data[:100], len(data), data[len(data)-50:])
		if got := c.String(); got != want || !c.truncated() {
			t.Errorf("chunk %d: got %q", chunk, got)
		}
	}
	c := &capture{headMax: 100, tailMax: 50}
	c.Write([]byte("short"))
	if c.String() != "short" || c.truncated() {
		t.Errorf("short output changed: %q", c.String())
	}
}
