package generate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDocClause(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"GetStringSlice", "GetStringSlice return the []string value of a flag with the given name\n", `its doc comment said: "GetStringSlice return the []string value of a flag with the given name"`},
		{"Parse", "Parse parses flag definitions from the argument list. It must be called\nafter all flags are defined.\n", "it should parse flag definitions from the argument list"},
		{"Apply", "Apply applies the change.\n\nMore detail.", "it should apply the change"},
		{"Match", "Match matches   a\nname.", "it should match a name"},
		{"IsSet", "IsSet is true when the flag was set.", "it should be true when the flag was set"},
		{"Visit", "Visit does the walk", "it should do the walk"},
		{"Mark", "Mark indicated that a flag is deprecated", `its doc comment said: "Mark indicated that a flag is deprecated"`},
		{"DecodeFile", "DecodeFile reads the file at path with [Decode] into [*T].", "it should read the file at path with Decode into *T"},
		{"Other", "Deprecated: use New.", `its doc comment said: "Deprecated: use New"`},
	} {
		if got := docClause(c.name, c.doc); got != c.want {
			t.Errorf("docClause(%q, %q) = %q, want %q", c.name, c.doc, got, c.want)
		}
	}
}

func TestPruneImports(t *testing.T) {
	orig := `package p

import (
	"fmt"
	yaml "gopkg.in/yaml.v3"
	"strings"

	_ "embed"
	"example.com/m/v2"
	"github.com/a/go-bar"
)

func F() { fmt.Println(strings.ToUpper("x"), yaml.Marshal, m.X, bar.Y) }

func G() { fmt.Println(m.X) }
`
	f, err := parser.ParseFile(token.NewFileSet(), "", orig, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := qualifiers(f)
	edited := strings.Replace(orig, `func F() { fmt.Println(strings.ToUpper("x"), yaml.Marshal, m.X, bar.Y) }`+"\n\n", "", 1)
	got, err := pruneImports([]byte(edited), before)
	if err != nil {
		t.Fatal(err)
	}
	want := `package p

import (
	"fmt"

	_ "embed"
	"example.com/m/v2"
)

func G() { fmt.Println(m.X) }
`
	if string(got) != want {
		t.Errorf("pruneImports =\n%s\nwant\n%s", got, want)
	}
	// A single import declaration goes whole.
	got, err = pruneImports([]byte("package p\n\nimport \"fmt\"\n\nfunc G() {}\n"), map[string]bool{"fmt": true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "package p\n\n\nfunc G() {}\n"; string(got) != want {
		t.Errorf("pruneImports = %q, want %q", got, want)
	}
}

func TestFailureMessage(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{"=== RUN   TestX\n    x_test.go:12: got 1, want 2\n    x_test.go:13: more\n--- FAIL: TestX (0.00s)\n", "got 1, want 2"},
		{"=== RUN   TestX\n--- FAIL: TestX (0.00s)\npanic: runtime error: index out of range [3] with length 3 [recovered, repanicked]\n", "runtime error: index out of range [3] with length 3"},
		{"panic: test timed out after 30s\n", ""},
		{"    x_test.go:1: " + strings.Repeat("a", 200) + "\n", strings.Repeat("a", 97) + "..."},
	} {
		if got := failureMessage(c.out); got != c.want {
			t.Errorf("failureMessage(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}

func TestCoverage(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cover.out")
	os.WriteFile(p, []byte("mode: set\nexample.com/m/a.go:3.14,5.2 1 1\nexample.com/m/a.go:7.2,9.3 2 0\nexample.com/m/sub/b.go:1.1,2.10 1 1\nother.org/x/c.go:1.1,9.1 1 1\n"), 0o644)
	cov, err := readCoverage(p, "example.com/m")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file      string
		line, col int
		want      bool
	}{
		{"a.go", 3, 14, true}, {"a.go", 4, 1, true}, {"a.go", 5, 2, true}, {"a.go", 5, 3, false}, {"a.go", 3, 13, false},
		{"a.go", 8, 1, false}, // ran zero times
		{"sub/b.go", 2, 5, true},
		{"c.go", 2, 1, false}, // another module's file
	} {
		if got := covers(cov[c.file], token.Position{Line: c.line, Column: c.col}); got != c.want {
			t.Errorf("covers(%s:%d.%d) = %v, want %v", c.file, c.line, c.col, got, c.want)
		}
	}
}

func TestIsTestFunc(t *testing.T) {
	for name, want := range map[string]bool{"Test": true, "TestX": true, "Test_x": true, "Testx": false, "TestMain": false, "BenchmarkX": false, "helper": false} {
		if got := isTestFunc(name); got != want {
			t.Errorf("isTestFunc(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestMentions(t *testing.T) {
	src := "package p\nfunc A() { x.Name(); Other() }\nfunc B() { Name() }\nfunc C() { y.Other.Z = 1 }\n"
	f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	decl := func(i int) ast.Node { return f.Decls[i] }
	for _, c := range []struct {
		decl      int
		name      string
		sel, bare bool
		want      bool
	}{
		{0, "Name", true, false, true}, {0, "Name", false, true, false}, {1, "Name", false, true, true}, {1, "Name", true, false, false},
		{0, "Other", false, true, true}, {2, "Other", false, true, false}, {2, "Other", true, false, true},
	} {
		if got := mentions(decl(c.decl), c.name, c.sel, c.bare); got != c.want {
			t.Errorf("mentions(decl %d, %s, sel=%v, bare=%v) = %v, want %v", c.decl, c.name, c.sel, c.bare, got, c.want)
		}
	}
}

// FuzzDeclSpan checks the text edit everything else rests on: cutting
// any top-level declaration's span out of a file leaves a file that
// parses, with that declaration gone and every other one intact.
func FuzzDeclSpan(f *testing.F) {
	f.Add("package p\n\n// F does things.\nfunc F() {\n\treturn\n} // trailing\n\nvar x = 1\n")
	f.Add("package p\nimport \"fmt\"\n/* block */ func G() { fmt.Println() }\ntype T struct{}\nfunc (T) M() {}")
	f.Add("package p\n\nfunc A() {}; func B() {}\n")
	f.Fuzz(func(t *testing.T, src string) {
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, "", src, parser.ParseComments)
		if err != nil {
			return
		}
		for i, d := range file.Decls {
			// Two declarations on one line share it; the edit works on
			// whole lines, and gofmt never writes such files.
			if i > 0 && fset.Position(file.Decls[i-1].End()).Line == fset.Position(d.Pos()).Line ||
				i+1 < len(file.Decls) && fset.Position(file.Decls[i+1].Pos()).Line == fset.Position(d.End()).Line {
				continue
			}
			out := cut([]byte(src), []span{declSpan(fset, []byte(src), d)})
			f2, err := parser.ParseFile(token.NewFileSet(), "", out, 0)
			if err != nil {
				t.Fatalf("removing decl %d of %q gives %q, which does not parse: %v", i, src, out, err)
			}
			if len(f2.Decls) != len(file.Decls)-1 {
				t.Fatalf("removing decl %d of %q gives %q with %d decls, want %d", i, src, out, len(f2.Decls), len(file.Decls)-1)
			}
		}
	})
}
