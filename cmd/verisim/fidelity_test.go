package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// knownTells are the tells the default machine on the local backend still
// shows, each for a stated reason. A tell not listed here fails the test: a
// regression, or a new probe whose finding must be fixed or explained.
var knownTells = map[string]string{
	// Limitations of a namespace sandbox (the probe marks them).
	"process-count":  "a PID namespace shows only the sandbox's processes",
	"pid1-start":     "PID 1 starts long after the shared kernel booted",
	"net-interfaces": "loopback-only network namespace",
	"dev-entries":    "no disks or input devices in a sandbox's /dev",
	"mount-sources":  "overlayfs lists its (neutrally named) layers",
	"root-fs-type":   "the root is overlayfs",
	"mount-types":    "no securityfs, debugfs, bpf or cgroup mounts",
	// Facts of the machine running the tests, shared through the kernel
	// and /usr: a capture of the host as reference would show the same.
	"capabilities": "the host's own bounding set lacks a capability",
	"boot-kernel":  "the host has no /lib/modules for its kernel",
}

// TestFidelityAuditDefault audits the default image and persona with a
// repository that has a believable history, and fails on any tell beyond
// knownTells and on any probe that could not decide.
func TestFidelityAuditDefault(t *testing.T) {
	if !pidsOnV1() {
		// The systemd cgroup layout needs one thread of the init placed
		// apart, which only a v1 hierarchy allows (local.setSession).
		knownTells["cgroup-self"] = "on cgroup v2 commands sit at the root of the cgroup namespace"
		knownTells["pid1-cgroup"] = "on cgroup v2 PID 1 sits at the root of the cgroup namespace"
		knownTells["cgroupfs"] = "on cgroup v2 /sys/fs/cgroup is not mounted inside"
	}
	c := newCLI(t)
	repo := lifelikeRepo(t)
	r := c.do("", "fidelity", "audit", "--repo", repo, "--json")
	if r.code != 0 {
		t.Fatalf("audit: code %d, stderr %q", r.code, r.stderr)
	}
	var rep struct {
		Score int `json:"score"`
		Rows  []struct {
			Probe, Status, Evidence string
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, r.stdout)
	}
	var tells []string
	for _, row := range rep.Rows {
		switch row.Status {
		case "error":
			t.Errorf("probe %s could not decide: %s", row.Probe, row.Evidence)
		case "tell":
			tells = append(tells, row.Probe)
			if _, ok := knownTells[row.Probe]; !ok {
				t.Errorf("unexpected tell %s: %s", row.Probe, row.Evidence)
			}
		}
	}
	sort.Strings(tells)
	t.Logf("score %d, %d tells: %s", rep.Score, len(tells), strings.Join(tells, " "))
	// The table form is what users read; it must be produced too.
	if r := c.do("", "fidelity", "audit", "--repo", repo, "--max-tells", "0"); r.code != 1 || !strings.Contains(r.stdout, "score") {
		t.Errorf("table with --max-tells 0: code %d, stdout %.300q", r.code, r.stdout)
	}
	c.assertClean()
}

// pidsOnV1 reports whether this host has the pids controller on a cgroup
// v1 hierarchy.
func pidsOnV1() bool {
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, l := range strings.Split(string(b), "\n") {
		if parts := strings.SplitN(l, ":", 3); len(parts) == 3 && parts[0] != "0" && strings.Contains(","+parts[1]+",", ",pids,") {
			return true
		}
	}
	return false
}

// lifelikeRepo makes a small Go project whose history spans months, by one
// author, as a real checkout would have.
func lifelikeRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "invoicer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(when time.Time, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		stamp := when.Format(time.RFC3339)
		cmd.Env = append(os.Environ(),
			"GIT_AUTHOR_NAME=Priya Natarajan", "GIT_AUTHOR_EMAIL=priya@invoicer.dev",
			"GIT_COMMITTER_NAME=Priya Natarajan", "GIT_COMMITTER_EMAIL=priya@invoicer.dev",
			"GIT_AUTHOR_DATE="+stamp, "GIT_COMMITTER_DATE="+stamp)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	start := time.Now().AddDate(0, -7, 0)
	git(start, "init", "-q", "-b", "main")
	files := []string{"go.mod", "main.go", "invoice.go", "invoice_test.go", "tax.go", "tax_test.go", "README.md", "Makefile", "cmd/export/main.go", "internal/pdf/pdf.go"}
	for i := range 24 {
		when := start.Add(time.Duration(i) * 211 * time.Hour)
		f := files[i%len(files)]
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		content := fmt.Sprintf("// %s revision %d\npackage main\n", f, i)
		if strings.HasSuffix(f, ".md") {
			content = fmt.Sprintf("# invoicer\n\nRevision %d of the docs.\n", i)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		git(when, "add", "-A")
		git(when, "commit", "-q", "-m", fmt.Sprintf("Update %s", f))
	}
	git(time.Now(), "remote", "add", "origin", "git@github.com:invoicer/invoicer.git")
	return dir
}
