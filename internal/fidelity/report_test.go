package fidelity

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func sampleReport() *Report {
	r := &Report{
		Version:   ReportVersion,
		Sandbox:   "sb-1",
		Started:   time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC),
		ElapsedMS: 1234,
		Reference: &ReferenceInfo{
			CapturedAt: time.Date(2025, 6, 1, 9, 30, 0, 0, time.UTC),
			Host:       HostInfo{Kernel: "6.8.0-45-generic", Arch: "x86_64", Distro: "Ubuntu 24.04.1 LTS"},
		},
		Rows: []Row{
			{Probe: "dockerenv-file", Severity: Strong, Status: StatusOK, Evidence: "no /.dockerenv", Why: "Docker creates /.dockerenv."},
			{Probe: "net-interfaces", Severity: Strong, Status: StatusTell, Evidence: "only lo in /sys/class/net", Why: "Only lo shows a namespace.",
				Limitation: "Needs a fake interface; a microVM has a NIC.", Compared: true},
			{Probe: "term", Severity: Weak, Status: StatusTell, Evidence: "TERM=dumb", Why: "No terminal started this shell."},
			{Probe: "git-single-commit", Severity: Strong, Status: StatusError, Evidence: "cannot observe: git is not installed", Why: "One commit means an import."},
			{Probe: "shell-pid", Severity: Strong, Status: StatusOK, Evidence: "the shell's PID is 48213", Why: "Tiny PIDs mean a new PID space."},
		},
	}
	r.tally()
	return r
}

func TestTally(t *testing.T) {
	r := sampleReport()
	want := Counts{OK: 2, Tell: 2, Error: 1, StrongTell: 1, Limited: 1}
	if r.Counts != want {
		t.Errorf("counts %+v, want %+v", r.Counts, want)
	}
	if r.Score != 50 {
		t.Errorf("score %d, want 50 (errors do not count)", r.Score)
	}
	if tells := r.Tells(); len(tells) != 2 || tells[0].Probe != "net-interfaces" {
		t.Errorf("tells %+v", tells)
	}
	empty := &Report{Rows: []Row{{Status: StatusError}}}
	empty.tally()
	if empty.Score != 0 {
		t.Errorf("score with nothing decided = %d, want 0", empty.Score)
	}
}

func TestWriteTableGolden(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "table.golden")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("table differs from %s:\n%s", golden, b.String())
	}
}

func TestWriteTableAligns(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(b.String(), "\n")[:6]
	col := strings.Index(rows[0], "STATUS")
	for _, l := range rows[1:] {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("status column not aligned at %d in %q", col, l)
		}
	}
	if !strings.Contains(b.String(), "tell*") || !strings.Contains(b.String(), "known limitation: Needs a fake interface") {
		t.Error("a tell with a known limitation must be marked and explained")
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	r := sampleReport()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*r, back) {
		t.Errorf("round trip changed the report:\n%+v\n%+v", *r, back)
	}
	for _, key := range []string{`"score": 50`, `"status": "tell"`, `"limitation": "Needs a fake interface`, `"strong_tell": 1`} {
		if !strings.Contains(b.String(), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

func TestProfileRoundTrip(t *testing.T) {
	p := &Profile{
		Version:    ProfileVersion,
		CapturedAt: time.Date(2025, 6, 1, 9, 30, 0, 0, time.UTC),
		Host:       HostInfo{Kernel: "6.8.0", Arch: "x86_64", Distro: "Ubuntu"},
		Observations: map[string]Observation{
			"term":          {Facts: Facts{"term": "xterm-256color"}},
			"git-no-remote": {Error: "cannot observe: git is not installed"},
		},
	}
	var b bytes.Buffer
	if err := p.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	back, err := ReadProfile(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, back) {
		t.Errorf("round trip changed the profile:\n%+v\n%+v", p, back)
	}
	if _, err := ReadProfile(strings.NewReader(`{"version": 2}`)); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("reading version 2: %v", err)
	}
	if _, err := ReadProfile(strings.NewReader(`{`)); err == nil {
		t.Error("reading truncated JSON succeeded")
	}
}

func TestOneLine(t *testing.T) {
	long := strings.Repeat("é", 300)
	for in, want := range map[string]string{
		"a\n\tb  c\n":   "a b c",
		"bad \xff byte": "bad ? byte",
		long:            strings.Repeat("é", maxEvidence-1) + "…",
	} {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}
