package generate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/verisim/verisim/internal/task"

	"github.com/verisim/verisim/internal/lazyregexp"
)

// mutant is one small change to one expression.
type mutant struct {
	pkg        *goPackage
	file       string // module-relative path
	start, end int    // byte range of the file replaced by repl
	repl       string
	line       int
	desc       string // "< → <="
	orig       string // the original line, trimmed
}

// mutation names the change for metadata: "flag.go:123: < → <=".
func (mu *mutant) mutation() string { return fmt.Sprintf("%s:%d: %s", mu.file, mu.line, mu.desc) }

// minSnippet is the shortest original line a mutant may be on: the line
// is the task's snippet, and a short one ("return true") is no evidence of
// anything when found in a tree.
const minSnippet = 12

// InjectBug makes up to o.Max tasks from the Go module at module, each a
// copy of the module with one expression changed in code the package's
// tests cover (a comparison or logical operator swapped, + and -
// swapped, an index or slice bound off by one, a negation dropped, a
// boolean result flipped), kept only if the
// package still builds and some of its tests now fail. The package's test
// files are both in the repository and the hidden tests; the failing tests
// grade it. It returns the task directories written in outDir.
func InjectBug(ctx context.Context, module, outDir string, o Options) ([]string, error) {
	o = o.withDefaults()
	profile, err := os.CreateTemp("", "verisim-cover-*.out")
	if err != nil {
		return nil, err
	}
	profile.Close()
	defer os.Remove(profile.Name())
	m, err := openModule(ctx, module, o, profile.Name())
	if err != nil {
		return nil, err
	}
	defer m.close()
	covered, err := readCoverage(profile.Name(), m.path)
	if err != nil {
		return nil, err
	}
	muts, err := m.mutants(covered)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x627567)) // "bug"
	rng.Shuffle(len(muts), func(i, j int) { muts[i], muts[j] = muts[j], muts[i] })
	m.log.Info("inject-bug candidates", "count", len(muts))

	prefix := m.short + "-bug-"
	done := map[string]bool{} // mutations already made into tasks, by this run or earlier ones
	for _, meta := range existingMeta(outDir, prefix) {
		if meta["generator"] == "inject-bug" && meta["module"] == m.id() {
			done[meta["mutation"]] = true
		}
	}
	usedLines := map[string]bool{}
	var dirs []string
	tries := 0
	for _, mu := range muts {
		if len(dirs) >= o.Max || tries >= maxTries {
			break
		}
		if err := ctx.Err(); err != nil {
			return dirs, err
		}
		lineKey := fmt.Sprintf("%s:%d", mu.file, mu.line)
		if done[mu.mutation()] || usedLines[lineKey] {
			continue
		}
		tries++
		n := 1
		for exists(outDir, prefix+strconv.Itoa(n)) {
			n++
		}
		g, why, err := m.tryMutant(ctx, mu, prefix+strconv.Itoa(n), o.Seed)
		if err != nil {
			return dirs, err
		}
		if g == nil {
			m.log.Debug("mutant rejected", "mutation", mu.mutation(), "why", why)
			continue
		}
		dir, err := m.write(outDir, g)
		if err != nil {
			return dirs, err
		}
		m.log.Info("task written", "id", g.task.ID, "mutation", mu.mutation(), "dir", dir)
		usedLines[lineKey] = true
		done[mu.mutation()] = true
		dirs = append(dirs, dir)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("inject-bug on %s: %w (%d candidates, %d tried)", m.id(), ErrNoCandidates, len(muts), tries)
	}
	return dirs, nil
}

// coverBlock is one block of a coverage profile that ran.
type coverBlock struct{ startLine, startCol, endLine, endCol int }

// readCoverage reads a go test -coverprofile file into the blocks that
// ran, by module-relative file path.
func readCoverage(file, modPath string) (map[string][]coverBlock, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("coverage profile: %w", err)
	}
	blocks := map[string][]coverBlock{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// github.com/a/b/file.go:12.34,14.2 1 5
		line := sc.Text()
		name, rest, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "mode:") {
			continue
		}
		var b coverBlock
		var stmts, count int
		if _, err := fmt.Sscanf(rest, "%d.%d,%d.%d %d %d", &b.startLine, &b.startCol, &b.endLine, &b.endCol, &stmts, &count); err != nil || count == 0 {
			continue
		}
		rel, ok := strings.CutPrefix(name, modPath+"/")
		if !ok {
			continue
		}
		blocks[rel] = append(blocks[rel], b)
	}
	return blocks, sc.Err()
}

func covers(blocks []coverBlock, p token.Position) bool {
	for _, b := range blocks {
		after := p.Line > b.startLine || p.Line == b.startLine && p.Column >= b.startCol
		before := p.Line < b.endLine || p.Line == b.endLine && p.Column <= b.endCol
		if after && before {
			return true
		}
	}
	return false
}

// swaps are the operator mutations: each operator and what it becomes.
var swaps = map[token.Token]token.Token{
	token.LSS: token.LEQ, token.LEQ: token.LSS,
	token.GTR: token.GEQ, token.GEQ: token.GTR,
	token.EQL: token.NEQ, token.NEQ: token.EQL,
	token.ADD: token.SUB, token.SUB: token.ADD,
	token.LAND: token.LOR, token.LOR: token.LAND,
}

// mutants lists every mutation of covered code in the packages that have
// tests, in a fixed order (by file and position).
func (m *module) mutants(covered map[string][]coverBlock) ([]*mutant, error) {
	var out []*mutant
	for _, p := range m.pkgs {
		if len(p.testFiles) == 0 {
			continue
		}
		ps, err := m.parse(p)
		if err != nil {
			return nil, err
		}
		for _, rel := range p.goFiles {
			src := m.files[rel].data
			if isGenerated(src) || len(covered[rel]) == 0 {
				continue
			}
			for _, d := range ps.files[rel].Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					out = append(out, m.funcMutants(p, rel, src, ps.fset, fd.Body, covered[rel])...)
				}
			}
		}
	}
	return out, nil
}

func (m *module) funcMutants(p *goPackage, rel string, src []byte, fset *token.FileSet, body *ast.BlockStmt, covered []coverBlock) []*mutant {
	var out []*mutant
	add := func(at token.Pos, start, end token.Pos, repl, desc string) {
		pos := fset.Position(at)
		if !covers(covered, pos) {
			return
		}
		ls := lineSpan(src, pos.Offset, pos.Offset)
		mu := &mutant{
			pkg: p, file: rel, start: fset.Position(start).Offset, end: fset.Position(end).Offset,
			repl: repl, line: pos.Line, desc: desc, orig: strings.TrimSpace(string(src[ls.start:ls.end])),
		}
		// The line must tell this spot apart from every other in the
		// module: it is the task's snippet.
		if len(mu.orig) < minSnippet || m.occurrences(mu.orig) != 1 {
			return
		}
		out = append(out, mu)
	}
	offByOne := map[ast.Expr]bool{}
	bound := func(e ast.Expr) {
		be, ok := e.(*ast.BinaryExpr)
		if !ok || (be.Op != token.ADD && be.Op != token.SUB) {
			return
		}
		if lit, ok := be.Y.(*ast.BasicLit); ok && lit.Kind == token.INT && lit.Value == "1" {
			x := string(src[fset.Position(be.X.Pos()).Offset:fset.Position(be.X.End()).Offset])
			offByOne[be] = true
			add(be.OpPos, be.Pos(), be.End(), x, fmt.Sprintf("%s → %s", exprText(src, fset, be), x))
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IndexExpr:
			bound(n.Index)
		case *ast.SliceExpr:
			for _, e := range []ast.Expr{n.Low, n.High, n.Max} {
				if e != nil {
					bound(e)
				}
			}
		case *ast.BinaryExpr:
			to, ok := swaps[n.Op]
			if !ok || offByOne[n] || (n.Op == token.ADD || n.Op == token.SUB) && (stringy(n.X) || stringy(n.Y)) {
				return true
			}
			add(n.OpPos, n.OpPos, n.OpPos+token.Pos(len(n.Op.String())), to.String(), n.Op.String()+" → "+to.String())
		case *ast.UnaryExpr:
			if n.Op == token.NOT {
				add(n.OpPos, n.OpPos, n.OpPos+1, "", "drop !")
			}
		case *ast.ReturnStmt:
			if len(n.Results) == 1 {
				if id, ok := n.Results[0].(*ast.Ident); ok && (id.Name == "true" || id.Name == "false") {
					flip := map[string]string{"true": "false", "false": "true"}[id.Name]
					add(id.Pos(), id.Pos(), id.End(), flip, "return "+id.Name+" → return "+flip)
				}
			}
		}
		return true
	})
	return out
}

// stringy reports whether e is (or adds up) a string literal: + there is
// concatenation, and - would not compile.
func stringy(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.STRING
	case *ast.BinaryExpr:
		return e.Op == token.ADD && (stringy(e.X) || stringy(e.Y))
	case *ast.ParenExpr:
		return stringy(e.X)
	}
	return false
}

func exprText(src []byte, fset *token.FileSet, e ast.Expr) string {
	return string(src[fset.Position(e.Pos()).Offset:fset.Position(e.End()).Offset])
}

// tryMutant checks one mutant and, if some tests catch it, returns the
// task. A rejected mutant gives nil and why; err is for failures to check
// at all.
func (m *module) tryMutant(ctx context.Context, mu *mutant, id string, seed int64) (_ *generated, _ string, retErr error) {
	orig := m.files[mu.file].data
	mutated := slices.Concat(orig[:mu.start], []byte(mu.repl), orig[mu.end:])
	mutated, err := gofmtLike(orig, mutated)
	if err != nil {
		return nil, "the mutant does not parse: " + err.Error(), nil
	}
	e := edits{mu.file: mutated}
	if err := m.apply(e); err != nil {
		return nil, "", errors.Join(err, m.restore(e))
	}
	defer func() {
		// Later mutants are tried on the same copy: it must be whole.
		if err := m.restore(e); err != nil && retErr == nil {
			retErr = err
		}
	}()
	timeout := m.timeoutFor(mu.pkg)
	res, err := m.goTest(ctx, timeout+buildTime, "test", "-json", "-timeout="+timeout.String(), mu.pkg.pattern())
	if err != nil {
		return nil, "", err
	}
	switch {
	case res.buildFailed:
		return nil, "the package does not build: " + firstLine([]byte(res.log)), nil
	case res.timedOut:
		// A mutant that hangs would make a task graded by its timeout.
		return nil, "the tests time out", nil
	case len(res.failed) == 0:
		return nil, "no test fails", nil
	}

	tests := map[string][]byte{}
	for _, rel := range mu.pkg.testFiles {
		tests[rel] = m.files[rel].data
	}
	failing := slices.Sorted(slices.Values(res.failed))
	t := &task.Task{
		ID:          id,
		Instruction: bugInstruction(mu, res.failed[0], failureMessage(res.output[res.failed[0]]), seed),
		Repo:        task.Repo{Dir: "repo", Name: m.short},
		Setup:       []string{"go build ./..."},
		Grade: task.Grade{
			Command: "go test -v " + mu.pkg.pattern(),
			Format:  task.FormatGo,
			Reward:  task.RewardPass,
			Protect: []string{"**/*_test.go"},
			Tests:   failing,
		},
		Tags: []string{"go", "bugfix", "generated"},
		Meta: map[string]string{
			"source":    "generate",
			"generator": "inject-bug",
			"module":    m.id(),
			"package":   m.importPath(mu.pkg.dir),
			"mutation":  mu.mutation(),
			"snippet":   mu.orig,
		},
	}
	return &generated{task: t, repo: e, tests: tests, solution: map[string][]byte{mu.file: orig}}, "", nil
}

var (
	// t.Errorf and friends: "    flag_test.go:123: message".
	testLogRE = lazyregexp.New(`^\s+[\w.-]+_test\.go:\d+: (.+)$`)
	// A runtime panic (not the test binary's own timeout).
	panicRE = lazyregexp.New(`^panic: (.+?)( \[recovered[^\]]*\])?$`)
)

// failureMessage is the first thing a failing test said: its first log
// line or its panic, "" if neither is found.
func failureMessage(output string) string {
	for _, l := range strings.Split(output, "\n") {
		if m := panicRE.FindStringSubmatch(l); m != nil && !strings.HasPrefix(m[1], "test timed out") {
			return shorten(m[1])
		}
		if m := testLogRE.FindStringSubmatch(l); m != nil {
			return shorten(m[1])
		}
	}
	return ""
}

func shorten(s string) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > 100 {
		return string(r[:97]) + "..."
	}
	return s
}

// bugInstruction reports the failure as a developer would, tersely, and
// says nothing about where the bug is.
func bugInstruction(mu *mutant, test, msg string, seed int64) string {
	where := ""
	if mu.pkg.dir != "." {
		where = " in " + filepath.ToSlash(mu.pkg.dir)
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, mu.mutation())
	if msg == "" {
		return fmt.Sprintf("%s%s started failing after the last refactor, can you fix it?", test, where)
	}
	templates := []string{
		"%s%s started failing after the last refactor, can you fix it? It says: %s",
		"%s%s fails now (%s). Find the bug and fix it — don't change the test.",
		"go test is red: %s%s says: %s. Please fix the code.",
	}
	i := h.Sum64() % uint64(len(templates))
	return fmt.Sprintf(templates[i], test, where, msg)
}
