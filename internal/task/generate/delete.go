package generate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"hash/fnv"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/verisim/verisim/internal/task"

	"github.com/verisim/verisim/internal/lazyregexp"
)

// minStatements is how much code a deleted function must hold to make a
// task worth doing.
const minStatements = 5

// deletion is a DeleteFeature candidate: an exported function or method
// and the tests that use it.
type deletion struct {
	pkg    *goPackage
	file   string // module-relative path of the file declaring it
	decl   *ast.FuncDecl
	fset   *token.FileSet
	symbol string // Name or Type.Name
	// tests are the test files' declarations that go with it: those that
	// use it, and helpers-of-helpers that use those.
	tests map[string][]*ast.FuncDecl
	// testNames are the TestXxx functions among them.
	testNames []string
}

// DeleteFeature makes up to o.Max tasks from the Go module at module, each
// asking to add back an exported function or method (documented, at least
// five statements, used by tests of its package) that the task's copy of
// the module lacks, along with the tests that use it; those tests are the
// hidden tests. A candidate is kept only if the rest of the module builds
// and its remaining tests pass without it, the hidden tests fail without
// it, and they pass once the original file is restored. It returns the
// task directories written in outDir.
func DeleteFeature(ctx context.Context, module, outDir string, o Options) ([]string, error) {
	o = o.withDefaults()
	m, err := openModule(ctx, module, o, "")
	if err != nil {
		return nil, err
	}
	defer m.close()
	cands, err := m.deletions()
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x64656c657465)) // "delete"
	rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	m.log.Info("delete-feature candidates", "count", len(cands))

	var dirs []string
	tries := 0
	for _, c := range cands {
		if len(dirs) >= o.Max || tries >= maxTries {
			break
		}
		if err := ctx.Err(); err != nil {
			return dirs, err
		}
		id := m.short + "-delete-" + taskID(c.decl.Name.Name)
		if exists(outDir, id) {
			m.log.Info("task exists, skipping", "id", id)
			continue
		}
		tries++
		g, why, err := m.tryDeletion(ctx, c, id, o.Seed)
		if err != nil {
			return dirs, err
		}
		if g == nil {
			m.log.Debug("candidate rejected", "symbol", c.symbol, "why", why)
			continue
		}
		dir, err := m.write(outDir, g)
		if err != nil {
			return dirs, err
		}
		m.log.Info("task written", "id", id, "symbol", c.symbol, "dir", dir)
		dirs = append(dirs, dir)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("delete-feature on %s: %w (%d candidates, %d tried)", m.id(), ErrNoCandidates, len(cands), tries)
	}
	return dirs, nil
}

// parsed is one package's files, parsed.
type parsed struct {
	fset  *token.FileSet
	files map[string]*ast.File // by module-relative path
}

func (m *module) parse(p *goPackage) (*parsed, error) {
	ps := &parsed{fset: token.NewFileSet(), files: map[string]*ast.File{}}
	for _, rel := range append(slices.Clone(p.goFiles), p.testFiles...) {
		f, err := parser.ParseFile(ps.fset, rel, m.files[rel].data, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", rel, err)
		}
		ps.files[rel] = f
	}
	return ps, nil
}

// deletions lists the candidates in a fixed order (by file and position).
func (m *module) deletions() ([]*deletion, error) {
	// Every package, since a candidate must not be used by another.
	parsedPkgs := map[*goPackage]*parsed{}
	for _, p := range m.pkgs {
		ps, err := m.parse(p)
		if err != nil {
			return nil, err
		}
		parsedPkgs[p] = ps
	}
	var out []*deletion
	for _, p := range m.pkgs {
		if len(p.testFiles) == 0 {
			continue
		}
		ps := parsedPkgs[p]
		declared := declaredNames(ps, p)
		for _, rel := range p.goFiles {
			f := ps.files[rel]
			if isGenerated(m.files[rel].data) {
				continue
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || !qualifies(fd) || declared[fd.Name.Name] != 1 {
					continue
				}
				if usedElsewhere(parsedPkgs, p, fd) {
					continue
				}
				c := &deletion{pkg: p, file: rel, decl: fd, fset: ps.fset, symbol: symbolName(fd)}
				if !c.findTests(ps) {
					continue
				}
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// qualifies: exported, on an exported type if a method, documented, and
// big enough.
func qualifies(fd *ast.FuncDecl) bool {
	if !fd.Name.IsExported() || fd.Doc == nil || fd.Body == nil || fd.Name.Name == "init" || fd.Name.Name == "main" {
		return false
	}
	if fd.Recv != nil {
		if r := recvType(fd); r == "" || !ast.IsExported(r) {
			return false
		}
	}
	n := 0
	ast.Inspect(fd.Body, func(x ast.Node) bool {
		switch x.(type) {
		case *ast.BlockStmt, *ast.EmptyStmt:
		case ast.Stmt:
			n++
		}
		return true
	})
	return n >= minStatements
}

// recvType is the name of a method's receiver type.
func recvType(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

func symbolName(fd *ast.FuncDecl) string {
	if fd.Recv != nil {
		return recvType(fd) + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// declaredNames counts, in the package's non-test files, every name
// declared at package level, every method and every struct field or
// interface method. Without type information, a candidate is recognised in
// the tests by name alone, so it must be the only thing with its name.
func declaredNames(ps *parsed, p *goPackage) map[string]int {
	n := map[string]int{}
	for _, rel := range p.goFiles {
		f := ps.files[rel]
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				n[d.Name.Name]++
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, id := range s.Names {
							n[id.Name]++
						}
					case *ast.TypeSpec:
						n[s.Name.Name]++
					}
				}
			}
		}
		ast.Inspect(f, func(x ast.Node) bool {
			var fields *ast.FieldList
			switch t := x.(type) {
			case *ast.StructType:
				fields = t.Fields
			case *ast.InterfaceType:
				fields = t.Methods
			}
			if fields != nil {
				for _, fl := range fields.List {
					for _, id := range fl.Names {
						n[id.Name]++
					}
				}
			}
			return true
		})
	}
	return n
}

// mentions reports whether n refers to name: as x.name when sel, or as a
// bare identifier name (not a selector's right side) when bare.
func mentions(n ast.Node, name string, sel, bare bool) bool {
	found := false
	var visit func(ast.Node) bool
	visit = func(x ast.Node) bool {
		if found {
			return false
		}
		switch x := x.(type) {
		case *ast.SelectorExpr:
			if sel && x.Sel.Name == name {
				found = true
				return false
			}
			ast.Inspect(x.X, visit)
			return false
		case *ast.Ident:
			if bare && x.Name == name {
				found = true
			}
		}
		return true
	}
	ast.Inspect(n, visit)
	return found
}

// usedElsewhere reports whether code other than the package's tests uses
// fd: the package's other non-test code, or any file of another package.
// Deleting it would then break the build, or tests that are not hidden.
func usedElsewhere(pkgs map[*goPackage]*parsed, p *goPackage, fd *ast.FuncDecl) bool {
	name, method := fd.Name.Name, fd.Recv != nil
	for q, ps := range pkgs {
		var rels []string
		if q == p {
			rels = q.goFiles
		} else {
			rels = append(slices.Clone(q.goFiles), q.testFiles...)
		}
		for _, rel := range rels {
			f := ps.files[rel]
			for _, d := range f.Decls {
				if d == ast.Decl(fd) {
					continue // recursion is no use
				}
				// Another package can only say pkg.Name or x.Name; the
				// package itself can also call a function by its name.
				if mentions(d, name, true, q == p && !method) {
					return true
				}
			}
		}
	}
	return false
}

// findTests finds the test-file declarations to delete with the
// candidate, and reports whether at least one of them is a test.
func (c *deletion) findTests(ps *parsed) bool {
	name := c.decl.Name.Name
	method := c.decl.Recv != nil
	// Internal and external test files are two packages: helpers are
	// matched within each.
	groups := map[string][]string{}
	for _, rel := range c.pkg.testFiles {
		groups[ps.files[rel].Name.Name] = append(groups[ps.files[rel].Name.Name], rel)
	}
	c.tests = map[string][]*ast.FuncDecl{}
	for pkgName, rels := range groups {
		internal := pkgName == c.pkg.name
		removed := map[*ast.FuncDecl]bool{}
		var helpers []string
		for changed := true; changed; {
			changed = false
			for _, rel := range rels {
				for _, d := range ps.files[rel].Decls {
					fd, ok := d.(*ast.FuncDecl)
					if !ok || removed[fd] {
						continue
					}
					uses := mentions(fd, name, method || !internal, internal && !method)
					for _, h := range helpers {
						uses = uses || mentions(fd, h, false, true)
					}
					if !uses {
						continue
					}
					if fd.Name.Name == "TestMain" {
						return false // the whole package's tests depend on it
					}
					removed[fd] = true
					changed = true
					c.tests[rel] = append(c.tests[rel], fd)
					if fd.Recv == nil && !isTestFunc(fd.Name.Name) {
						helpers = append(helpers, fd.Name.Name)
					}
				}
			}
		}
	}
	for rel := range c.tests {
		for _, fd := range c.tests[rel] {
			if fd.Recv == nil && isTestFunc(fd.Name.Name) {
				c.testNames = append(c.testNames, fd.Name.Name)
			}
		}
	}
	slices.Sort(c.testNames)
	return len(c.testNames) > 0
}

// tryDeletion checks one candidate and, if it holds, returns the task. A
// rejected candidate gives nil and why; err is for failures to check at
// all.
func (m *module) tryDeletion(ctx context.Context, c *deletion, id string, seed int64) (_ *generated, _ string, retErr error) {
	snippet := m.distinctive(bodyLines(m.files[c.file].data, c.fset, c.decl), 20)
	if snippet == "" {
		return nil, "no line of its body is distinctive", nil
	}
	e, err := m.deletionEdits(c)
	if err != nil {
		return nil, "", fmt.Errorf("edit for %s: %w", c.symbol, err)
	}
	pattern := c.pkg.pattern()
	timeout := m.timeoutFor(c.pkg)
	args := []string{"test", "-json", "-timeout=" + timeout.String(), pattern}

	if err := m.apply(e); err != nil {
		return nil, "", errors.Join(err, m.restore(e))
	}
	defer func() {
		// Later candidates are tried on the same copy: it must be whole.
		if err := m.restore(e); err != nil && retErr == nil {
			retErr = err
		}
	}()
	if len(m.pkgs) > 1 {
		// Other packages may need it; the package itself is built by the
		// test run below.
		if out, err := m.goCmd(ctx, buildTime, "build", "./..."); err != nil {
			if ctx.Err() != nil {
				return nil, "", ctx.Err()
			}
			return nil, "the module does not build without it: " + firstLine(out), nil
		}
	}
	res, err := m.goTest(ctx, timeout+buildTime, args...)
	if err != nil {
		return nil, "", err
	}
	if !res.ok {
		return nil, "the remaining tests fail: " + firstLine([]byte(res.log)), nil
	}

	// The hidden tests back, the feature still missing: they must fail.
	hidden := edits{}
	for rel := range c.tests {
		hidden[rel] = m.files[rel].data
	}
	if err := m.apply(hidden); err != nil {
		return nil, "", err
	}
	if res, err = m.goTest(ctx, timeout+buildTime, args...); err != nil {
		return nil, "", err
	}
	if res.ok {
		return nil, "the hidden tests pass without it", nil
	}
	// And with the original file back, they must pass, each of them.
	if err := m.apply(edits{c.file: m.files[c.file].data}); err != nil {
		return nil, "", err
	}
	if res, err = m.goTest(ctx, timeout+buildTime, args...); err != nil {
		return nil, "", err
	}
	if !res.ok {
		return nil, "the hidden tests fail with the solution", nil
	}
	for _, n := range c.testNames {
		if !slices.Contains(res.passed, n) {
			return nil, n + " does not report passing with the solution", nil
		}
	}

	sig := signature(c.fset, c.decl)
	t := &task.Task{
		ID:          id,
		Instruction: deleteInstruction(c, sig, seed),
		Repo:        task.Repo{Dir: "repo", Name: m.short},
		Setup:       []string{"go build ./..."},
		Grade: task.Grade{
			Command: "go test -v " + pattern,
			Format:  task.FormatGo,
			Reward:  task.RewardPass,
			Protect: []string{"**/*_test.go"},
			Tests:   c.testNames,
		},
		Tags: []string{"go", "feature", "generated"},
		Meta: map[string]string{
			"source":    "generate",
			"generator": "delete-feature",
			"module":    m.id(),
			"package":   m.importPath(c.pkg.dir),
			"file":      c.file,
			"symbol":    c.symbol,
			"snippet":   snippet,
		},
	}
	return &generated{task: t, repo: e, tests: hidden, solution: map[string][]byte{c.file: m.files[c.file].data}}, "", nil
}

// timeoutFor bounds a go test run of the package (the test binary's
// -timeout; the command as a whole gets buildTime more).
func (m *module) timeoutFor(p *goPackage) time.Duration {
	if d, ok := m.testTimeout[m.importPath(p.dir)]; ok {
		return d
	}
	return 2 * time.Minute
}

const buildTime = 5 * time.Minute

// deletionEdits removes the candidate from its file and its tests from
// theirs, dropping imports only they used and test files left empty.
func (m *module) deletionEdits(c *deletion) (edits, error) {
	e := edits{}
	remove := map[string][]ast.Decl{c.file: {c.decl}}
	for rel, fds := range c.tests {
		for _, fd := range fds {
			remove[rel] = append(remove[rel], fd)
		}
	}
	for rel, decls := range remove {
		orig := m.files[rel].data
		f, err := parser.ParseFile(token.NewFileSet(), rel, orig, 0)
		if err != nil {
			return nil, err
		}
		var spans []span
		for _, d := range decls {
			spans = append(spans, declSpan(c.fset, orig, d))
		}
		out, err := pruneImports(cut(orig, spans), qualifiers(f))
		if err != nil {
			return nil, fmt.Errorf("%s after the edit: %w", rel, err)
		}
		if rel != c.file && onlyImports(out) {
			e[rel] = nil
			continue
		}
		if out, err = gofmtLike(orig, out); err != nil {
			return nil, fmt.Errorf("%s after the edit: %w", rel, err)
		}
		e[rel] = out
	}
	return e, nil
}

// bodyLines are the source lines inside a function's braces.
func bodyLines(src []byte, fset *token.FileSet, fd *ast.FuncDecl) []string {
	start := fset.Position(fd.Body.Lbrace).Offset + 1
	end := fset.Position(fd.Body.Rbrace).Offset
	return strings.Split(string(src[start:end]), "\n")
}

// signature is the declaration without its doc comment and body, on one
// line.
func signature(fset *token.FileSet, fd *ast.FuncDecl) string {
	d := *fd
	d.Doc, d.Body = nil, nil
	var b bytes.Buffer
	printer.Fprint(&b, fset, &d)
	return strings.Join(strings.Fields(b.String()), " ")
}

// deleteInstruction asks for the function back the way a developer would:
// the signature, where it lived, and what its doc comment said it does.
func deleteInstruction(c *deletion, sig string, seed int64) string {
	where := path.Base(c.file)
	if c.pkg.dir != "." {
		where = c.file
	}
	what := docClause(c.decl.Name.Name, c.decl.Doc.Text())
	templates := []string{
		"Add back `%s` in %s — %s. Callers in the tests expect it.",
		"`%s` went missing from %s in a refactor. Please bring it back: %s. The tests use it.",
		"Please implement `%s` in %s; %s.",
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, c.symbol)
	return fmt.Sprintf(templates[h.Sum64()%uint64(len(templates))], sig, where, what)
}

// docClause turns "GetX returns the x of y." into "it should return the x
// of y"; a doc comment that does not start with the name is quoted.
func docClause(name, doc string) string {
	para, _, _ := strings.Cut(strings.TrimSpace(doc), "\n\n")
	para = strings.Join(strings.Fields(para), " ")
	para = docLinkRE.ReplaceAllString(para, "$1") // [Decode] is a link in godoc, plain text here
	sentence := para
	if i := strings.Index(para, ". "); i >= 0 {
		sentence = para[:i]
	}
	sentence = strings.TrimSuffix(sentence, ".")
	rest, ok := strings.CutPrefix(sentence, name+" ")
	if !ok || rest == "" {
		return fmt.Sprintf("its doc comment said: %q", sentence)
	}
	verb, obj, _ := strings.Cut(rest, " ")
	clause := baseForm(verb)
	if clause == verb {
		// Not "Name returns ..." but, say, "Name indicated ...": quote it
		// rather than garble it.
		return fmt.Sprintf("its doc comment said: %q", sentence)
	}
	if obj != "" {
		clause += " " + obj
	}
	return "it should " + clause
}

var docLinkRE = lazyregexp.New(`\[(\*?[A-Za-z_][\w.]*)\]`)

// baseForm turns a third-person verb into its base form: returns → return,
// applies → apply, matches → match, is → be, has → have. Anything else is
// returned as it is.
func baseForm(v string) string {
	switch v {
	case "is":
		return "be"
	case "has":
		return "have"
	case "does":
		return "do"
	}
	if len(v) < 3 || !unicode.IsLower(rune(v[0])) {
		return v
	}
	switch {
	case strings.HasSuffix(v, "ies"):
		return strings.TrimSuffix(v, "ies") + "y"
	case strings.HasSuffix(v, "sses"), strings.HasSuffix(v, "shes"), strings.HasSuffix(v, "ches"),
		strings.HasSuffix(v, "xes"), strings.HasSuffix(v, "zes"), strings.HasSuffix(v, "oes"):
		return v[:len(v)-2]
	case strings.HasSuffix(v, "s") && !strings.HasSuffix(v, "ss"):
		return v[:len(v)-1]
	}
	return v
}

// firstLine is the first line of go command output that says something
// ("# pkg" headers aside), for logs.
func firstLine(out []byte) string {
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return ""
}
