package fidelity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

func TestParseFacts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Facts
	}{
		{"empty", "", Facts{}},
		{"noise before the first fact is dropped", "hello\n" + factMarker + "a\n1\n", Facts{"a": "1"}},
		{"empty value", factMarker + "a\n" + factMarker + "b\nx\n", Facts{"a": "", "b": "x"}},
		{"multi-line value keeps inner blank lines", factMarker + "a\nx\n\ny\n\n", Facts{"a": "x\n\ny"}},
		{"repeated fact is joined", factMarker + "a\nx\n" + factMarker + "b\n" + factMarker + "a\ny\n", Facts{"a": "x\ny", "b": ""}},
		{"no trailing newline", factMarker + "a\nx", Facts{"a": "x"}},
		{"carriage returns in names", factMarker + "a\r\nx\n", Facts{"a": "x"}},
		{"prelude's leading blank line", kv("a", "1", "b", "2"), Facts{"a": "1", "b": "2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseFacts(tc.in); !maps.Equal(got, tc.want) {
				t.Errorf("parseFacts(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzParseFacts(f *testing.F) {
	f.Add(kv("a", "1", "b", "two\nlines"))
	f.Add("@@fact x\n\n\n@@fact \n@@fact x\n")
	f.Add("junk\r\n@@fact k\r\nv\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		first := parseFacts(in)
		again := parseFacts(formatFacts(first))
		if !maps.Equal(first, again) {
			t.Fatalf("round trip changed the facts:\n%q\n%q", first, again)
		}
	})
}

func TestFactsAccessors(t *testing.T) {
	f := parseFacts(kv("n", " 42 kB", "list", "3\n\nx\n 7 ", "flag", "yes"))
	if n, ok := f.num("n"); !ok || n != 42 {
		t.Errorf("num = %d, %v", n, ok)
	}
	if got := f.nums("list"); len(got) != 2 || got[0] != 3 || got[1] != 7 {
		t.Errorf("nums = %v", got)
	}
	if !f.yes("flag") || f.yes("n") || f.has("missing") {
		t.Error("yes/has disagree with the facts")
	}
	var none Facts
	if none.get("x") != "" || none.lines("x") != nil || none.has("x") {
		t.Error("a nil Facts must read as empty")
	}
}

func TestParseMountinfo(t *testing.T) {
	in := lines(
		`36 35 98:0 /mnt1 /mnt/my\040disk rw,noatime master:1 - ext3 /dev/root rw,errors=continue`,
		`37 35 0:5 / /proc rw - proc proc rw`,
		`short line`,
		`38 35 0:6 / /x rw shared:1 shared:2 - tmpfs`,
	)
	got := parseMountinfo(in)
	if len(got) != 3 {
		t.Fatalf("got %d entries, want 3: %+v", len(got), got)
	}
	want := mountEntry{root: "/mnt1", point: "/mnt/my disk", opts: "rw,noatime", fstype: "ext3", source: "/dev/root", super: "rw,errors=continue"}
	if got[0] != want {
		t.Errorf("entry 0 = %+v, want %+v", got[0], want)
	}
	if got[2].fstype != "tmpfs" || got[2].source != "" {
		t.Errorf("entry without a source = %+v", got[2])
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/a\040b`:    "/a b",
		`/tab\011`:   "/tab\t",
		`/back\134x`: `/back\x`,
		`/bad\9`:     `/bad\9`,
		`/end\`:      `/end\`,
		`/big\777`:   `/big\777`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add(laptopMounts)
	f.Add(sandboxMounts)
	f.Add(`1 2 3 \ \0 - -`)
	f.Fuzz(func(t *testing.T, in string) {
		got := parseMountinfo(in)
		if n := strings.Count(in, "\n") + 1; len(got) > n {
			t.Fatalf("%d entries from %d lines", len(got), n)
		}
		for _, m := range got {
			_ = mountTells(m)
		}
	})
}

func FuzzParseProcStat(f *testing.F) {
	f.Add(pid1Stat(5))
	f.Add("12 (a) b) c) S 1 2")
	f.Add("x (")
	f.Fuzz(func(t *testing.T, stat string) {
		p, rest, ok := parseProcStat(stat)
		if ok && (len(rest) < 2 || !strings.Contains(stat, "("+p.comm+")")) {
			t.Fatalf("parsed %q into %+v %q", stat, p, rest)
		}
	})
}

func TestParseProcStatOddNames(t *testing.T) {
	p, rest, ok := parseProcStat("77 (tmux: server (1)) S 1 77 77 0")
	if !ok || p.pid != 77 || p.ppid != 1 || p.comm != "tmux: server (1)" || rest[0] != "S" {
		t.Errorf("got %+v %q %v", p, rest, ok)
	}
}

// TestGatherFailures checks that every way an observation can fail is an
// error row with its reason, never a tell or an ok.
func TestGatherFailures(t *testing.T) {
	tests := []struct {
		name  string
		probe string
		sb    *fakeSandbox
		want  string
	}{
		{"run fails", "term", &fakeSandbox{runErr: sandbox.ErrClosed}, "sandbox is closed"},
		{"no shell", "term", &fakeSandbox{runErr: fmt.Errorf("/bin/sh: %w", sandbox.ErrCommandNotFound)}, "command not found"},
		{"shell fails", "term", &fakeSandbox{code: 2}, "exited with 2: sh: 1: syntax error"},
		{"timeout", "term", &fakeSandbox{timedOut: true, code: 137}, "timed out after 15s"},
		{"missing facts", "home-dir", &fakeSandbox{out: kv("home", "/home/maya")}, `observation lacks "uid"`},
		{"script cannot observe", "tools", &fakeSandbox{out: kv("error", "no\nmore")}, "cannot observe: no"},
		{"stat fails", "dockerenv-file", &fakeSandbox{statErr: errors.New("channel broken")}, "channel broken"},
		{"read fails", "machine-id", &fakeSandbox{statErr: errors.New("channel broken")}, "channel broken"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			row := auditOne(t.Context(), tc.sb, probeByName(t, tc.probe), nil)
			if row.Status != StatusError || !strings.Contains(row.Evidence, tc.want) {
				t.Errorf("got %s %q, want error containing %q", row.Status, row.Evidence, tc.want)
			}
		})
	}
}

func TestPanickingJudgeIsAnError(t *testing.T) {
	p := Probe{
		Name: "boom", keys: []string{"a"},
		observe: script("fact a\necho 1"),
		judge:   func(Facts, Facts) verdict { panic("index out of range") },
	}
	row := auditOne(t.Context(), &fakeSandbox{out: kv("a", "1")}, p, nil)
	if row.Status != StatusError || !strings.Contains(row.Evidence, "index out of range") {
		t.Errorf("got %s %q", row.Status, row.Evidence)
	}
}

func TestReferenceEqualityIsOK(t *testing.T) {
	p := probeByName(t, "pid1-name")
	out := kv("comm", "process_api", "cmdline", "/process_api --port 49")
	profile := &Profile{Version: ProfileVersion, Observations: map[string]Observation{p.Name: {Facts: parseFacts(out)}}}
	if row := auditOne(t.Context(), &fakeSandbox{out: out}, p, nil); row.Status != StatusTell {
		t.Fatalf("without a reference: %s %q", row.Status, row.Evidence)
	}
	if row := auditOne(t.Context(), &fakeSandbox{out: out}, p, profile); row.Status != StatusOK || !row.Compared {
		t.Errorf("against an identical reference: %s %q compared=%v", row.Status, row.Evidence, row.Compared)
	}
}

func TestStaleReferenceIsIgnored(t *testing.T) {
	p := probeByName(t, "home-dir")
	profile := &Profile{Version: ProfileVersion, Observations: map[string]Observation{
		p.Name: {Facts: Facts{"home": "/home/ana"}}, // captured by an older probe set
	}}
	if ref := profile.reference(p); ref != nil {
		t.Errorf("reference %v lacks facts and must not be used", ref)
	}
	failed := &Profile{Version: ProfileVersion, Observations: map[string]Observation{p.Name: {Error: "timed out"}}}
	if ref := failed.reference(p); ref != nil {
		t.Errorf("a failed observation must not be a reference")
	}
}

func TestAuditOptions(t *testing.T) {
	sb := &fakeSandbox{out: kv("term", "dumb", "uid", "0")}
	t.Run("filter keeps probe order", func(t *testing.T) {
		r, err := Audit(t.Context(), sb, AuditOptions{Probes: []string{"running-as-root", "term"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Rows) != 2 || r.Rows[0].Probe != "running-as-root" || r.Rows[1].Probe != "term" {
			t.Fatalf("rows %+v", r.Rows)
		}
		if r.Counts.Tell != 2 || r.Score != 0 || r.Counts.StrongTell != 1 {
			t.Errorf("counts %+v score %d", r.Counts, r.Score)
		}
	})
	t.Run("unknown probe", func(t *testing.T) {
		if _, err := Audit(t.Context(), sb, AuditOptions{Probes: []string{"term", "nope"}}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("profile version", func(t *testing.T) {
		_, err := Audit(t.Context(), sb, AuditOptions{Profile: &Profile{Version: 99}})
		if !errors.Is(err, ErrProfileVersion) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := Audit(ctx, sb, AuditOptions{}); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("reference recorded", func(t *testing.T) {
		p := &Profile{Version: ProfileVersion, CapturedAt: time.Unix(1750000000, 0).UTC(), Host: HostInfo{Kernel: "6.8.0"}}
		r, err := Audit(t.Context(), sb, AuditOptions{Profile: p, Probes: []string{"term"}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Reference == nil || r.Reference.Host.Kernel != "6.8.0" || r.Rows[0].Compared {
			t.Errorf("reference %+v, compared %v (the profile has no term observation)", r.Reference, r.Rows[0].Compared)
		}
	})
}

func TestCaptureFailsWhenNothingObserves(t *testing.T) {
	if _, err := Capture(t.Context(), &fakeSandbox{runErr: sandbox.ErrClosed}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("err = %v", err)
	}
}

func TestForEachBoundsConcurrency(t *testing.T) {
	const n, limit = 20, 3
	var inflight, started, peak atomic.Int32
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		forEach(t.Context(), n, limit, func(_ context.Context, _ int) {
			started.Add(1)
			cur := inflight.Add(1)
			for {
				old := peak.Load()
				if cur <= old || peak.CompareAndSwap(old, cur) {
					break
				}
			}
			<-release
			inflight.Add(-1)
		})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for inflight.Load() < limit {
		if time.Now().After(deadline) {
			t.Fatalf("only %d calls in flight", inflight.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if got := started.Load(); got != limit {
		t.Errorf("%d calls started while %d were blocked", got, limit)
	}
	close(release)
	<-done
	if started.Load() != n || peak.Load() > limit {
		t.Errorf("started %d (want %d), peak %d (limit %d)", started.Load(), n, peak.Load(), limit)
	}
}
