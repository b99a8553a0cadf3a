package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"
	"time"
)

// Runtime creates sandboxes and forks them from snapshots.
type Runtime interface {
	// Name identifies the backend ("local", "process").
	Name() string
	// Create starts a fresh sandbox from spec. On error nothing is left behind.
	Create(ctx context.Context, spec Spec) (Sandbox, error)
	// Fork starts a fresh sandbox whose filesystem is the snapshot's, with a new
	// writable layer over it. The snapshot's spec is reused; opts may change
	// what may differ between forks.
	Fork(ctx context.Context, snapshot string, opts ForkOptions) (Sandbox, error)
	// RemoveSnapshot deletes a snapshot no sandbox is forked from any more.
	RemoveSnapshot(ctx context.Context, snapshot string) error
}

// Sandbox is one isolated machine.
type Sandbox interface {
	// ID is unique among the runtime's live sandboxes.
	ID() string
	// Run runs cmd to completion and reports how it ended. A non-zero exit
	// is not an error; err reports that the command could not be run at all
	// (ErrCommandNotFound, ErrClosed, a broken channel to the sandbox).
	Run(ctx context.Context, cmd Cmd) (ExitStatus, error)
	// ReadFile, WriteFile, ReadDir and Stat act on the sandbox's filesystem
	// with root's permissions, at absolute paths inside the sandbox: for
	// the host's own work (a grader putting tests in place). Files
	// WriteFile creates belong to the spec's default user; a write replaces
	// the file whole or not at all. ReadFile reads regular files only.
	Files
	// As returns the same file operations acting as user u (nil: the
	// spec's default user), with u's permissions, as a command of u's
	// would: what a model's file tools must use, or it could write
	// /etc/shadow. Files they create belong to u. A backend without
	// users (process) returns its own.
	As(u *User) Files
	// Snapshot freezes the current filesystem as a new read-only layer and
	// returns the snapshot's id, usable with Runtime.Fork.
	Snapshot(ctx context.Context) (string, error)
	// Close kills every process of the sandbox and removes all it used.
	// It is idempotent.
	Close(ctx context.Context) error
}

// MaxRead bounds what ReadFile returns: a file's content comes whole into
// the host's memory.
const MaxRead = 256 << 20

// Stopper is a Sandbox that can kill every process it runs without
// starting one: a sandbox at its pids limit cannot start the command that
// would kill the others.
type Stopper interface {
	// StopAll kills every process of the sandbox (but its init) and
	// returns once they are gone.
	StopAll(ctx context.Context) error
}

// Files are the operations on a sandbox's filesystem.
type Files interface {
	ReadFile(ctx context.Context, path string) ([]byte, error)
	WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error
	ReadDir(ctx context.Context, path string) ([]FileInfo, error)
	Stat(ctx context.Context, path string) (FileInfo, error)
}

// Spec describes a sandbox in mechanism terms. Images and personas are
// resolved into a Spec by their own packages.
type Spec struct {
	// Layers are read-only root filesystem trees, topmost first.
	Layers []string `json:"layers"`
	// Binds are host directories mounted at Target inside the sandbox after
	// the root filesystem is in place (for example the host's /usr).
	Binds []Bind `json:"binds,omitempty"`
	// Views show host directories inside the sandbox copy-on-write: the
	// sandbox reads Source at Target, and what it changes there lands in its
	// own writable layer; Source is never written. A sandbox with views
	// cannot be snapshotted (its views are not part of the snapshot's
	// layers).
	Views []View `json:"views,omitempty"`
	// Hostname of the sandbox ("" keeps a generic "localhost").
	Hostname string `json:"hostname,omitempty"`
	// User is the default user commands run as; the zero value is root.
	User User `json:"user"`
	// Env is the default environment of commands ("KEY=value").
	Env []string `json:"env,omitempty"`
	// Dir is the default working directory of commands.
	Dir     string  `json:"dir,omitempty"`
	Limits  Limits  `json:"limits"`
	Network Network `json:"network,omitempty"`
	// Keep lets the sandbox outlive the process that created it; it then
	// runs until closed (for example by "verisim sandbox rm"). Otherwise it
	// dies with its creator and GC removes what is left.
	Keep bool `json:"keep,omitempty"`
	// OwnedLayers are layers made for this sandbox alone (say, a workspace
	// cloned for one run); they are deleted with it, or with the last
	// snapshot taken of it.
	OwnedLayers []string `json:"owned_layers,omitempty"`
	// Labels are free-form metadata kept with the sandbox on the host side;
	// they never appear inside the sandbox.
	Labels map[string]string `json:"labels,omitempty"`
}

// Bind mounts a host path into the sandbox.
type Bind struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only"`
}

// View is a host directory shown copy-on-write at Target.
type View struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// User is an account inside the sandbox.
type User struct {
	Name   string   `json:"name,omitempty"`
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
	Home   string   `json:"home,omitempty"`
}

// Limits bound a sandbox's resources. Zero means "no limit" for each field.
type Limits struct {
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	PIDs        int64   `json:"pids,omitempty"`
	CPUs        float64 `json:"cpus,omitempty"`
	// DiskBytes bounds the writable layer; writes past it fail with ENOSPC.
	DiskBytes int64 `json:"disk_bytes,omitempty"`
}

// Network is a sandbox's network policy.
type Network string

const (
	// NetworkLoopback gives the sandbox its own loopback interface and no
	// route anywhere else. It is the default.
	NetworkLoopback Network = "loopback"
)

// ForkOptions change what may differ between forks of one snapshot.
type ForkOptions struct {
	Labels map[string]string
	// Keep is the fork's Spec.Keep.
	Keep bool
}

// Cmd is a command to run in a sandbox.
type Cmd struct {
	// Args[0] is looked up in PATH (from Env) when it has no slash.
	Args []string
	// Env replaces the sandbox's default environment when non-nil.
	Env []string
	// Dir defaults to the spec's Dir, then the user's home.
	Dir string
	// User defaults to the spec's User.
	User *User
	// Stdin is read until EOF and fed to the command; nil means empty.
	Stdin io.Reader
	// Stdout and Stderr receive the output as it is produced; nil discards.
	// With TTY set, both streams arrive merged on Stdout.
	Stdout, Stderr io.Writer
	// Timeout kills the whole process tree of the command when it passes.
	Timeout time.Duration
	// TTY runs the command on a new pseudo-terminal of this size.
	TTY *WinSize
	// Resize delivers terminal size changes while the command runs.
	Resize <-chan WinSize
}

// WinSize is a terminal's size.
type WinSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// ExitStatus is how a command ended.
type ExitStatus struct {
	// Code is the exit code, or 128+signal when killed by a signal.
	Code int `json:"code"`
	// Signal is the signal that killed the command, 0 if it exited.
	Signal int `json:"signal,omitempty"`
	// TimedOut reports that the command was killed at its Timeout.
	TimedOut bool `json:"timed_out,omitempty"`
	// OOMKilled reports the kernel killed the command for lack of memory.
	OOMKilled bool `json:"oom_killed,omitempty"`
}

// FileInfo describes a file inside a sandbox.
type FileInfo struct {
	Name    string      `json:"name"`
	Size    int64       `json:"size"`
	Mode    fs.FileMode `json:"mode"`
	ModTime time.Time   `json:"mod_time"`
	Link    string      `json:"link,omitempty"`
}

// Errors shared by all backends; callers use errors.Is.
var (
	ErrCommandNotFound  = errors.New("command not found")
	ErrClosed           = errors.New("sandbox is closed")
	ErrNotFound         = errors.New("no such sandbox")
	ErrSnapshotNotFound = errors.New("no such snapshot")
	// ErrNotRegular: ReadFile reads regular files only (a FIFO would
	// block, a device such as /dev/zero never end). It is an
	// fs.ErrInvalid.
	ErrNotRegular = fmt.Errorf("not a regular file: %w", fs.ErrInvalid)
	// ErrTooLarge: ReadFile reads at most MaxRead bytes (a sparse file
	// says it holds a terabyte and costs nothing to make).
	ErrTooLarge    = fmt.Errorf("file larger than %d MiB: %w", MaxRead>>20, syscall.EFBIG)
	ErrUnsupported = errors.New("not supported by this backend")
)

// Manager is implemented by backends whose sandboxes outlive the process
// that created them (Spec.Keep): other processes can list, reattach and
// clean up.
type Manager interface {
	// List returns the sandboxes the backend knows of on this host.
	List(ctx context.Context) ([]Info, error)
	// Open reattaches to a running sandbox by id.
	Open(ctx context.Context, id string) (Sandbox, error)
	// Remove destroys a sandbox by id, running or stopped.
	Remove(ctx context.Context, id string) error
	// GC removes everything that crashed processes left behind.
	GC(ctx context.Context) (GCReport, error)
}

// Info describes a sandbox for listings.
type Info struct {
	ID      string            `json:"id"`
	State   string            `json:"state"` // running, stopped, broken
	Created time.Time         `json:"created"`
	Keep    bool              `json:"keep"`
	PID     int               `json:"pid,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// GCReport counts what GC removed.
type GCReport struct {
	Sandboxes int `json:"sandboxes"`
	Processes int `json:"processes"`
	Cgroups   int `json:"cgroups"`
	Dirs      int `json:"dirs"`
	Snapshots int `json:"snapshots"`
	// Caches counts cached layers (persona layers, warm build caches)
	// removed because nothing used them for a week.
	Caches int      `json:"caches"`
	Errors []string `json:"errors,omitempty"`
}
