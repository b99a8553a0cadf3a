package fidelity

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// hostMayError are probes that may fail to observe on an arbitrary test
// host: they need a git repository near the working directory or home.
var hostMayError = []string{"git-single-commit", "git-no-remote", "git-synthetic-author", "git-commit-dates", "repo-mtimes"}

// TestAuditHost runs every probe for real, through /bin/sh on this machine,
// and checks the report is well formed and that the core probes' scripts
// observe everything their judges need.
func TestAuditHost(t *testing.T) {
	r, err := Audit(t.Context(), hostSandbox{}, AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	probes := Probes()
	if len(r.Rows) != len(probes) {
		t.Fatalf("%d rows for %d probes", len(r.Rows), len(probes))
	}
	for i, row := range r.Rows {
		p := probes[i]
		if row.Probe != p.Name || row.Why != p.Why || row.Severity != p.Severity || row.Limitation != p.Limitation {
			t.Errorf("row %d = %+v does not describe probe %s", i, row, p.Name)
		}
		if !slices.Contains([]Status{StatusOK, StatusTell, StatusError}, row.Status) {
			t.Errorf("%s: status %q", row.Probe, row.Status)
		}
		if row.Evidence == "" || strings.ContainsAny(row.Evidence, "\n\t") {
			t.Errorf("%s: evidence %q is not one non-empty line", row.Probe, row.Evidence)
		}
		if row.Status == StatusError && !slices.Contains(hostMayError, row.Probe) {
			t.Errorf("%s: core probe errored on this host: %s", row.Probe, row.Evidence)
		}
	}
	c := r.Counts
	if c.OK+c.Tell+c.Error != len(probes) || r.Score < 0 || r.Score > 100 {
		t.Errorf("counts %+v, score %d", c, r.Score)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, p := range probes {
		if !strings.Contains(table.String(), p.Name) {
			t.Errorf("table lacks %s", p.Name)
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Rows) != len(probes) {
		t.Errorf("JSON does not decode into the report: %v", err)
	}
	t.Logf("host audit:\n%s", table.String())
}

// TestCaptureAndSelfAudit captures this host as a reference and audits the
// host against it: probes whose observation is stable must then find no
// tell, since the machine is, by definition, like itself.
func TestCaptureAndSelfAudit(t *testing.T) {
	p, err := Capture(t.Context(), hostSandbox{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != ProfileVersion || p.Host.Kernel == "" || p.Host.Arch == "" || p.CapturedAt.IsZero() {
		t.Errorf("profile header %+v %+v", p.Host, p.CapturedAt)
	}
	for _, pr := range Probes() {
		o, found := p.Observations[pr.Name]
		switch {
		case !found:
			t.Errorf("no observation for %s", pr.Name)
		case o.Error != "" && !slices.Contains(hostMayError, pr.Name):
			t.Errorf("%s: %s", pr.Name, o.Error)
		}
	}
	var b bytes.Buffer
	if err := p.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if id, err := os.ReadFile("/etc/machine-id"); err == nil && len(bytes.TrimSpace(id)) > 0 && bytes.Contains(b.Bytes(), bytes.TrimSpace(id)) {
		t.Error("the profile holds this machine's id; it is meant to be shared")
	}
	ref, err := ReadProfile(&b)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Audit(t.Context(), hostSandbox{}, AuditOptions{Profile: ref})
	if err != nil {
		t.Fatal(err)
	}
	stable := []string{
		"hostname", "workspace-dirs", "env-markers", "running-as-root", "user-groups", "timezone", "locale", "term", "tools",
		"pid1-name", "process-count", "init-system", "cgroup-self", "pid1-cgroup", "net-interfaces", "no-new-privs", "seccomp",
		"capabilities", "user-namespace", "dev-entries", "boot-kernel", "mount-sources", "root-fs-type", "mount-types",
	}
	for _, row := range r.Rows {
		if !slices.Contains(stable, row.Probe) {
			continue
		}
		if !row.Compared {
			t.Errorf("%s was not compared against the reference", row.Probe)
		}
		if row.Status != StatusOK {
			t.Errorf("%s: %s against this very machine: %s", row.Probe, row.Status, row.Evidence)
		}
	}
}
