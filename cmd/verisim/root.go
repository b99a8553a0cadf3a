package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/verisim/verisim/internal/image"
	"github.com/verisim/verisim/internal/machine"
	"github.com/verisim/verisim/internal/persona"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/local"
	"github.com/verisim/verisim/internal/sandbox/process"
)

// config is everything the global flags set.
type config struct {
	StateDir string
	RunDir   string
	Backend  string
	LogLevel string
	// FavorDynmods tunes the host's cgroup2 mount for fast cgroup moves.
	FavorDynmods bool
}

// app holds what commands share once flags are parsed.
type app struct {
	cfg config
	log *slog.Logger
	// closers are the runtimes commands opened, closed when the command
	// ends: a local runtime then removes its run directory's parent
	// cgroups if no sandbox is left in them.
	closers []interface{ Close(context.Context) error }
}

// close closes what the command opened.
func (a *app) close() {
	for _, c := range a.closers {
		_ = c.Close(context.Background())
	}
	a.closers = nil
}

func newRoot() (*cobra.Command, *app) {
	a := &app{}
	root := &cobra.Command{
		Use:   "verisim",
		Short: "Realistic sandboxes and RL training for coding agents",
		Long: `verisim runs coding agents inside sandboxes that look like a developer's
own machine, rewards them with hidden tests, and trains them with RL.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(a.cfg.LogLevel)); err != nil {
				return usageErr("--log-level %q: use debug, info, warn or error", a.cfg.LogLevel)
			}
			a.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
			return nil
		},
	}
	state, run := defaultDirs()
	f := root.PersistentFlags()
	f.StringVar(&a.cfg.StateDir, "state", state, "directory for images, layers and snapshots")
	f.StringVar(&a.cfg.RunDir, "run-dir", run, "directory (tmpfs) for live sandboxes")
	f.StringVar(&a.cfg.Backend, "backend", "local", `sandbox backend: "local" (namespaces; without root in a user namespace, no cgroup limits) or "process" (no isolation)`)
	f.StringVar(&a.cfg.LogLevel, "log-level", "warn", "debug, info, warn or error")
	f.BoolVar(&a.cfg.FavorDynmods, "cgroup-favordynmods", true, "remount the host's cgroup2 hierarchy with favordynmods (fast cgroup moves; a host-wide setting)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return withCode(exitUsage, err) })
	root.AddCommand(a.sandboxCmd(), a.agentCmd(), a.rolloutCmd(), a.evalCmd(), a.tasksCmd(), a.tokenizerCmd(), a.modelCmd(), a.serveCmd(), a.fidelityCmd(), a.imageCmd(), a.benchCmd())
	root.AddCommand(a.pretrainCmd(), a.sftCmd())
	root.AddCommand(a.trainerCmd())
	return root, a
}

func usageErr(format string, args ...any) error {
	return withCode(exitUsage, fmt.Errorf(format, args...))
}

// defaultDirs follows the usual places: system directories for root, the
// XDG ones for a user.
func defaultDirs() (state, run string) {
	if os.Geteuid() == 0 {
		return "/var/lib/verisim", "/run/verisim"
	}
	home, _ := os.UserHomeDir()
	state = filepath.Join(home, ".local", "share", "verisim")
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		state = filepath.Join(x, "verisim")
	}
	run = filepath.Join(state, "run")
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		run = filepath.Join(x, "verisim")
	}
	return state, run
}

// runtime builds the configured sandbox backend.
func (a *app) runtime() (sandbox.Runtime, error) {
	switch a.cfg.Backend {
	case "local":
		if runtime.GOOS != "linux" {
			return nil, usageErr("the local backend runs on Linux only; use --backend process")
		}
		rt, err := local.New(local.Options{StateDir: a.cfg.StateDir, RunDir: a.cfg.RunDir, FavorDynmods: a.cfg.FavorDynmods, Logger: a.log})
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, rt)
		return rt, nil
	case "process":
		return process.New(filepath.Join(a.cfg.StateDir, "process"), a.log)
	default:
		return nil, usageErr("unknown backend %q: use local or process", a.cfg.Backend)
	}
}

func (a *app) manager() (sandbox.Manager, error) {
	rt, err := a.runtime()
	if err != nil {
		return nil, err
	}
	m, ok := rt.(sandbox.Manager)
	if !ok {
		return nil, usageErr("the %s backend does not keep sandboxes between commands; use --backend local", rt.Name())
	}
	return m, nil
}

// machineFlags are the flags that describe a machine.
type machineFlags struct {
	cmd     *cobra.Command
	image   string
	persona string
	repo    string
	view    string // a host directory shown copy-on-write as the workspace
	limits  string
	keep    bool
}

func (m *machineFlags) register(c *cobra.Command) {
	m.cmd = c
	f := c.Flags()
	f.StringVar(&m.image, "image", "host", `root filesystem: "host", a directory, an OCI archive (.tar) or a name from "verisim image build"`)
	f.StringVar(&m.persona, "persona", "", "persona YAML file (default: the built-in developer)")
	f.StringVar(&m.repo, "repo", "", "git checkout to clone into the persona's workspace")
	f.StringVar(&m.limits, "limits", defaultLimits, "resource limits: memory=SIZE,pids=N,cpus=N,disk=SIZE (0 = none; without root only disk)")
}

const defaultLimits = "memory=4g,pids=4096,cpus=0,disk=10g"

// rootlessLimits are the defaults without root, which has no cgroups.
const rootlessLimits = "disk=10g"

// defaultLimits are a machine's limits when none are asked for: those of
// --limits, or only the disk where the local backend runs without root.
func (a *app) defaultLimits() string {
	switch {
	case a.cfg.Backend == "process":
		// It enforces none, and says so for any it is given.
		return ""
	case os.Geteuid() != 0 && a.cfg.Backend == "local":
		return rootlessLimits
	}
	return defaultLimits
}

// spec resolves the machine flags into a sandbox spec.
func (a *app) spec(ctx context.Context, m *machineFlags) (sandbox.Spec, error) {
	limits := m.limits
	if m.cmd != nil && !m.cmd.Flags().Changed("limits") {
		limits = a.defaultLimits()
	}
	lim, err := parseLimits(limits)
	if err != nil {
		return sandbox.Spec{}, withCode(exitUsage, err)
	}
	var p *persona.Persona
	if m.persona != "" {
		p, err = persona.Load(m.persona)
		if err != nil {
			return sandbox.Spec{}, withCode(exitPersona, err)
		}
	}
	if m.repo != "" {
		if _, err := os.Stat(m.repo); err != nil {
			return sandbox.Spec{}, withCode(exitRepo, fmt.Errorf("repo path %s does not exist; pass a git checkout with --repo", m.repo))
		}
	}
	store := image.NewStore(filepath.Join(a.cfg.StateDir, "images"))
	img, err := store.Resolve(ctx, m.image)
	if errors.Is(err, image.ErrBadArchive) {
		err = fmt.Errorf("%w (use a `docker save` archive or an OCI image layout packed as .tar)", err)
	}
	if err != nil {
		return sandbox.Spec{}, withCode(exitImage, err)
	}
	b := machine.NewBuilder(filepath.Join(a.cfg.StateDir, "layers"))
	spec, err := b.Spec(ctx, machine.Machine{Image: img, Persona: p, Repo: m.repo, View: m.view, Limits: lim, Keep: m.keep})
	if errors.Is(err, machine.ErrRepo) {
		return spec, withCode(exitRepo, err)
	}
	return spec, err
}

// newSandbox creates a sandbox of the machine the flags describe, on the
// configured backend. The caller closes it.
func (a *app) newSandbox(ctx context.Context, m *machineFlags) (sandbox.Sandbox, sandbox.Runtime, sandbox.Spec, error) {
	rt, err := a.runtime()
	if err != nil {
		return nil, nil, sandbox.Spec{}, err
	}
	spec, err := a.spec(ctx, m)
	if err != nil {
		return nil, nil, sandbox.Spec{}, err
	}
	sb, err := rt.Create(ctx, spec)
	if err != nil {
		return nil, nil, sandbox.Spec{}, fmt.Errorf("create sandbox: %w", err)
	}
	return sb, rt, spec, nil
}

// parseLimits reads the --limits flag.
func parseLimits(s string) (sandbox.Limits, error) {
	lim, err := sandbox.ParseLimits(s)
	if err != nil {
		return lim, fmt.Errorf("--limits %w", err)
	}
	return lim, nil
}
