package yamlfield

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestErrors(t *testing.T) {
	e := Errors{File: "f.yaml"}
	if e.Err() != nil {
		t.Fatal("no problems, yet an error")
	}
	e.Add(7, "grade.format", "unknown format %q", "junit")
	e.Add(2, "", "the file is odd")
	e.Add(5, "history[1]", "empty")
	err := e.Err()
	want := "f.yaml:2: the file is odd\nf.yaml:5: field \"history[1]\": empty\nf.yaml:7: field \"grade.format\": unknown format \"junit\""
	if err == nil || err.Error() != want {
		t.Fatalf("got %q\nwant %q", err, want)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Line != 2 {
		t.Fatalf("errors.As gives %+v", fe)
	}
	if !e.Failed("history") || !e.Failed("grade") || e.Failed("hist") || e.Failed("id") {
		t.Error("Failed does not match fields and their entries only")
	}
}

func TestSyntaxAndNodes(t *testing.T) {
	var n yaml.Node
	err := yaml.Unmarshal([]byte("a: [1\nb: 2\n"), &n)
	if err == nil {
		t.Fatal("bad YAML parsed")
	}
	fe := Syntax("x.yaml", err)
	if fe.Line < 1 || !strings.HasPrefix(fe.Problem, "invalid YAML: ") {
		t.Fatalf("syntax error %+v", fe)
	}
	if err := yaml.Unmarshal([]byte("a: &x [1]\nb: *x\nc: hi\nd:\n"), &n); err != nil {
		t.Fatal(err)
	}
	m := n.Content[0]
	if got := Kind(Deref(m.Content[3])); got != "a list" {
		t.Errorf("alias kind %q", got)
	}
	if got := Describe(m.Content[5]); got != `"hi"` {
		t.Errorf("describe scalar %q", got)
	}
	if got := Describe(m.Content[7]); got != "nothing" {
		t.Errorf("describe null %q", got)
	}
}

func TestClosest(t *testing.T) {
	names := []string{"timeout", "format", "reward", "command"}
	for in, want := range map[string]string{"timout": "timeout", "formt": "format", "owner": "", "comand": "command"} {
		if got := Closest(in, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
}
