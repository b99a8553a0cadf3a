package reward

import (
	"path"
	"strings"
)

// The monitors read the commands an agent ran with a conservative shell
// reader: it splits a command line into simple commands at ; && || | & and
// newlines, removes quotes, drops wrappers (sudo, env, VAR=x, timeout, ...),
// follows bash -c, eval and $(...) into the commands they run, keeps
// here-documents as data, and tracks cd. It never executes anything and
// never fails: input it does not understand becomes words like any other.

// shellCmd is one simple command.
type shellCmd struct {
	// args are the words, quotes removed; args[0] is the program.
	args   []string
	redirs []redirect
	// stdin is the text of here-documents and here-strings.
	stdin string
	// text is the command's source, for evidence.
	text string
	// pipe is the same for commands joined by |.
	pipe int
	// cwd is where the command runs: "." for the directory the command
	// line started in, a relative path from it, or an absolute (or "~")
	// path.
	cwd string
}

type redirect struct {
	op     string // ">", ">>", "<", "&>", ...
	target string
}

// maxShellDepth bounds nesting of bash -c and $(...), which input could
// otherwise make arbitrarily deep.
const maxShellDepth = 8

// parseShell reads a command line that starts in the workspace root.
func parseShell(src string) []shellCmd {
	pipe := 0
	cmds, _ := parseShellIn(src, ".", 0, &pipe)
	return cmds
}

// parseShellIn reads src starting in cwd, and returns its commands and the
// directory it leaves the shell in.
func parseShellIn(src, cwd string, depth int, pipe *int) ([]shellCmd, string) {
	if depth > maxShellDepth {
		return nil, cwd
	}
	toks, subs := lexShell(src)
	var raw []shellCmd
	var cur shellCmd
	start, end := -1, -1
	finish := func() {
		if len(cur.args) > 0 || len(cur.redirs) > 0 || cur.stdin != "" {
			if start >= 0 {
				cur.text = strings.TrimSpace(src[start:end])
			}
			cur.pipe = *pipe
			raw = append(raw, cur)
		}
		cur = shellCmd{}
		start, end = -1, -1
	}
	span := func(t token) {
		if start < 0 {
			start = t.start
		}
		end = t.end
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.kind {
		case tokWord:
			span(t)
			cur.args = append(cur.args, t.val)
		case tokRedir:
			span(t)
			if t.dup {
				continue
			}
			r := redirect{op: t.val}
			if i+1 < len(toks) && toks[i+1].kind == tokWord {
				i++
				span(toks[i])
				r.target = toks[i].val
			}
			switch r.op {
			case "<<", "<<-":
				// The word is the here-document's delimiter; its body
				// arrives as a tokBody.
			case "<<<":
				cur.stdin += r.target + "\n"
			default:
				cur.redirs = append(cur.redirs, r)
			}
		case tokBody:
			cur.stdin += t.val
		case tokOp:
			finish()
			if t.val != "|" && t.val != "|&" {
				*pipe++
			}
		}
	}
	finish()
	*pipe++

	var out []shellCmd
	for _, c := range raw {
		c.args = unwrap(c.args)
		c.cwd = cwd
		if inner, ok := innerScript(c); ok {
			cmds, _ := parseShellIn(inner, cwd, depth+1, pipe)
			out = append(out, cmds...)
			if len(c.redirs) == 0 {
				continue
			}
		}
		if len(c.args) > 0 && (c.args[0] == "cd" || c.args[0] == "pushd") {
			cwd = chdir(cwd, c.args[1:])
		}
		out = append(out, c)
	}
	for _, s := range subs {
		cmds, _ := parseShellIn(s, cwd, depth+1, pipe)
		out = append(out, cmds...)
	}
	return out, cwd
}

func chdir(cwd string, args []string) string {
	for len(args) > 0 && (args[0] == "-P" || args[0] == "-L" || args[0] == "--") {
		args = args[1:]
	}
	if len(args) == 0 {
		return "~"
	}
	t := args[0]
	switch {
	case t == "-":
		return cwd
	case strings.HasPrefix(t, "/"), strings.HasPrefix(t, "~"), strings.HasPrefix(t, "$"):
		return t
	case strings.HasPrefix(cwd, "~"):
		return "~/" + strings.TrimPrefix(path.Join(strings.TrimPrefix(cwd, "~"), t), "/")
	}
	return path.Join(cwd, t)
}

// innerScript returns the script a command runs as a shell: bash -c
// SCRIPT, eval ARGS, or a shell fed a here-document.
func innerScript(c shellCmd) (string, bool) {
	if len(c.args) == 0 {
		return "", false
	}
	switch prog(c.args) {
	case "eval":
		return strings.Join(c.args[1:], " "), true
	case "bash", "sh", "zsh", "dash", "ksh":
		cflag := false
		for _, a := range c.args[1:] {
			switch {
			case strings.HasPrefix(a, "--"):
			case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
				cflag = cflag || strings.ContainsRune(a, 'c')
			case cflag:
				return a, true
			default:
				return "", false // bash script.sh: the script is a file
			}
		}
		if !cflag && c.stdin != "" {
			return c.stdin, true
		}
	}
	return "", false
}

// prog is the program's name without its directory.
func prog(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return path.Base(args[0])
}

func isAssignment(w string) bool {
	i := strings.IndexByte(w, '=')
	if i <= 0 {
		return false
	}
	for j, r := range w[:i] {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || j > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// unwrap drops what runs a command without being it: assignments,
// keywords and wrappers such as sudo, env, timeout and xargs.
func unwrap(args []string) []string {
	for len(args) > 0 {
		if isAssignment(args[0]) {
			args = args[1:]
			continue
		}
		before := args
		switch prog(args) {
		case "sudo", "doas":
			args = skipOptions(args[1:], "ugCDhprtUT")
		case "env":
			args = args[1:]
			for len(args) > 0 && (strings.HasPrefix(args[0], "-") || isAssignment(args[0])) {
				if args[0] == "-u" || args[0] == "-C" || args[0] == "-S" {
					args = args[1:]
				}
				if len(args) > 0 {
					args = args[1:]
				}
			}
		case "time", "nohup", "command", "exec", "builtin", "stdbuf", "unbuffer":
			args = skipOptions(args[1:], "p")
		case "nice", "ionice":
			args = skipOptions(args[1:], "nct")
		case "timeout":
			args = skipOptions(args[1:], "sk")
			if len(args) > 0 {
				args = args[1:] // the duration
			}
		case "xargs":
			args = skipOptions(args[1:], "IinPLdsEa")
		case "watch":
			args = skipOptions(args[1:], "nd")
		case "{", "}", "(", "!", "if", "then", "else", "elif", "do", "while", "until", "done", "fi":
			args = args[1:]
			continue
		default:
			return args
		}
		if len(args) == 0 {
			// A wrapper with nothing to run is the command itself: env
			// alone prints the environment.
			return before
		}
	}
	return args
}

// skipOptions drops leading options; a short option in withValue takes the
// next word as its value unless the value is attached.
func skipOptions(args []string, withValue string) []string {
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			return args[1:]
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return args
		}
		args = args[1:]
		if len(a) == 2 && strings.IndexByte(withValue, a[1]) >= 0 && len(args) > 0 {
			args = args[1:]
		}
	}
	return args
}

// operands are the command's words that are not options, with the values
// of --name=value options, which are as likely to be paths.
func (c *shellCmd) operands() []string {
	var out []string
	opts := true
	for _, a := range c.args[min(1, len(c.args)):] {
		switch {
		case !opts:
			out = append(out, a)
		case a == "--":
			opts = false
		case strings.HasPrefix(a, "--"):
			if _, v, ok := strings.Cut(a, "="); ok && v != "" {
				out = append(out, v)
			}
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			out = append(out, a)
		}
	}
	return out
}

// hasShort reports a short option letter, alone or in a cluster ("-rf").
func (c *shellCmd) hasShort(letter byte) bool {
	for _, a := range c.args[min(1, len(c.args)):] {
		if a == "--" {
			return false
		}
		if len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], letter) >= 0 {
			return true
		}
	}
	return false
}

// hasLong reports a long option, with or without a value.
func (c *shellCmd) hasLong(name string) bool {
	for _, a := range c.args[min(1, len(c.args)):] {
		if a == "--" {
			return false
		}
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// code is the program text an interpreter is given inline: python -c,
// node -e, perl -e, or a here-document.
func (c *shellCmd) code() string {
	p := prog(c.args)
	if !isInterpreter(p) {
		return ""
	}
	var b strings.Builder
	for i, a := range c.args {
		if i > 0 && (c.args[i-1] == "-c" || c.args[i-1] == "-e" || c.args[i-1] == "-E" || c.args[i-1] == "-r") {
			b.WriteString(a)
			b.WriteByte('\n')
		}
	}
	b.WriteString(c.stdin)
	return b.String()
}

func isInterpreter(p string) bool {
	for _, pre := range []string{"python", "pypy", "node", "nodejs", "perl", "ruby", "php", "deno", "bun"} {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}

// Lexer.

type tokKind int

const (
	tokWord tokKind = iota
	tokOp
	tokRedir
	tokBody // a here-document's body
)

type token struct {
	kind       tokKind
	val        string
	start, end int
	// dup marks a redirection to a file descriptor (2>&1), which has no
	// target word.
	dup bool
}

type heredoc struct {
	delim string
	strip bool // <<- strips leading tabs
}

type lexer struct {
	src     string
	i       int
	toks    []token
	subs    []string
	word    strings.Builder
	inWord  bool
	quoted  bool
	wstart  int
	pending []heredoc
	// delim is set when the next word is a here-document's delimiter:
	// 1 for <<, 2 for <<-.
	delim int
}

// lexShell splits src into tokens, and returns the bodies of $(...) and
// `...` substitutions, which run as commands of their own.
func lexShell(src string) ([]token, []string) {
	l := &lexer{src: src}
	for l.i < len(src) {
		c := src[l.i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			l.flush()
			l.i++
		case c == '\n':
			l.flush()
			l.newline()
		case c == '#' && !l.inWord:
			for l.i < len(src) && src[l.i] != '\n' {
				l.i++
			}
		case c == '\\':
			l.begin()
			if l.i+1 < len(src) && src[l.i+1] != '\n' {
				l.word.WriteByte(src[l.i+1])
			}
			l.i += 2
		case c == '\'':
			l.begin()
			l.quoted = true
			rest := src[l.i+1:]
			j := strings.IndexByte(rest, '\'')
			if j < 0 {
				j = len(rest)
			}
			l.word.WriteString(rest[:j])
			l.i += j + 2
		case c == '"':
			l.begin()
			l.quoted = true
			l.i++
			l.double()
		case c == '$' && l.peek(1) == '(':
			l.begin()
			l.subst()
		case c == '$' && l.peek(1) == '{':
			l.begin()
			j := strings.IndexByte(src[l.i:], '}')
			if j < 0 {
				j = len(src) - l.i - 1
			}
			l.word.WriteString(src[l.i : l.i+j+1])
			l.i += j + 1
		case c == '`':
			l.begin()
			l.backtick()
		case strings.IndexByte(";&|()<>", c) >= 0:
			if (c == '<' || c == '>') && l.inWord && !l.quoted && allDigits(l.word.String()) {
				l.word.Reset() // a file descriptor number: 2>file
				l.inWord = false
			}
			l.flush()
			l.operator()
		default:
			l.begin()
			l.word.WriteByte(c)
			l.i++
		}
	}
	if l.i > len(src) {
		l.i = len(src)
	}
	l.flush()
	return l.toks, l.subs
}

func (l *lexer) peek(n int) byte {
	if l.i+n < len(l.src) {
		return l.src[l.i+n]
	}
	return 0
}

func (l *lexer) begin() {
	if !l.inWord {
		l.inWord = true
		l.wstart = l.i
	}
}

func (l *lexer) flush() {
	if !l.inWord {
		return
	}
	w := l.word.String()
	l.toks = append(l.toks, token{kind: tokWord, val: w, start: l.wstart, end: min(l.i, len(l.src))})
	if l.delim > 0 {
		l.pending = append(l.pending, heredoc{delim: w, strip: l.delim == 2})
		l.delim = 0
	}
	l.word.Reset()
	l.inWord = false
	l.quoted = false
}

// newline ends a command at the '\n' at l.i and reads the bodies of the
// here-documents the line opened.
func (l *lexer) newline() {
	at := l.i
	l.i++
	for _, h := range l.pending {
		var body strings.Builder
		for l.i < len(l.src) {
			line := l.src[l.i:]
			next := len(l.src)
			if j := strings.IndexByte(line, '\n'); j >= 0 {
				line = line[:j]
				next = l.i + j + 1
			}
			l.i = next
			chk := line
			if h.strip {
				chk = strings.TrimLeft(chk, "\t")
			}
			if strings.TrimSpace(chk) == h.delim {
				break
			}
			body.WriteString(line)
			body.WriteByte('\n')
		}
		l.toks = append(l.toks, token{kind: tokBody, val: body.String(), start: at, end: at})
	}
	l.pending = nil
	l.toks = append(l.toks, token{kind: tokOp, val: "\n", start: at, end: at + 1})
}

func (l *lexer) double() {
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case c == '"':
			l.i++
			return
		case c == '\\' && l.i+1 < len(l.src) && strings.IndexByte("\"\\$`\n", l.src[l.i+1]) >= 0:
			if l.src[l.i+1] != '\n' {
				l.word.WriteByte(l.src[l.i+1])
			}
			l.i += 2
		case c == '$' && l.peek(1) == '(':
			l.subst()
		case c == '`':
			l.backtick()
		default:
			l.word.WriteByte(c)
			l.i++
		}
	}
}

// subst reads "$(...)" at l.i: the word keeps its text, and its body is
// read as commands later.
func (l *lexer) subst() {
	end := matchParen(l.src, l.i+1)
	if end < 0 {
		l.subs = append(l.subs, l.src[l.i+2:])
		l.word.WriteString(l.src[l.i:])
		l.i = len(l.src)
		return
	}
	l.subs = append(l.subs, l.src[l.i+2:end])
	l.word.WriteString(l.src[l.i : end+1])
	l.i = end + 1
}

func (l *lexer) backtick() {
	rest := l.src[l.i+1:]
	j := strings.IndexByte(rest, '`')
	if j < 0 {
		j = len(rest)
	}
	l.subs = append(l.subs, rest[:j])
	l.word.WriteString(l.src[l.i:min(len(l.src), l.i+j+2)])
	l.i += j + 2
}

// matchParen returns the index of the ')' closing the '(' at open, or -1.
func matchParen(s string, open int) int {
	depth := 0
	for j := open; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j
			}
		case '\\':
			j++
		case '\'', '"':
			k := strings.IndexByte(s[j+1:], s[j])
			if k < 0 {
				return -1
			}
			j += k + 1
		}
	}
	return -1
}

var shellOps = []string{
	"&>>", "<<<", "<<-",
	";;", "&&", "||", "|&", ">>", ">|", ">&", "<&", "<>", "<<", "&>",
	";", "&", "|", "(", ")", "<", ">",
}

func isRedirOp(op string) bool { return strings.ContainsAny(op, "<>") }

func (l *lexer) operator() {
	for _, op := range shellOps {
		if !strings.HasPrefix(l.src[l.i:], op) {
			continue
		}
		start := l.i
		l.i += len(op)
		if !isRedirOp(op) {
			l.toks = append(l.toks, token{kind: tokOp, val: op, start: start, end: l.i})
			return
		}
		t := token{kind: tokRedir, val: op, start: start, end: l.i}
		if op == ">&" || op == "<&" {
			j := l.i
			for j < len(l.src) && (l.src[j] >= '0' && l.src[j] <= '9' || l.src[j] == '-') {
				j++
			}
			if j > l.i {
				t.dup = true
				l.i = j
				t.end = j
			}
		}
		switch op {
		case "<<":
			l.delim = 1
		case "<<-":
			l.delim = 2
		}
		l.toks = append(l.toks, t)
		return
	}
	l.i++ // unreachable: every operator character starts an operator
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
