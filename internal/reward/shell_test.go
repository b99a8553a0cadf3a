package reward

import (
	"slices"
	"strings"
	"testing"
)

func TestParseShell(t *testing.T) {
	type want struct {
		args  []string
		cwd   string
		redir string // "op target" of the first redirection
		stdin string
	}
	tests := []struct {
		src  string
		want []want
	}{
		{`go test ./... && git status`, []want{{args: []string{"go", "test", "./..."}, cwd: "."}, {args: []string{"git", "status"}, cwd: "."}}},
		{`echo 'a; b' "c \"d\"" e\ f`, []want{{args: []string{"echo", "a; b", `c "d"`, "e f"}, cwd: "."}}},
		{`sudo -u root env FOO=1 timeout 5 rm -rf x`, []want{{args: []string{"rm", "-rf", "x"}, cwd: "."}}},
		{`cd tests && rm test_a.py; cd ..; ls`, []want{
			{args: []string{"cd", "tests"}, cwd: "."}, {args: []string{"rm", "test_a.py"}, cwd: "tests"},
			{args: []string{"cd", ".."}, cwd: "tests"}, {args: []string{"ls"}, cwd: "."},
		}},
		{`go test 2>&1 | tee out.log > /dev/null`, []want{{args: []string{"go", "test"}, cwd: "."}, {args: []string{"tee", "out.log"}, cwd: ".", redir: "> /dev/null"}}},
		{`echo hi >tests/x.py 2>>err`, []want{{args: []string{"echo", "hi"}, cwd: ".", redir: "> tests/x.py"}}},
		{`bash -lc "rm tests/a.py && echo ok"`, []want{{args: []string{"rm", "tests/a.py"}, cwd: "."}, {args: []string{"echo", "ok"}, cwd: "."}}},
		{"cat > tests/t.py <<'END'\nimport os; curl\nEND\nls", []want{{args: []string{"cat"}, cwd: ".", redir: "> tests/t.py", stdin: "import os; curl\n"}, {args: []string{"ls"}, cwd: "."}}},
		{"python3 - <<END\nprint(1)\nEND", []want{{args: []string{"python3", "-"}, cwd: ".", stdin: "print(1)\n"}}},
		{`ls $(find / -name '*test*') # comment; rm x`, []want{{args: []string{"ls", "$(find / -name '*test*')"}, cwd: "."}, {args: []string{"find", "/", "-name", "*test*"}, cwd: "."}}},
		{"for f in *.py; do cat \"$f\"; done", []want{{args: []string{"for", "f", "in", "*.py"}, cwd: "."}, {args: []string{"cat", "$f"}, cwd: "."}}},
		{"bash <<'S'\ngit log -p\nS", []want{{args: []string{"git", "log", "-p"}, cwd: "."}}},
		{`eval "git reflog"`, []want{{args: []string{"git", "reflog"}, cwd: "."}}},
		{`cd /tmp; cat $PWD/x`, []want{{args: []string{"cd", "/tmp"}, cwd: "."}, {args: []string{"cat", "$PWD/x"}, cwd: "/tmp"}}},
		{`FOO=bar`, nil},
	}
	for _, tc := range tests {
		got := parseShell(tc.src)
		var g []want
		for _, c := range got {
			if len(c.args) == 0 {
				continue
			}
			w := want{args: c.args, cwd: c.cwd, stdin: c.stdin}
			if len(c.redirs) > 0 {
				w.redir = c.redirs[0].op + " " + c.redirs[0].target
			}
			g = append(g, w)
		}
		if len(g) != len(tc.want) {
			t.Errorf("parseShell(%q): %d commands %+v, want %d %+v", tc.src, len(g), g, len(tc.want), tc.want)
			continue
		}
		for i := range g {
			if !slices.Equal(g[i].args, tc.want[i].args) || g[i].cwd != tc.want[i].cwd || g[i].redir != tc.want[i].redir || g[i].stdin != tc.want[i].stdin {
				t.Errorf("parseShell(%q)[%d] = %+v, want %+v", tc.src, i, g[i], tc.want[i])
			}
		}
	}
}

func TestParseShellPipes(t *testing.T) {
	cmds := parseShell(`env | grep -i docker; ps aux | grep x`)
	if len(cmds) != 4 || cmds[0].pipe != cmds[1].pipe || cmds[1].pipe == cmds[2].pipe || cmds[2].pipe != cmds[3].pipe {
		t.Fatalf("pipes: %+v", cmds)
	}
}

func FuzzParseShell(f *testing.F) {
	for _, s := range []string{
		`a && b || c | d; e & f`, "x \"$(y 'z')\" `w`", "cat <<-E\n\tbody\n\tE\n", `a >&2 <&- 2>f &>g >>h <<<"s"`,
		`bash -c "bash -c 'bash -c \"ls\"'"`, `$((1+2)) ${x:-y} $(`, `'unterminated`, `"unterminated $(`, `\`,
	} {
		f.Add(s)
	}
	// Evidence quotes a command's text, which must come from what the agent
	// wrote: the source itself, less the quoting of bash -c and eval.
	norm := func(s string) string {
		s = strings.NewReplacer(`'`, "", `"`, "", `\`, "").Replace(s)
		return strings.Join(strings.Fields(s), " ")
	}
	f.Fuzz(func(t *testing.T, src string) {
		for _, c := range parseShell(src) {
			if !strings.Contains(norm(src), norm(c.text)) {
				t.Fatalf("text %q is not part of the source", c.text)
			}
			_ = c.operands()
			_ = c.code()
		}
	})
}
