package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleLog = `# date       span         project   note
2024-05-02   09:00-10:30  website   landing page
2024-05-02   13:00-15:00  website
2024-05-03   08:45-10:00  infra     disk alerts
2024-05-06   10:00-10:30  infra
2024-05-06   11:00-11:45  docs
`

func writeLog(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "time.log")
	if err := os.WriteFile(p, []byte(sampleLog), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReport(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"report", writeLog(t)}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := []string{
		"PROJECT  TIME",
		"website  3h30m",
		"infra    1h45m",
		"docs     0h45m",
		"TOTAL    6h00m",
	}
	got := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("report output:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
	}
}

func TestReportSince(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"report", "-since", "2024-05-03", writeLog(t)}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), "website") {
		t.Errorf("entries before -since were counted:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "TOTAL    2h30m") {
		t.Errorf("unexpected total:\n%s", out.String())
	}
}

func TestProjects(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"projects", writeLog(t)}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if out.String() != "docs\ninfra\nwebsite\n" {
		t.Errorf("projects = %q", out.String())
	}
}

func TestUnknownCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"frobnicate"}, &out, &errb); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}
