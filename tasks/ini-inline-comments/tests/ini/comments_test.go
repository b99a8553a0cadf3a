package ini

import "testing"

func TestInlineComments(t *testing.T) {
	f := parse(t, `[server]
port = 8080 ; default
host = 0.0.0.0	# all interfaces
debug = on   ;
workers = 4 # cores ; roughly
`)
	cases := map[string]string{"port": "8080", "host": "0.0.0.0", "debug": "on", "workers": "4"}
	for k, want := range cases {
		if got, _ := f.Get("server", k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if f.Int("server", "port", 0) != 8080 {
		t.Error("port does not parse as an int")
	}
}

func TestCommentCharsWithoutSpaceKept(t *testing.T) {
	f := parse(t, `[links]
home = http://example.com/#top
mix = a;b#c
sql = host=db;port=5432 ; the replica
`)
	cases := map[string]string{"home": "http://example.com/#top", "mix": "a;b#c", "sql": "host=db;port=5432"}
	for k, want := range cases {
		if got, _ := f.Get("links", k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func TestQuotedValuesKeepCommentChars(t *testing.T) {
	f := parse(t, `greeting = "hello ; world # !"
padded = "  spaced ; out  "   ; trailing comment
escaped = "say \"hi\" # twice" # and a comment
`)
	cases := map[string]string{
		"greeting": "hello ; world # !",
		"padded":   "  spaced ; out  ",
		"escaped":  `say "hi" # twice`,
	}
	for k, want := range cases {
		if got, _ := f.Get("", k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func TestEmptyValueWithComment(t *testing.T) {
	f := parse(t, "[a]\nk = ; nothing here\n")
	if v, ok := f.Get("a", "k"); !ok || v != "" {
		t.Errorf("k = %q, %v; want empty", v, ok)
	}
}
