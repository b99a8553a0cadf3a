package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/verisim/verisim/internal/sandbox"
)

func (a *app) sandboxCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "sandbox",
		Short: "Create, use and remove sandboxes",
		Example: `  verisim sandbox run -- uname -a
  verisim sandbox shell --repo .
  verisim sandbox ls`,
	}
	c.AddCommand(a.sandboxRunCmd(), a.sandboxShellCmd(), a.sandboxLsCmd(), a.sandboxExecCmd(),
		a.sandboxSnapshotCmd(), a.sandboxForkCmd(), a.sandboxRmCmd(), a.sandboxGCCmd())
	return c
}

// runOpts are the flags of commands that run something.
type runOpts struct {
	tty     bool
	timeout time.Duration
	user    string
	workdir string
}

func (o *runOpts) register(c *cobra.Command) {
	f := c.Flags()
	f.BoolVarP(&o.tty, "tty", "t", false, "run the command on a pseudo-terminal")
	f.DurationVar(&o.timeout, "timeout", 0, "kill the command's whole process tree after this long (0 = never)")
	f.StringVarP(&o.workdir, "workdir", "w", "", "working directory inside the sandbox (default: the workspace)")
	f.StringVarP(&o.user, "user", "u", "", `"root" to run as root (default: the persona's user)`)
}

func (a *app) sandboxRunCmd() *cobra.Command {
	var m machineFlags
	var o runOpts
	c := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "Run a command in a fresh sandbox",
		Long: `Creates a sandbox, runs CMD in the workspace as the persona's user with stdin
passed through and output streamed, exits with CMD's status and destroys the
sandbox (unless --keep, which prints its id and leaves it running).`,
		Example: `  verisim sandbox run -- uname -a
  verisim sandbox run --repo ~/src/myproject -- git log --oneline -3
  verisim sandbox run --image ./rootfs --limits memory=512m,pids=256 -- make test
  echo hello | verisim sandbox run -- tr a-z A-Z
  verisim sandbox run --keep -- true`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sb, _, _, err := a.newSandbox(ctx, &m)
			if err != nil {
				return err
			}
			if !m.keep {
				defer sb.Close(context.WithoutCancel(ctx))
			}
			err = a.runIn(ctx, sb, &o, args)
			if m.keep {
				fmt.Fprintln(os.Stderr, sb.ID())
			}
			return err
		},
	}
	m.register(c)
	o.register(c)
	c.Flags().BoolVar(&m.keep, "keep", false, "leave the sandbox running and print its id")
	return c
}

func (a *app) sandboxShellCmd() *cobra.Command {
	var m machineFlags
	c := &cobra.Command{
		Use:   "shell",
		Short: "Open an interactive login shell in a fresh sandbox",
		Example: `  verisim sandbox shell
  verisim sandbox shell --repo . --persona examples/persona.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sb, _, spec, err := a.newSandbox(ctx, &m)
			if err != nil {
				return err
			}
			defer sb.Close(context.WithoutCancel(ctx))
			shell := "/bin/bash"
			for _, kv := range spec.Env {
				if v, ok := strings.CutPrefix(kv, "SHELL="); ok {
					shell = v
				}
			}
			return a.runIn(ctx, sb, &runOpts{tty: true}, []string{shell, "-l"})
		},
	}
	m.register(c)
	return c
}

// runIn runs args in sb with the terminal and signals of this process.
func (a *app) runIn(ctx context.Context, sb sandbox.Sandbox, o *runOpts, args []string) error {
	cmd := sandbox.Cmd{Args: args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Timeout: o.timeout, Dir: o.workdir}
	switch o.user {
	case "":
	case "root":
		cmd.User = &sandbox.User{Name: "root", Home: "/root"}
	default:
		return usageErr("--user %q: only \"root\" or the persona's user (the default)", o.user)
	}
	if o.tty {
		fd := int(os.Stdin.Fd())
		ws := sandbox.WinSize{Rows: 24, Cols: 80}
		if term.IsTerminal(fd) {
			if w, h, err := term.GetSize(fd); err == nil {
				ws = sandbox.WinSize{Rows: uint16(h), Cols: uint16(w)}
			}
			old, err := term.MakeRaw(fd)
			if err != nil {
				return fmt.Errorf("set terminal to raw mode: %w", err)
			}
			defer term.Restore(fd, old)
			resize := make(chan sandbox.WinSize, 1)
			winch := make(chan os.Signal, 1)
			signal.Notify(winch, syscall.SIGWINCH)
			defer signal.Stop(winch)
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					select {
					case <-winch:
						if w, h, err := term.GetSize(fd); err == nil {
							select {
							case resize <- sandbox.WinSize{Rows: uint16(h), Cols: uint16(w)}:
							default:
							}
						}
					case <-stop:
						return
					}
				}
			}()
			cmd.Resize = resize
		}
		cmd.TTY = &ws
	}
	st, err := sb.Run(ctx, cmd)
	switch {
	case errors.Is(err, sandbox.ErrCommandNotFound):
		return withCode(exitNoCommand, fmt.Errorf("%w (is it installed in the image, and on the persona's PATH?)", err))
	case errors.Is(err, context.Canceled):
		return withCode(130, nil)
	case err != nil:
		return err
	case st.TimedOut:
		return withCode(exitTimeout, fmt.Errorf("%s: killed after --timeout %v", args[0], o.timeout))
	case st.OOMKilled:
		return withCode(st.Code, fmt.Errorf("%s: killed for lack of memory (raise --limits memory=...)", args[0]))
	case st.Code != 0:
		return withCode(st.Code, nil)
	}
	return nil
}

func (a *app) sandboxLsCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "ls",
		Short:   "List kept sandboxes",
		Example: "  verisim sandbox ls\n  verisim sandbox ls --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := a.manager()
			if err != nil {
				return err
			}
			list, err := m.List(cmd.Context())
			if err != nil {
				return err
			}
			sort.Slice(list, func(i, j int) bool { return list[i].Created.Before(list[j].Created) })
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(list)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATE\tCREATED\tKEEP\tPID")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%d\n", s.ID, s.State, s.Created.Local().Format(time.DateTime), s.Keep, s.PID)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) open(ctx context.Context, id string) (sandbox.Sandbox, error) {
	m, err := a.manager()
	if err != nil {
		return nil, err
	}
	sb, err := m.Open(ctx, id)
	if errors.Is(err, sandbox.ErrNotFound) {
		return nil, withCode(exitNotFound, err)
	}
	return sb, err
}

func (a *app) sandboxExecCmd() *cobra.Command {
	var o runOpts
	c := &cobra.Command{
		Use:     "exec ID -- CMD [ARGS...]",
		Short:   "Run a command in a kept sandbox",
		Example: `  verisim sandbox exec 3f2a9c1b7d4e -- git status`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sb, err := a.open(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.runIn(cmd.Context(), sb, &o, args[1:])
		},
	}
	o.register(c)
	return c
}

func (a *app) sandboxSnapshotCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "snapshot ID",
		Short: "Freeze a kept sandbox's filesystem as a snapshot and print its id",
		Long: `A snapshot is the sandbox's writable layer frozen into a read-only layer;
the workspace and image are not copied. Fork it any number of times.`,
		Example: `  snap=$(verisim sandbox snapshot 3f2a9c1b7d4e)
  verisim sandbox fork "$snap"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sb, err := a.open(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			id, err := sb.Snapshot(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Println(id)
			return nil
		},
	}
}

func (a *app) sandboxForkCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "fork SNAPSHOT",
		Short:   "Start a kept sandbox from a snapshot and print its id",
		Example: `  verisim sandbox fork s1c9e0a4f5b22`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := a.runtime()
			if err != nil {
				return err
			}
			sb, err := rt.Fork(cmd.Context(), args[0], sandbox.ForkOptions{Keep: true})
			if errors.Is(err, sandbox.ErrSnapshotNotFound) {
				return withCode(exitNotFound, err)
			}
			if err != nil {
				return err
			}
			fmt.Println(sb.ID())
			return nil
		},
	}
}

func (a *app) sandboxRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID...",
		Short: "Destroy kept sandboxes (or snapshots, by their s… ids)",
		Example: `  verisim sandbox rm 3f2a9c1b7d4e
  verisim sandbox rm s1c9e0a4f5b22`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := a.runtime()
			if err != nil {
				return err
			}
			m, ok := rt.(sandbox.Manager)
			if !ok {
				return usageErr("the %s backend does not keep sandboxes between commands", rt.Name())
			}
			var errs []error
			for _, id := range args {
				if strings.HasPrefix(id, "s") {
					err = rt.RemoveSnapshot(cmd.Context(), id)
				} else {
					err = m.Remove(cmd.Context(), id)
				}
				if err != nil {
					errs = append(errs, err)
				}
			}
			if err := errors.Join(errs...); err != nil {
				if errors.Is(err, sandbox.ErrNotFound) || errors.Is(err, sandbox.ErrSnapshotNotFound) {
					return withCode(exitNotFound, err)
				}
				return err
			}
			return nil
		},
	}
}

func (a *app) sandboxGCCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Remove what crashed processes left behind",
		Long: `Finds sandboxes whose creator died (unless kept) and stopped ones, and removes
their processes, cgroups and directories, plus stray cgroups and half-written
snapshots. It also removes cached layers (persona layers, warm Go build caches)
that no sandbox or snapshot uses and no machine has used for a week: those a
persona edit, a newer verisim or another Go release left behind. A layer
counts as used by the sandboxes of this --run-dir and the snapshots of this
--state: give each state directory one run directory.`,
		Example: "  verisim sandbox gc",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := a.manager()
			if err != nil {
				return err
			}
			rep, err := m.GC(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Printf("removed %d sandboxes, %d processes, %d cgroups, %d directories, %d cached layers unused for a week\n", rep.Sandboxes, rep.Processes, rep.Cgroups, rep.Dirs, rep.Caches)
			for _, e := range rep.Errors {
				fmt.Fprintln(os.Stderr, "gc:", e)
			}
			if len(rep.Errors) > 0 {
				return withCode(exitFailure, fmt.Errorf("gc left %d problems", len(rep.Errors)))
			}
			return nil
		},
	}
}
