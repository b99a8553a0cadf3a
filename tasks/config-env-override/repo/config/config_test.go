package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pingsvc.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadDefaults(t *testing.T) {
	c, err := Load(write(t, `{"targets": ["https://a.example/healthz"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":9100" || c.LogLevel != "info" || time.Duration(c.Timeout) != 5*time.Second || c.MaxConns != 16 {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

func TestLoadFile(t *testing.T) {
	c, err := Load(write(t, `{"addr": ":8000", "log_level": "debug", "timeout": "750ms", "max_conns": 4,
		"targets": ["https://a.example", "https://b.example"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8000" || c.LogLevel != "debug" || time.Duration(c.Timeout) != 750*time.Millisecond || c.MaxConns != 4 || len(c.Targets) != 2 {
		t.Fatalf("got %+v", c)
	}
}

func TestLoadErrors(t *testing.T) {
	cases := map[string]string{
		`{"targets": []}`:                         "no targets",
		`{"targets": ["x"], "log_level": "loud"}`: "log_level",
		`{"targets": ["x"], "timeout": "soon"}`:   "duration",
		`{"targets": ["x"], "color": "blue"}`:     "unknown field",
		`{"targets": ["x"], "max_conns": 0}`:      "max_conns",
	}
	for body, want := range cases {
		_, err := Load(write(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%s) err = %v, want it to mention %q", body, err, want)
		}
	}
}
