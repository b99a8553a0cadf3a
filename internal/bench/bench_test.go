package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/image"
	"github.com/verisim/verisim/internal/machine"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/guest"
	"github.com/verisim/verisim/internal/sandbox/local"
	"github.com/verisim/verisim/internal/sandbox/local/localtest"
)

func TestMain(m *testing.M) {
	if guest.IsInit() {
		guest.Main()
	}
	os.Exit(m.Run())
}

// setup builds the default machine (host image, built-in persona, default
// limits) and cold and warm local runtimes.
func setup(b *testing.B) (cold, warm *local.Runtime, spec sandbox.Spec, work string) {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("the local sandbox backend needs root")
	}
	state := b.TempDir()
	run, err := os.MkdirTemp("/dev/shm", "verisim-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(run) })
	ctx := context.Background()
	img, err := image.NewStore(filepath.Join(state, "images")).Resolve(ctx, "host")
	if err != nil {
		b.Fatal(err)
	}
	spec, err = machine.NewBuilder(filepath.Join(state, "layers")).Spec(ctx, machine.Machine{
		Image:  img,
		Limits: sandbox.Limits{MemoryBytes: 4 << 30, PIDs: 4096, DiskBytes: 10 << 30},
	})
	if err != nil {
		b.Fatal(err)
	}
	// As installed: the dedicated init binary, not this test binary.
	init := localtest.InitBinary(b)
	cold, err = local.New(local.Options{StateDir: state, RunDir: run, FavorDynmods: true, InitPath: init})
	if err != nil {
		b.Fatal(err)
	}
	warm, err = local.New(local.Options{StateDir: state, RunDir: run, Warm: 2, FavorDynmods: true, InitPath: init})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		warm.Close(context.Background())
		cold.Close(context.Background())
	})
	return cold, warm, spec, filepath.Join(state, "bench")
}

// measure runs f b.N times and reports its latency percentiles.
func measure(b *testing.B, f func(context.Context) error) {
	b.Helper()
	ctx := context.Background()
	for range 3 {
		if err := f(ctx); err != nil {
			b.Fatal(err)
		}
	}
	var s Samples
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := f(ctx); err != nil {
			b.Fatal(err)
		}
		s = append(s, time.Since(start))
	}
	b.ReportMetric(float64(s.Quantile(0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(s.Quantile(0.99).Microseconds())/1000, "p99-ms")
}

// BenchmarkSandbox measures the sandbox scenarios for verisim and its peers
// in one run. Use -benchtime=100x (or more) for a meaningful p99:
//
//	go test -run '^$' -bench Sandbox -benchtime 200x ./internal/bench/
func BenchmarkSandbox(b *testing.B) {
	cold, warm, spec, work := setup(b)
	o := &SandboxOptions{Runtime: cold, Spec: spec, WorkDir: work}
	if err := os.MkdirAll(work, 0o700); err != nil {
		b.Fatal(err)
	}
	merged := filepath.Join(work, "merged")
	if err := mountMerged(spec.Layers, merged); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unmount(merged) })

	b.Run("scenario=lifecycle/subject=verisim", func(b *testing.B) { measure(b, Lifecycle(cold, spec)) })
	b.Run("scenario=lifecycle/subject=verisim-warm", func(b *testing.B) { measure(b, Lifecycle(warm, spec)) })
	for _, p := range []string{SubjectBwrap, SubjectRunc, SubjectRuncOverlay, SubjectForkExec} {
		b.Run("scenario=lifecycle/subject="+subjectName(p), func(b *testing.B) {
			f, note := o.peer(p, merged)
			if f == nil {
				b.Skip(note)
			}
			measure(b, f)
		})
	}
	b.Run("scenario=exec/subject=verisim", func(b *testing.B) {
		sb, err := cold.Create(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		defer sb.Close(context.Background())
		measure(b, func(ctx context.Context) error {
			_, err := sb.Run(ctx, sandbox.Cmd{Args: []string{"/bin/true"}})
			return err
		})
	})
	for _, size := range []int64{20 << 20, 2 << 30} {
		b.Run("scenario=fork/workspace="+strings.ReplaceAll(humanSize(size), " ", "")+"/subject=verisim", func(b *testing.B) {
			c, err := o.forkCell(context.Background(), cold, SubjectVerisim, size, func(_, _ string, f func(context.Context) error) Cell {
				measure(b, f)
				return Cell{}
			}, "")
			_ = c
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

func subjectName(s string) string {
	switch s {
	case SubjectRuncOverlay:
		return "runc-overlay"
	case SubjectForkExec:
		return "forkexec"
	}
	return s
}
