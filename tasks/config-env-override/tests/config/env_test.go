package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const fileBody = `{"addr": ":8000", "log_level": "debug", "timeout": "750ms", "max_conns": 4,
	"targets": ["https://a.example", "https://b.example"]}`

func clearEnv(t *testing.T) {
	for _, k := range []string{"PINGSVC_ADDR", "PINGSVC_LOG_LEVEL", "PINGSVC_TIMEOUT", "PINGSVC_MAX_CONNS", "PINGSVC_TARGETS"} {
		t.Setenv(k, "")
	}
}

func TestEnvOverridesFile(t *testing.T) {
	clearEnv(t)
	t.Setenv("PINGSVC_ADDR", ":9999")
	t.Setenv("PINGSVC_LOG_LEVEL", "warn")
	t.Setenv("PINGSVC_TIMEOUT", "2s")
	t.Setenv("PINGSVC_MAX_CONNS", "32")
	t.Setenv("PINGSVC_TARGETS", "https://c.example/healthz, https://d.example/healthz")
	c, err := Load(write(t, fileBody))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Addr: ":9999", LogLevel: "warn", Timeout: Duration(2 * time.Second), MaxConns: 32,
		Targets: []string{"https://c.example/healthz", "https://d.example/healthz"},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v, want %+v", c, want)
	}
}

func TestEnvPartialOverride(t *testing.T) {
	clearEnv(t)
	t.Setenv("PINGSVC_MAX_CONNS", "2")
	c, err := Load(write(t, fileBody))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxConns != 2 || c.Addr != ":8000" || c.LogLevel != "debug" || time.Duration(c.Timeout) != 750*time.Millisecond || len(c.Targets) != 2 {
		t.Fatalf("got %+v", c)
	}
}

func TestEnvOverridesDefaults(t *testing.T) {
	clearEnv(t)
	t.Setenv("PINGSVC_TIMEOUT", "1m")
	c, err := Load(write(t, `{"targets": ["https://a.example"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(c.Timeout) != time.Minute || c.Addr != ":9100" {
		t.Fatalf("got %+v", c)
	}
}

func TestEnvSuppliesTargets(t *testing.T) {
	clearEnv(t)
	t.Setenv("PINGSVC_TARGETS", "https://only.example")
	c, err := Load(write(t, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Targets, []string{"https://only.example"}) {
		t.Fatalf("targets = %q", c.Targets)
	}
}

func TestEmptyEnvIsNoOverride(t *testing.T) {
	clearEnv(t)
	c, err := Load(write(t, fileBody))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8000" || c.MaxConns != 4 || len(c.Targets) != 2 {
		t.Fatalf("got %+v", c)
	}
}

func TestBadEnvValues(t *testing.T) {
	cases := map[string]string{
		"PINGSVC_TIMEOUT":   "soon",
		"PINGSVC_MAX_CONNS": "lots",
		"PINGSVC_LOG_LEVEL": "loud",
	}
	for k, v := range cases {
		clearEnv(t)
		t.Setenv(k, v)
		_, err := Load(write(t, fileBody))
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: err = %v, want an error naming %s", k, v, err, k)
		}
	}
}
