package ini

import (
	"reflect"
	"strings"
	"testing"
)

const sample = `; global keys live in the "" section
name = billing
# another comment

[Server]
host = 0.0.0.0
Port=8080
banner = "  Welcome to \"billing\"  "
debug = yes

[db]
dsn = postgres://billing@db/billing?sslmode=disable
`

func parse(t *testing.T, s string) *File {
	t.Helper()
	f, err := Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestParse(t *testing.T) {
	f := parse(t, sample)
	if got := f.String("", "name", ""); got != "billing" {
		t.Errorf("name = %q", got)
	}
	if got := f.Int("server", "port", 0); got != 8080 {
		t.Errorf("port = %d", got)
	}
	if got := f.String("SERVER", "banner", ""); got != `  Welcome to "billing"  ` {
		t.Errorf("banner = %q", got)
	}
	if !f.Bool("server", "debug", false) {
		t.Error("debug = false")
	}
	if got := f.String("db", "dsn", ""); got != "postgres://billing@db/billing?sslmode=disable" {
		t.Errorf("dsn = %q", got)
	}
	if got := f.Sections(); !reflect.DeepEqual(got, []string{"", "server", "db"}) {
		t.Errorf("sections = %q", got)
	}
}

func TestDefaults(t *testing.T) {
	f := parse(t, "[a]\nn = many\n")
	if f.Int("a", "n", 7) != 7 || f.Int("a", "missing", 3) != 3 || f.String("b", "x", "d") != "d" {
		t.Error("defaults not applied")
	}
}

func TestErrors(t *testing.T) {
	for _, s := range []string{"[open\n", "novalue\n", " = 1\n", `k = "a\q"` + "\n"} {
		if _, err := Parse(strings.NewReader(s)); err == nil {
			t.Errorf("Parse(%q) succeeded", s)
		}
	}
}
