package persona

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testNow is the fixed "now" of the tests' personas.
var testNow = time.Date(2025, 3, 14, 16, 20, 0, 0, time.UTC)

// ubuntuBase is the account files of a cloud Ubuntu image, which ships a
// person ("ubuntu") the persona must replace.
var ubuntuBase = map[string]string{
	"/etc/passwd": `root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
bin:x:2:2:bin:/bin:/usr/sbin/nologin
_apt:x:42:65534::/nonexistent:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
ubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash
`,
	"/etc/group": `root:x:0:
adm:x:4:syslog,ubuntu
sudo:x:27:ubuntu
shadow:x:42:
docker:x:999:ubuntu
nogroup:x:65534:
ubuntu:x:1000:
`,
	"/etc/shadow": `root:$6$abc$def:19000:0:99999:7:::
daemon:*:19000:0:99999:7:::
bin:*:19000:0:99999:7:::
_apt:*:19000:0:99999:7:::
nobody:*:19000:0:99999:7:::
ubuntu:$6$xyz$uvw:19000:0:99999:7:::
`,
	"/etc/gshadow": `root:*::
adm:*::syslog,ubuntu
sudo:*::ubuntu
shadow:*::
docker:!::ubuntu
nogroup:*::
ubuntu:!::
`,
	"/etc/subuid":     "ubuntu:100000:65536\n",
	"/etc/os-release": "PRETTY_NAME=\"Ubuntu 24.04 LTS\"\nNAME=\"Ubuntu\"\nID=ubuntu\n",
	"/bin/bash":       "\x7fELF",
	"/usr/share/zoneinfo/America/Los_Angeles": "TZif",
	"/var/lib/dbus/machine-id":                "0123456789abcdef0123456789abcdef\n",
}

func baseFrom(files map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		if data, ok := files[name]; ok {
			return []byte(data), nil
		}
		return nil, fmt.Errorf("read %s: %w", name, fs.ErrNotExist)
	}
}

func testPersona() *Persona {
	p := Default()
	p.Now = testNow
	return p
}

func writeTestLayer(t *testing.T, p *Persona, base map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layer")
	if err := p.WriteLayer(dir, baseFrom(base)); err != nil {
		t.Fatalf("WriteLayer: %v", err)
	}
	return dir
}

func readLayer(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestWriteLayerAccounts(t *testing.T) {
	p := testPersona()
	dir := writeTestLayer(t, p, ubuntuBase)

	passwd := readLayer(t, dir, "etc/passwd")
	for _, want := range []string{
		"root:x:0:0:root:/root:/bin/bash\n",
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
		"nobody:x:65534:65534:",
		"maya:x:1000:1000:Maya Chen,,,:/home/maya:/bin/bash\n",
	} {
		if !strings.Contains(passwd, want) {
			t.Errorf("passwd lacks %q:\n%s", want, passwd)
		}
	}
	group := readLayer(t, dir, "etc/group")
	shadow := readLayer(t, dir, "etc/shadow")
	gshadow := readLayer(t, dir, "etc/gshadow")
	for name, content := range map[string]string{"passwd": passwd, "group": group, "shadow": shadow, "gshadow": gshadow, "subuid": readLayer(t, dir, "etc/subuid")} {
		if strings.Contains(content, "ubuntu") {
			t.Errorf("%s still mentions the base image's user:\n%s", name, content)
		}
	}
	for _, want := range []string{"adm:x:4:syslog,maya\n", "sudo:x:27:maya\n", "docker:x:999:maya\n", "shadow:x:42:\n", "maya:x:1000:\n"} {
		if !strings.Contains(group, want) {
			t.Errorf("group lacks %q:\n%s", want, group)
		}
	}
	if !strings.Contains(gshadow, "sudo:*::maya\n") || !strings.Contains(gshadow, "maya:!::\n") {
		t.Errorf("gshadow not merged:\n%s", gshadow)
	}
	if !strings.Contains(shadow, "root:*:19000:") {
		t.Errorf("root is not locked:\n%s", shadow)
	}
	hash := regexp.MustCompile(`(?m)^maya:(\$6\$[./0-9A-Za-z]{16}\$[./0-9A-Za-z]{85}[./01]):\d+:0:99999:7:::$`)
	if !hash.MatchString(shadow) {
		t.Errorf("shadow has no sha512-crypt entry for maya:\n%s", shadow)
	}
	if got := readLayer(t, dir, "etc/subuid"); got != "maya:100000:65536\n" {
		t.Errorf("subuid = %q", got)
	}
	if got := readLayer(t, dir, "etc/passwd-"); got != passwd {
		t.Errorf("passwd- differs from passwd: %q", got)
	}
	if u := p.User(); !slices.Equal(u.Groups, []uint32{1000, 4, 27, 999}) {
		t.Errorf("User().Groups = %v, want primary then adm, sudo, docker", u.Groups)
	}
	st := statT(t, filepath.Join(dir, "etc/shadow"))
	if os.Geteuid() == 0 && (st.Gid != 42 || st.Mode&0o777 != 0o640) {
		t.Errorf("/etc/shadow gid %d mode %o, want 42 0640", st.Gid, st.Mode&0o777)
	}
}

func TestWriteLayerEmptyBase(t *testing.T) {
	p := testPersona()
	dir := writeTestLayer(t, p, map[string]string{"/bin/bash": "", "/usr/share/zoneinfo/America/Los_Angeles": "TZif"})
	passwd := readLayer(t, dir, "etc/passwd")
	if !strings.HasPrefix(passwd, "root:x:0:0:") || !strings.Contains(passwd, "\nmaya:x:1000:") {
		t.Errorf("passwd from an empty base:\n%s", passwd)
	}
	if !strings.Contains(readLayer(t, dir, "etc/shadow"), "root:*:") {
		t.Error("shadow from an empty base does not lock root")
	}
	if u := p.User(); !slices.Equal(u.Groups, []uint32{1000}) {
		t.Errorf("User().Groups = %v without any base groups", u.Groups)
	}
	if _, err := os.Lstat(filepath.Join(dir, "var/lib/dbus/machine-id")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("dbus machine-id link written for a base without dbus")
	}
}

func TestWriteLayerSystemFiles(t *testing.T) {
	p := testPersona()
	dir := writeTestLayer(t, p, ubuntuBase)
	cases := map[string]string{
		"etc/hostname":       "maya-thinkpad\n",
		"etc/timezone":       "America/Los_Angeles\n",
		"etc/default/locale": "LANG=en_US.UTF-8\n",
	}
	for name, want := range cases {
		if got := readLayer(t, dir, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if hosts := readLayer(t, dir, "etc/hosts"); !strings.HasPrefix(hosts, "127.0.0.1\tlocalhost\n127.0.1.1\tmaya-thinkpad\n") {
		t.Errorf("hosts = %q", hosts)
	}
	if target, err := os.Readlink(filepath.Join(dir, "etc/localtime")); err != nil || target != "../usr/share/zoneinfo/America/Los_Angeles" {
		t.Errorf("localtime -> %q, %v", target, err)
	}
	if id := readLayer(t, dir, "etc/machine-id"); !regexp.MustCompile(`^[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}\n$`).MatchString(id) {
		t.Errorf("machine-id = %q", id)
	}
	if target, _ := os.Readlink(filepath.Join(dir, "var/lib/dbus/machine-id")); target != "/etc/machine-id" {
		t.Errorf("dbus machine-id -> %q", target)
	}
	sudoers := readLayer(t, dir, "etc/sudoers")
	if !strings.Contains(sudoers, "\n%sudo\tALL=(ALL:ALL) ALL\n") || strings.Contains(sudoers, "NOPASSWD") {
		t.Errorf("sudoers does not grant %%sudo with a password:\n%s", sudoers)
	}
	if _, err := os.Stat(filepath.Join(dir, "usr/share/zoneinfo")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("zone file copied although the base has it")
	}
}

func TestWriteLayerCopiesMissingZone(t *testing.T) {
	if _, err := os.Stat(filepath.Join(zoneinfoDir, "America/Los_Angeles")); err != nil {
		t.Skipf("host has no zone data to copy: %v", err)
	}
	base := map[string]string{"/bin/bash": ""}
	dir := writeTestLayer(t, testPersona(), base)
	if data := readLayer(t, dir, "usr/share/zoneinfo/America/Los_Angeles"); !strings.HasPrefix(data, "TZif") {
		t.Error("zone file not copied into the layer")
	}
}

func TestWriteLayerHome(t *testing.T) {
	p := testPersona()
	dir := writeTestLayer(t, p, ubuntuBase)
	home := filepath.Join(dir, "home/maya")
	modes := map[string]fs.FileMode{
		"":                          fs.ModeDir | 0o750,
		".ssh":                      fs.ModeDir | 0o700,
		".ssh/id_ed25519":           0o600,
		".ssh/id_ed25519.pub":       0o644,
		".ssh/known_hosts":          0o644,
		".bash_history":             0o600,
		".bashrc":                   0o644,
		".profile":                  0o644,
		".bash_logout":              0o644,
		".gitconfig":                0o644,
		".config/git/ignore":        0o644,
		".cache":                    fs.ModeDir | 0o700,
		".local/bin":                fs.ModeDir | 0o755,
		"go/bin":                    fs.ModeDir | 0o755,
		"src":                       fs.ModeDir | 0o755,
		".sudo_as_admin_successful": 0o644,
	}
	for name, want := range modes {
		fi, err := os.Lstat(filepath.Join(home, name))
		if err != nil {
			t.Errorf("home lacks %s: %v", name, err)
			continue
		}
		if fi.Mode() != want {
			t.Errorf("%s mode %v, want %v", name, fi.Mode(), want)
		}
		if st := fi.Sys().(*syscall.Stat_t); os.Geteuid() == 0 && (st.Uid != 1000 || st.Gid != 1000) {
			t.Errorf("%s owned by %d:%d, want 1000:1000", name, st.Uid, st.Gid)
		}
	}
	if st := statT(t, filepath.Join(dir, "home")); st.Uid != 0 && os.Geteuid() == 0 {
		t.Errorf("/home owned by %d", st.Uid)
	}
	gitconfig := readLayer(t, home, ".gitconfig")
	if !strings.Contains(gitconfig, "name = Maya Chen\n") || !strings.Contains(gitconfig, "email = maya.chen@fastmail.com\n") {
		t.Errorf(".gitconfig:\n%s", gitconfig)
	}
	hist := strings.Split(strings.TrimSuffix(readLayer(t, home, ".bash_history"), "\n"), "\n")
	if len(hist) < 20 || !slices.Contains(hist, "cat ~/.ssh/id_ed25519.pub") {
		t.Errorf("history too thin: %q", hist)
	}
	for i := 1; i < len(hist); i++ {
		if hist[i] == hist[i-1] {
			t.Errorf("history repeats %q, which ignoredups would not record", hist[i])
		}
	}
	checkSSHKey(t, readLayer(t, home, ".ssh/id_ed25519"), readLayer(t, home, ".ssh/id_ed25519.pub"))
	if kh := readLayer(t, home, ".ssh/known_hosts"); !regexp.MustCompile(`^\|1\|[A-Za-z0-9+/]{27}=\|[A-Za-z0-9+/]{27}= ssh-ed25519 AAAA`).MatchString(kh) {
		t.Errorf("known_hosts = %q", kh)
	}
}

func TestWriteLayerCustomDotfiles(t *testing.T) {
	p := testPersona()
	p.Dotfiles = map[string]string{".vimrc": "set number\n", ".ssh/config": "Host *\n", ".bashrc": "# mine\n"}
	p.History = []string{"ls", "make"}
	dir := writeTestLayer(t, p, ubuntuBase)
	home := filepath.Join(dir, "home/maya")
	if got := readLayer(t, home, ".bashrc"); got != "# mine\n" {
		t.Errorf(".bashrc = %q, want the persona's", got)
	}
	if got := readLayer(t, home, ".bash_history"); got != "ls\nmake\n" {
		t.Errorf(".bash_history = %q", got)
	}
	if fi, err := os.Stat(filepath.Join(home, ".ssh/config")); err != nil || fi.Mode() != 0o600 {
		t.Errorf(".ssh/config: %v %v", fi, err)
	}
}

func checkSSHKey(t *testing.T, private, public string) {
	t.Helper()
	block, rest := pem.Decode([]byte(private))
	if block == nil || block.Type != "OPENSSH PRIVATE KEY" || len(rest) != 0 {
		t.Fatalf("private key is not PEM armoured: %q", private)
	}
	if !bytes.HasPrefix(block.Bytes, []byte("openssh-key-v1\x00")) {
		t.Fatal("private key is not in the OpenSSH format")
	}
	f := strings.Fields(public)
	if len(f) != 3 || f[0] != "ssh-ed25519" || f[2] != "maya.chen@fastmail.com" {
		t.Fatalf("public key = %q", public)
	}
	blob, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil || len(blob) != 4+11+4+ed25519.PublicKeySize {
		t.Fatalf("public key blob: %v (%d bytes)", err, len(blob))
	}
	if !bytes.Contains(block.Bytes, blob) {
		t.Error("private key file does not hold the public key")
	}
	pub := blob[len(blob)-ed25519.PublicKeySize:]
	// The private section holds seed||public; signing with it must verify.
	i := bytes.Index(block.Bytes, []byte{0, 0, 0, 64})
	if i < 0 {
		t.Fatal("no 64-byte private key in the key file")
	}
	priv := ed25519.PrivateKey(block.Bytes[i+4 : i+4+64])
	if !ed25519.Verify(ed25519.PublicKey(pub), []byte("x"), ed25519.Sign(priv, []byte("x"))) {
		t.Error("private and public key do not match")
	}
}

// fileRecord is what a layer says about one file.
type fileRecord struct {
	mode    fs.FileMode
	uid     uint32
	mtime   time.Time
	content string
}

func snapshot(t *testing.T, dir string) map[string]fileRecord {
	t.Helper()
	out := map[string]fileRecord{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rec := fileRecord{mode: fi.Mode(), uid: fi.Sys().(*syscall.Stat_t).Uid, mtime: fi.ModTime()}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			rec.content, _ = os.Readlink(path)
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rec.content = string(data)
		}
		out[rel] = rec
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriteLayerDeterministic(t *testing.T) {
	a := snapshot(t, writeTestLayer(t, testPersona(), ubuntuBase))
	b := snapshot(t, writeTestLayer(t, testPersona(), ubuntuBase))
	if len(a) != len(b) {
		t.Fatalf("layers have %d and %d files", len(a), len(b))
	}
	for name, ra := range a {
		if rb, ok := b[name]; !ok || !ra.mtime.Equal(rb.mtime) || ra.mode != rb.mode || ra.uid != rb.uid || ra.content != rb.content {
			t.Errorf("%s differs between runs: %+v vs %+v", name, ra, rb)
		}
	}

	other := testPersona()
	other.Seed++
	c := snapshot(t, writeTestLayer(t, other, ubuntuBase))
	for _, name := range []string{"etc/machine-id", "home/maya/.bash_history", "home/maya/.ssh/id_ed25519", "etc/shadow"} {
		if a[name].content == c[name].content {
			t.Errorf("%s is the same for another seed", name)
		}
	}
	if a["home/maya/.bashrc"].mtime.Equal(c["home/maya/.bashrc"].mtime) {
		t.Error(".bashrc has the same mtime for another seed")
	}
}

func TestWriteLayerTimestamps(t *testing.T) {
	p := testPersona()
	dir := writeTestLayer(t, p, ubuntuBase)
	snap := snapshot(t, dir)
	distinct := map[time.Time]bool{}
	var oldest, newest time.Time
	for name, rec := range snap {
		if rec.mtime.After(testNow) {
			t.Errorf("%s mtime %v is after now %v", name, rec.mtime, testNow)
		}
		if rec.mtime.Before(testNow.AddDate(-2, 0, 0)) {
			t.Errorf("%s mtime %v is more than two years old", name, rec.mtime)
		}
		if !strings.HasPrefix(name, "home/") {
			continue
		}
		distinct[rec.mtime] = true
		if oldest.IsZero() || rec.mtime.Before(oldest) {
			oldest = rec.mtime
		}
		if rec.mtime.After(newest) {
			newest = rec.mtime
		}
	}
	if len(distinct) < 12 {
		t.Errorf("home files share mtimes: %d distinct among %d files", len(distinct), len(snap))
	}
	if newest.Sub(oldest) < 14*24*time.Hour {
		t.Errorf("home mtimes span only %v", newest.Sub(oldest))
	}
	if h := snap["home/maya/.bash_history"].mtime; testNow.Sub(h) > 6*time.Hour {
		t.Errorf(".bash_history last written %v before now; a used machine's is recent", testNow.Sub(h))
	}
	if h := snap["home/maya"].mtime; !h.Equal(newest) {
		t.Errorf("home mtime %v is not its newest entry's %v", h, newest)
	}
}

func TestWriteLayerNoTells(t *testing.T) {
	dir := writeTestLayer(t, testPersona(), ubuntuBase)
	for name, rec := range snapshot(t, dir) {
		lower := strings.ToLower(rec.content + " " + name)
		for _, tell := range []string{"verisim", "sandbox", strings.ToLower(dir), "persona"} {
			if strings.Contains(lower, tell) {
				t.Errorf("%s mentions %q", name, tell)
			}
		}
	}
}

func TestWriteLayerErrors(t *testing.T) {
	broken := errors.New("disk on fire")
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		p     func() *Persona
		base  func(string) ([]byte, error)
		want  string
	}{
		{
			name: "dir not empty",
			setup: func(t *testing.T, dir string) {
				os.MkdirAll(dir, 0o755)
				os.WriteFile(filepath.Join(dir, "x"), nil, 0o644)
			},
			p: testPersona, base: baseFrom(ubuntuBase), want: "not empty",
		},
		{
			name: "base read error",
			p:    testPersona,
			base: func(string) ([]byte, error) { return nil, broken },
			want: "disk on fire",
		},
		{
			name: "shell missing",
			p:    func() *Persona { p := testPersona(); p.Shell = "/usr/bin/zsh"; return p },
			base: baseFrom(ubuntuBase), want: "login shell /usr/bin/zsh is not in the base image",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "layer")
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			before := listDir(t, parent)
			err := tc.p().WriteLayer(dir, tc.base)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("WriteLayer = %v, want an error saying %q", err, tc.want)
			}
			if after := listDir(t, parent); !slices.Equal(before, after) {
				t.Errorf("WriteLayer left %q behind (before: %q)", after, before)
			}
		})
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		names = append(names, path)
		return nil
	})
	sort.Strings(names)
	return names
}

func statT(t *testing.T, path string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t)
}
