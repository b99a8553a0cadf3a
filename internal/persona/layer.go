package persona

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LayerFormat versions what WriteLayer writes for a given persona and
// base. Caches of built layers key on it, so a layer built by an older
// verisim (missing, say, a later fix to /tmp) is rebuilt, not reused; bump
// it with any change to the layer's contents.
const LayerFormat = 2

// WriteLayer writes into dir an overlay layer holding everything the
// persona changes in the base image: accounts, host identity, time zone,
// locale, sudoers and a lived-in home directory. base reads a file of the
// base image by absolute path and returns an error wrapping fs.ErrNotExist
// when there is none; nil means an empty base.
//
// dir must not exist or be empty. The layer is built in a temporary
// directory beside it and renamed into place, so dir is either complete or
// absent. Files are owned by the persona (or root) when the process may
// chown; otherwise they keep the builder's ownership. Timestamps spread
// over the months before p.Now and are a function of the seed.
//
// WriteLayer records which supplementary groups the base has, for User.
// It must not run concurrently with other methods on the same Persona.
func (p *Persona) WriteLayer(dir string, base func(path string) ([]byte, error)) (retErr error) {
	if base == nil {
		base = func(string) ([]byte, error) { return nil, fs.ErrNotExist }
	}
	t, groups, err := p.layer(base, p.now())
	if err != nil {
		return fmt.Errorf("persona %s: %w", p.UserName, err)
	}

	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("layer directory %s is not empty; WriteLayer writes a fresh layer", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("check layer directory: %w", err)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("create layer parent: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("create layer: %w", err)
	}
	defer func() {
		if retErr != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := t.materialize(tmp); err != nil {
		return err
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replace empty layer directory: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("move layer into place: %w", err)
	}
	p.groups = groups
	return nil
}

// readBase reads a base file, reporting a missing one as ok=false.
func readBase(base func(string) ([]byte, error), name string) (data []byte, ok bool, err error) {
	data, err = base(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read base image %s: %w", name, err)
	}
	return data, true, nil
}

// layer builds the layer in memory.
func (p *Persona) layer(base func(string) ([]byte, error), now time.Time) (tree, []uint32, error) {
	zone := "/usr/share/zoneinfo/" + p.Timezone
	in := map[string]string{}
	has := map[string]bool{}
	for _, name := range []string{
		"/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow", "/etc/subuid", "/etc/subgid",
		"/etc/os-release", "/var/lib/dbus/machine-id", zone, p.Shell,
	} {
		data, ok, err := readBase(base, name)
		if err != nil {
			return nil, nil, err
		}
		in[name], has[name] = string(data), ok
	}
	if !has[p.Shell] {
		return nil, nil, fmt.Errorf("login shell %s is not in the base image; install it there or set shell: to one it has (e.g. /bin/bash)", p.Shell)
	}

	r := p.rand("layer-times")
	created := p.accountCreated(now)
	installed := after(r, created, -40*time.Minute, -5*time.Minute)
	t := tree{}
	t.dir("/", 0o755, 0, 0, installed)

	acc := p.mergeAccounts(baseAccounts{
		passwd: in["/etc/passwd"], group: in["/etc/group"],
		shadow: in["/etc/shadow"], gshadow: in["/etc/gshadow"],
		subuid: in["/etc/subuid"], subgid: in["/etc/subgid"],
	}, created)
	userAdded := created.Add(time.Duration(r.Int64N(int64(time.Second))))
	for _, f := range []struct {
		name, data string
		mode       fs.FileMode
		gid        int
	}{
		{"/etc/passwd", acc.passwd, 0o644, 0},
		{"/etc/group", acc.group, 0o644, 0},
		{"/etc/shadow", acc.shadow, 0o640, acc.shadowGID},
		{"/etc/gshadow", acc.gshadow, 0o640, acc.shadowGID},
		{"/etc/subuid", acc.subuid, 0o644, 0},
		{"/etc/subgid", acc.subgid, 0o644, 0},
	} {
		// useradd leaves the previous version beside each file ("passwd-").
		t.file(f.name+"-", []byte(f.data), f.mode, 0, f.gid, after(r, userAdded, 0, 500*time.Millisecond))
		t.file(f.name, []byte(f.data), f.mode, 0, f.gid, after(r, userAdded, 500*time.Millisecond, 2*time.Second))
	}

	hostTime := func() time.Time { return after(r, installed, time.Second, 10*time.Minute) }
	t.file("/etc/hostname", []byte(p.Hostname+"\n"), 0o644, 0, 0, hostTime())
	t.file("/etc/hosts", []byte(p.hosts()), 0o644, 0, 0, hostTime())
	t.file("/etc/timezone", []byte(p.Timezone+"\n"), 0o644, 0, 0, hostTime())
	t.symlink("/etc/localtime", "../usr/share/zoneinfo/"+p.Timezone, 0, 0, hostTime())
	t.file("/etc/default/locale", []byte("LANG="+p.Locale+"\n"), 0o644, 0, 0, hostTime())
	t.file("/etc/machine-id", []byte(p.machineID()+"\n"), 0o444, 0, 0, hostTime())
	sudoGroup := acc.sudoGroup
	if sudoGroup == "" {
		sudoGroup = "sudo"
	}
	t.file("/etc/sudoers", []byte(sudoers(sudoGroup)), 0o440, 0, 0, installed)
	if has["/var/lib/dbus/machine-id"] {
		t.symlink("/var/lib/dbus/machine-id", "/etc/machine-id", 0, 0, hostTime())
	}
	if !has[zone] {
		// Without zone data /etc/localtime would dangle and the clock
		// would show UTC while /etc/timezone says otherwise.
		data, err := os.ReadFile(filepath.Join(zoneinfoDir, filepath.FromSlash(p.Timezone)))
		if err != nil {
			return nil, nil, fmt.Errorf("the base image has no %s and this host cannot supply it (%w); install tzdata in the image", zone, err)
		}
		t.file(zone, data, 0o644, 0, 0, installed)
	}

	osRelease := "\n" + in["/etc/os-release"]
	ubuntu := strings.Contains(osRelease, "\nID=ubuntu\n") || strings.Contains(osRelease, "\nID=\"ubuntu\"")
	p.addHome(t, now, created, ubuntu && acc.sudoGroup == "sudo")
	p.addTmp(t, now)
	t.resolveDirTimes(installed)
	return t, acc.groups, nil
}

func (p *Persona) hosts() string {
	return "127.0.0.1\tlocalhost\n127.0.1.1\t" + p.Hostname + "\n\n" +
		"# The following lines are desirable for IPv6 capable hosts\n" +
		"::1     ip6-localhost ip6-loopback\nfe00::0 ip6-localnet\nff00::0 ip6-mcastprefix\n" +
		"ff02::1 ip6-allnodes\nff02::2 ip6-allrouters\n"
}

// machineID is 128 random bits from the seed, formatted as systemd makes
// them: a version 4 UUID without dashes.
func (p *Persona) machineID() string {
	b := make([]byte, 16)
	fill(p.rand("machine-id"), b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x", b)
}

func sudoers(group string) string {
	return `#
# This file MUST be edited with the 'visudo' command as root.
#
# Please consider adding local content in /etc/sudoers.d/ instead of
# directly modifying this file.
#
# See the man page for details on how to write a sudoers file.
#
Defaults	env_reset
Defaults	mail_badpass
Defaults	secure_path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/snap/bin"
Defaults	use_pty

# User privilege specification
root	ALL=(ALL:ALL) ALL

# Allow members of group ` + group + ` to execute any command
%` + group + `	ALL=(ALL:ALL) ALL

# See sudoers(5) for more information on "@include" directives:

@includedir /etc/sudoers.d
`
}

// addTmp gives /tmp what a booted desktop's has: the socket directories
// systemd-tmpfiles creates at boot, then the user's tmux server directory
// and the leftovers of an interrupted go test.
func (p *Persona) addTmp(t tree, now time.Time) {
	r := p.rand("tmp")
	boot := now.Add(-time.Duration(20+r.IntN(40)) * time.Hour)
	t.dir("/tmp", 0o1777|fs.ModeSticky, 0, 0, time.Time{})
	for _, d := range []string{".X11-unix", ".ICE-unix", ".XIM-unix", ".font-unix"} {
		t.dir("/tmp/"+d, 0o1777|fs.ModeSticky, 0, 0, boot)
	}
	uid, gid := int(p.UID), int(p.GID)
	t.dir(fmt.Sprintf("/tmp/tmux-%d", p.UID), 0o700, uid, gid, between(r, boot.Add(10*time.Minute), now.Add(-2*time.Hour)))
	if strings.Contains(p.EnvVars["PATH"], "go/bin") {
		t.dir(fmt.Sprintf("/tmp/go-build%d", 1000000000+r.IntN(3000000000)), 0o700, uid, gid, between(r, boot, now.Add(-time.Hour)))
	}
}

// addHome adds the home directory: the distribution's skeleton files, an
// ssh key, git identity, a few directories tools create, and history.
func (p *Persona) addHome(t tree, now, created time.Time, sudoMarker bool) {
	r := p.rand("home-times")
	uid, gid := int(p.UID), int(p.GID)
	home := func(rel string) string { return path.Join(p.Home, rel) }
	file := func(rel string, data []byte, mode fs.FileMode, mtime time.Time) {
		t.file(home(rel), data, mode, uid, gid, mtime)
	}
	dir := func(rel string, mode fs.FileMode, mtime time.Time) {
		t.dir(home(rel), mode, uid, gid, mtime)
	}

	// The account's first hours: useradd copies the skeleton, then the
	// owner makes a key, sets up git and clones something.
	homeParent := path.Dir(p.Home)
	if homeParent != "/" {
		t.dir(homeParent, 0o755, 0, 0, created)
	}
	dir("", 0o750, time.Time{})
	file(".bash_logout", []byte(bashLogout), 0o644, created)
	file(".profile", []byte(profile), 0o644, after(r, created, 2*time.Hour, 72*time.Hour))
	file(".bashrc", []byte(p.bashrc(p.editor())), 0o644, after(r, created, 24*time.Hour, 60*24*time.Hour))
	keyTime := after(r, created, 20*time.Minute, 90*time.Minute)
	private, public := sshKeyPair(p.rand("ssh-key"), p.Email)
	dir(".ssh", 0o700, time.Time{})
	file(".ssh/id_ed25519", private, 0o600, keyTime)
	file(".ssh/id_ed25519.pub", public, 0o644, keyTime)
	gitTime := after(r, keyTime, 2*time.Minute, 10*time.Minute)
	file(".gitconfig", []byte(p.gitconfig(p.editor())), 0o644, gitTime)
	srcTime := after(r, gitTime, time.Minute, 5*time.Minute)
	if src := p.workspaceRoot(); src != p.Home {
		t.dir(src, 0o755, uid, gid, srcTime)
	}
	file(".ssh/known_hosts", []byte(knownHosts(p.rand("known-hosts"))), 0o644, after(r, srcTime, 10*time.Second, time.Minute))
	dir(".config", 0o755, time.Time{})
	file(".config/git/ignore", []byte(gitignoreGlobal), 0o644, after(r, created, 3*24*time.Hour, 30*24*time.Hour))
	// Directory times (zero here) follow their newest entries.
	dir(".cache", 0o700, time.Time{})
	if strings.Contains(p.EnvVars["PATH"], "go/bin") {
		// The go command's build cache, which every Go developer has: a
		// trim stamp it rewrites daily and object subdirectories.
		buildTime := after(r, created, time.Hour, 30*24*time.Hour)
		dir(".cache/go-build", 0o755, time.Time{})
		trimmed := now.Add(-time.Duration(1+r.IntN(20)) * time.Hour)
		file(".cache/go-build/trim.txt", []byte(strconv.FormatInt(trimmed.Unix(), 10)), 0o644, trimmed)
		for i := 0; i < 6; i++ {
			dir(fmt.Sprintf(".cache/go-build/%02x", r.IntN(256)), 0o755, between(r, buildTime, now))
		}
	} else {
		file(".cache/motd.legal-displayed", nil, 0o644, after(r, created, time.Minute, 10*time.Minute))
	}
	file(".lesshst", []byte(".less-history-file:\n"), 0o600, between(r, created, now))
	dir(".local/bin", 0o755, after(r, created, 24*time.Hour, 20*24*time.Hour))
	dir(".local/share", 0o700, after(r, created, time.Hour, 48*time.Hour))
	if strings.Contains(p.EnvVars["PATH"], "go/bin") {
		dir("go/bin", 0o755, after(r, created, 24*time.Hour, 40*24*time.Hour))
	}
	if sudoMarker {
		// Ubuntu's sudo leaves this behind after the first successful use.
		file(".sudo_as_admin_successful", nil, 0o644, after(r, created, 5*time.Minute, 20*time.Minute))
	}

	for _, rel := range sortedKeys(p.Dotfiles) {
		mode := fs.FileMode(0o644)
		if strings.HasPrefix(rel, ".ssh/") || strings.Contains(path.Base(rel), "history") {
			mode = 0o600
		}
		file(rel, []byte(p.Dotfiles[rel]), mode, between(r, created, now.Add(-time.Hour)))
	}
	if data, ok := p.historyFile(nil); ok {
		file(".bash_history", data, 0o600, after(r, now, -5*time.Hour, -10*time.Minute))
	}
}
