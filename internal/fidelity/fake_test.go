package fidelity

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

// fakeSandbox serves scripted outputs: every /bin/sh script prints out, and
// ReadFile and Stat serve files. It checks that probes run their scripts
// the way the package promises (through /bin/sh -c, with the prelude and a
// timeout).
type fakeSandbox struct {
	out   string
	files map[string]string
	// runErr, code and timedOut shape how every Run ends.
	runErr   error
	code     int
	timedOut bool
	// statErr is returned by Stat and ReadFile for every path.
	statErr error
}

var _ sandbox.Sandbox = (*fakeSandbox)(nil)

func (f *fakeSandbox) ID() string { return "fake" }

func (f *fakeSandbox) As(*sandbox.User) sandbox.Files { return f }

func (f *fakeSandbox) Run(_ context.Context, cmd sandbox.Cmd) (sandbox.ExitStatus, error) {
	if len(cmd.Args) != 3 || cmd.Args[0] != "/bin/sh" || cmd.Args[1] != "-c" || !strings.HasPrefix(cmd.Args[2], prelude) {
		return sandbox.ExitStatus{}, fmt.Errorf("fake: probes must run /bin/sh -c with the prelude, got %q", cmd.Args)
	}
	if cmd.Timeout <= 0 {
		return sandbox.ExitStatus{}, fmt.Errorf("fake: probe ran without a timeout")
	}
	if cmd.User != nil || cmd.Env != nil {
		return sandbox.ExitStatus{}, fmt.Errorf("fake: probes must run as the default user in the default environment")
	}
	if f.runErr != nil {
		return sandbox.ExitStatus{}, f.runErr
	}
	if cmd.Stdout != nil {
		io.WriteString(cmd.Stdout, f.out)
	}
	if cmd.Stderr != nil && f.code != 0 {
		io.WriteString(cmd.Stderr, "sh: 1: syntax error\n")
	}
	return sandbox.ExitStatus{Code: f.code, TimedOut: f.timedOut}, nil
}

func (f *fakeSandbox) ReadFile(_ context.Context, path string) ([]byte, error) {
	if f.statErr != nil {
		return nil, f.statErr
	}
	data, found := f.files[path]
	if !found {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	return []byte(data), nil
}

func (f *fakeSandbox) WriteFile(context.Context, string, []byte, fs.FileMode) error {
	return fmt.Errorf("fake: probes must not write")
}

func (f *fakeSandbox) ReadDir(context.Context, string) ([]sandbox.FileInfo, error) {
	return nil, sandbox.ErrUnsupported
}

func (f *fakeSandbox) Stat(_ context.Context, path string) (sandbox.FileInfo, error) {
	if f.statErr != nil {
		return sandbox.FileInfo{}, f.statErr
	}
	data, found := f.files[path]
	if !found {
		return sandbox.FileInfo{}, fmt.Errorf("stat %s: %w", path, fs.ErrNotExist)
	}
	return sandbox.FileInfo{Name: path, Size: int64(len(data)), Mode: 0o644, ModTime: time.Unix(1700000000, 0)}, nil
}

func (f *fakeSandbox) Snapshot(context.Context) (string, error) { return "", sandbox.ErrUnsupported }

func (f *fakeSandbox) Close(context.Context) error { return nil }

// kv renders facts the way a probe script prints them.
func kv(pairs ...string) string {
	if len(pairs)%2 != 0 {
		panic("kv: odd number of arguments")
	}
	var b strings.Builder
	for i := 0; i < len(pairs); i += 2 {
		fmt.Fprintf(&b, "\n%s%s\n%s\n", factMarker, pairs[i], pairs[i+1])
	}
	return b.String()
}

// formatFacts renders f as a script would print it, in a stable order.
func formatFacts(f Facts) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var pairs []string
	for _, k := range keys {
		pairs = append(pairs, k, f[k])
	}
	return kv(pairs...)
}

// with returns base's output with the facts in pairs replaced.
func with(base string, pairs ...string) string {
	f := parseFacts(base)
	for i := 0; i+1 < len(pairs); i += 2 {
		f[pairs[i]] = pairs[i+1]
	}
	return formatFacts(f)
}

// lines joins its arguments with newlines.
func lines(l ...string) string { return strings.Join(l, "\n") }

// psLine renders one process as psScript prints it.
func psLine(pid, ppid int, comm, cmdline string) string {
	return fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560\t%s", pid, comm, ppid, pid, pid, cmdline)
}

// repeatLines renders n lines made by line(i).
func repeatLines(n int, line func(i int) string) string {
	out := make([]string, n)
	for i := range out {
		out[i] = line(i)
	}
	return strings.Join(out, "\n")
}
