package generate

import (
	"bytes"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"

	"github.com/verisim/verisim/internal/lazyregexp"
)

// Source is edited as text, by byte ranges found with go/parser, rather
// than by printing a changed syntax tree: go/printer places the comments
// of a tree with nodes removed unreliably, and text edits leave every
// untouched line exactly as its author wrote it.

// span is a byte range [start, end) of a file.
type span struct{ start, end int }

// declSpan is the text of a top-level declaration with its doc comment,
// from the start of its first line through the newline that ends it (so
// a trailing comment on the closing line goes too).
func declSpan(fset *token.FileSet, src []byte, d ast.Decl) span {
	start := d.Pos()
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Doc != nil {
			start = d.Doc.Pos()
		}
	case *ast.GenDecl:
		if d.Doc != nil {
			start = d.Doc.Pos()
		}
	}
	return lineSpan(src, fset.Position(start).Offset, fset.Position(d.End()).Offset)
}

// lineSpan widens [start, end) to whole lines.
func lineSpan(src []byte, start, end int) span {
	for start > 0 && src[start-1] != '\n' {
		start--
	}
	if i := bytes.IndexByte(src[end:], '\n'); i >= 0 {
		end += i + 1
	} else {
		end = len(src)
	}
	return span{start, end}
}

// cut removes spans (which must not overlap) from src.
func cut(src []byte, spans []span) []byte {
	spans = slices.Clone(spans)
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var out []byte
	at := 0
	for _, s := range spans {
		out = append(out, src[at:s.start]...)
		at = s.end
	}
	return append(out, src[at:]...)
}

// qualifiers are the names used as x in x.Sel anywhere in f: the imported
// packages f uses, plus variables, which do no harm here.
func qualifiers(f *ast.File) map[string]bool {
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	return used
}

var versionElemRE = lazyregexp.New(`^v[0-9]+$`)
var dotVersionRE = lazyregexp.New(`\.v[0-9]+$`)

// importName is the name an import binds: its explicit name, else a guess
// from the path (gopkg.in/yaml.v3 → yaml, example.com/x/v2 → x,
// github.com/a/go-foo → foo). The guess is only used together with the
// file's own uses, see pruneImports.
func importName(spec *ast.ImportSpec) string {
	if spec.Name != nil {
		return spec.Name.Name
	}
	p, err := strconv.Unquote(spec.Path.Value)
	if err != nil {
		return ""
	}
	elems := strings.Split(p, "/")
	name := elems[len(elems)-1]
	if versionElemRE.MatchString(name) && len(elems) > 1 {
		name = elems[len(elems)-2]
	}
	name = dotVersionRE.ReplaceAllString(name, "")
	name = strings.TrimPrefix(strings.TrimSuffix(strings.TrimSuffix(name, "-go"), ".go"), "go-")
	return strings.ReplaceAll(name, "-", "_")
}

// pruneImports removes the imports of src that before (the file's
// qualifiers before an edit) used and src no longer does. Without type
// information an import's name is a guess; requiring that the guess was
// in use before makes a wrong guess keep the import rather than drop a
// used one. A wrong guess that keeps an unused import fails the build,
// which rejects the candidate.
func pruneImports(src []byte, before map[string]bool) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	after := qualifiers(f)
	var spans []span
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			continue
		}
		var drop []span
		for _, s := range gd.Specs {
			is := s.(*ast.ImportSpec)
			name := importName(is)
			if name == "_" || name == "." || !before[name] || after[name] {
				continue
			}
			start, end := is.Pos(), is.End()
			if is.Doc != nil {
				start = is.Doc.Pos()
			}
			drop = append(drop, lineSpan(src, fset.Position(start).Offset, fset.Position(end).Offset))
		}
		if len(drop) == 0 {
			continue
		}
		if len(drop) == len(gd.Specs) {
			// The whole declaration goes, not an empty import ().
			spans = append(spans, declSpan(fset, src, gd))
			continue
		}
		spans = append(spans, drop...)
	}
	return cut(src, spans), nil
}

// onlyImports reports whether a file declares nothing but imports: a test
// file left so is removed rather than kept empty.
func onlyImports(src []byte) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		return false
	}
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); !ok || gd.Tok != token.IMPORT {
			return false
		}
	}
	return true
}

// gofmtLike formats edited when orig was gofmt-clean, so the edit leaves
// no formatting trace; an unformatted original stays unformatted, so that
// only the edited lines differ.
func gofmtLike(orig, edited []byte) ([]byte, error) {
	if f, err := format.Source(orig); err != nil || !bytes.Equal(f, orig) {
		return edited, nil
	}
	return format.Source(edited)
}

// generatedFileRE is the marker of generated Go files
// (https://go.dev/s/generatedcode); they are not code a developer edits.
var generatedFileRE = lazyregexp.New(`(?m)^// Code generated .* DO NOT EDIT\.$`)

func isGenerated(src []byte) bool { return generatedFileRE.Match(src) }

// testFuncKind says whether a test file's function is a test the go
// command runs and reports by name.
func isTestFunc(name string) bool {
	rest, ok := strings.CutPrefix(name, "Test")
	if !ok || name == "TestMain" {
		return false
	}
	// As the go command decides: TestXxx where Xxx does not start with a
	// lower-case letter.
	return rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z')
}

// distinctive is the longest line among lines (trimmed, at least minLen
// long, not a comment) that occurs exactly once in the whole module, "" if
// none does: a line that can show whether removed code has leaked back
// into a tree.
func (m *module) distinctive(lines []string, minLen int) string {
	best := ""
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if len(l) < minLen || len(l) <= len(best) || strings.HasPrefix(l, "//") {
			continue
		}
		if m.occurrences(l) == 1 {
			best = l
		}
	}
	return best
}

// occurrences counts s in every file of the module.
func (m *module) occurrences(s string) int {
	n := 0
	b := []byte(s)
	for _, f := range m.files {
		n += bytes.Count(f.data, b)
	}
	return n
}
