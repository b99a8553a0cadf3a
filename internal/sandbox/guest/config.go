package guest

// Protocol is the version of what the host and the init exchange: the
// descriptors, Config, the status line and the wire messages. Bump it on
// any change one side cannot read from the other, so that a host never
// starts an init binary from another build (cmd/verisim-init prints it
// with --protocol).
const Protocol = 2

// Config is what the host tells the init before it builds the sandbox. It is
// JSON on descriptor FDConfig.
type Config struct {
	// Layers are lower directories named relative to the init's working
	// directory, topmost first. Relative names keep host paths out of the
	// sandbox's /proc/self/mountinfo.
	Layers []string `json:"layers"`
	// DiskBytes sizes the writable layer's tmpfs (0: the kernel default).
	DiskBytes int64 `json:"disk_bytes,omitempty"`
	// Hostname of the sandbox.
	Hostname string `json:"hostname,omitempty"`
	// Session, when set, is the user who appears logged in: /run/user/UID
	// exists and utmp holds their terminal session, as on a desktop.
	Session *Session `json:"session,omitempty"`
	// LastPID moves the PID namespace's counter, so that the first command
	// gets a PID in the range a machine reaches some time after boot.
	LastPID int `json:"last_pid,omitempty"`
	// Binds are host paths mounted inside after the root is built.
	Binds []Bind `json:"binds,omitempty"`
	// Views are host directories mounted copy-on-write inside: an overlay
	// at Target over Source (named like Layers), whose upper layer is on the
	// writable layer's tmpfs.
	Views []View `json:"views,omitempty"`
	// Lifeline makes the init exit when descriptor FDLifeline reaches EOF,
	// that is when the process that created the sandbox is gone.
	Lifeline bool `json:"lifeline,omitempty"`
	// Rootless says the init runs in a user namespace: device nodes are
	// bound from the host instead of made, and overlayfs keeps its
	// metadata in user.* xattrs.
	Rootless bool `json:"rootless,omitempty"`
	// NewCgroupNS makes the init enter a new cgroup namespace once the host
	// has placed it in the sandbox's cgroups, so that the sandbox sees its
	// cgroup as "/".
	NewCgroupNS bool `json:"new_cgroup_ns,omitempty"`
	// CgroupRootTasks and CommandTasks are host paths of cgroup v1
	// "tasks" files. The thread that starts commands joins the first,
	// enters a new cgroup namespace (rooted there), then joins the
	// second, so that commands are born in that cgroup (a login session's,
	// holding the pids limit) while the init's other threads stay outside
	// it and the namespace's root is the sandbox's cgroup.
	CgroupRootTasks string `json:"cgroup_root_tasks,omitempty"`
	CommandTasks    string `json:"command_tasks,omitempty"`
	// CgroupFS names the v1 hierarchies to mount under /sys/fs/cgroup
	// from inside the cgroup namespace, so that each shows the sandbox's
	// own cgroup as its root.
	CgroupFS []string `json:"cgroup_fs,omitempty"`
}

// Session is a logged-in user.
type Session struct {
	User  string `json:"user"`
	UID   uint32 `json:"uid"`
	GID   uint32 `json:"gid"`
	Since int64  `json:"since"` // login time, Unix seconds
}

// View is a copy-on-write view of a host directory.
type View struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// Bind is a host path mounted inside the sandbox.
type Bind struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only"`
}

// Descriptors the host passes to the init, in this order.
const (
	FDConfig   = 3 // read: Config as JSON, then EOF
	FDStatus   = 4 // write: "ok <upper fd>\n" when serving, or one line of error
	FDLifeline = 5 // read: EOF when the creator dies (with Config.Lifeline)
	FDListener = 6 // a listening unix socket, SocketName in the run directory
)

// FDUpper is where the init keeps its O_PATH descriptor of the writable
// layer's upper directory: the lowest free descriptor from FDUpper, which
// is FDUpper itself unless something opened dozens of files first. The
// "ok" status line names the descriptor it got.
const FDUpper = 64

// SocketName is the unix socket in the run directory the init serves wire
// requests on.
const SocketName = "ctl.sock"

// EnvMarker is set in the init's environment by the host to say "run as the
// guest init": "1", or "pool" for an init started ahead of need (or
// MarkerRemove or MarkerCopy for a rootless runtime's helpers). The init
// clears its environment before it starts anything.
const EnvMarker = "VERISIM_GUEST_INIT"

// EnvLateIDMaps is set ("1") by the host when it writes the init's user
// namespace id maps (with newuidmap and newgidmap) after starting it: the
// init then waits for them before it touches a file. Otherwise the maps
// are in place from the start (or there is no user namespace), and the
// init does not look.
const EnvLateIDMaps = "VERISIM_GUEST_LATE_IDMAPS"
