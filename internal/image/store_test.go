package image

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

func TestResolveHost(t *testing.T) {
	if _, err := os.Stat("/usr/bin/env"); err != nil {
		t.Skip("the host has no /usr/bin/env to check binds with")
	}
	s := NewStore(t.TempDir())
	im, err := s.Resolve(t.Context(), "host")
	if err != nil {
		t.Fatalf("Resolve(host): %v", err)
	}
	if im.Ref != "host" || len(im.Layers) != 1 {
		t.Fatalf("image = %+v", im)
	}
	if !slices.Contains(im.Binds, sandbox.Bind{Source: "/usr", Target: "/usr", ReadOnly: true}) {
		t.Errorf("binds %+v lack /usr read-only", im.Binds)
	}
	layer := im.Layers[0]

	// The layer holds the host's /etc and top-level symlinks...
	for _, d := range usrDirs {
		target, err := os.Readlink("/" + d)
		if err != nil {
			continue
		}
		if got, err := os.Readlink(filepath.Join(layer, d)); err != nil || got != target {
			t.Errorf("%s -> %q, %v; want %q like the host", d, got, err, target)
		}
	}
	hostPasswd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(layer, "etc/passwd")); err != nil || !bytes.Equal(got, hostPasswd) {
		t.Errorf("layer etc/passwd differs from the host's: %v", err)
	}
	// ...and the skeleton, empty: nothing of the host's users or state.
	for name, mode := range map[string]fs.FileMode{
		"root": fs.ModeDir | 0o700, "tmp": fs.ModeDir | fs.ModeSticky | 0o777,
		"var/tmp": fs.ModeDir | fs.ModeSticky | 0o777, "home": fs.ModeDir | 0o755, "proc": fs.ModeDir | 0o555,
	} {
		fi, err := os.Lstat(filepath.Join(layer, name))
		if err != nil || fi.Mode() != mode {
			t.Errorf("%s: mode %v, %v; want %v", name, fi.Mode(), err, mode)
		}
	}
	for _, empty := range []string{"root", "home", "tmp", "opt", "var/log/apt", "var/cache/apt/archives"} {
		if names := dirNames(t, filepath.Join(layer, empty)); len(names) > 0 {
			t.Errorf("%s should be empty, holds %v", empty, names)
		}
	}
	// /usr is the host's, bound over the layer; the layer keeps only the
	// locales compiled for it, bound over /usr/lib/locale.
	if names := dirNames(t, filepath.Join(layer, "usr")); len(names) > 1 || (len(names) == 1 && names[0] != "lib") {
		t.Errorf("usr holds %v", names)
	}
	if isDir(filepath.Join(layer, "usr/lib/locale")) {
		var bound bool
		for _, b := range im.Binds {
			bound = bound || b.Target == "/usr/lib/locale"
		}
		if !bound {
			t.Errorf("compiled locales are not bound over /usr/lib/locale: %+v", im.Binds)
		}
	}
	for _, absent := range []string{"work", "farm", "old_root"} {
		if _, err := os.Lstat(filepath.Join(layer, absent)); err == nil {
			t.Errorf("layer has the host's /%s", absent)
		}
	}

	// Through ReadFile the image looks like the machine.
	env, err := os.ReadFile("/usr/bin/env")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]byte{"/etc/passwd": hostPasswd, "/usr/bin/env": env, "/bin/env": env} {
		if got, err := im.ReadFile(path); err != nil || !bytes.Equal(got, want) {
			t.Errorf("ReadFile(%s): %d bytes, %v; want the host's %d", path, len(got), err, len(want))
		}
	}
	if hostOS, err := os.ReadFile("/etc/os-release"); err == nil {
		if got, err := im.ReadFile("/etc/os-release"); err != nil || !bytes.Equal(got, hostOS) {
			t.Errorf("ReadFile(/etc/os-release) = %q, %v", got, err)
		}
	}
	if _, err := os.Stat("/var/lib/dpkg/status"); err == nil {
		if _, err := im.ReadFile("/var/lib/dpkg/status"); err != nil {
			t.Errorf("ReadFile(/var/lib/dpkg/status): %v", err)
		}
	}
	for _, hidden := range []string{"/root/.bashrc", "/root/.profile", "/work/main/go.mod", "/tmp/x", "/etc/no-such-file"} {
		if _, err := im.ReadFile(hidden); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(%s) error = %v, want fs.ErrNotExist", hidden, err)
		}
	}

	again, err := s.Resolve(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if again.Layers[0] != layer {
		t.Errorf("second Resolve made %s, want the cached %s", again.Layers[0], layer)
	}
}

// A fake host that is not merged-/usr: its /bin and /lib are real
// directories, which the image must bind rather than copy.
func TestResolveHostSplitUsr(t *testing.T) {
	host := t.TempDir()
	writeFiles(t, host, map[string]string{
		"etc/passwd":           "root:x:0:0::/root:/bin/sh\n",
		"etc/group":            "root:x:0:\nutmp:x:43:\n",
		"etc/os-release":       "->../usr/lib/os-release",
		"usr/lib/os-release":   "ID=debian\n",
		"usr/bin/env":          "env",
		"bin/sh":               "sh",
		"lib/libc.so":          "libc",
		"lib64":                "->usr/lib64",
		"var/lib/dpkg/status":  "Package: sh\n",
		"root/.bash_history":   "secret",
		"home/someone/notes":   "private",
		"var/log/syslog":       "host logs",
		"tmp/socket-like-file": "tmp",
	})
	s := NewStore(filepath.Join(t.TempDir(), "store"))
	s.hostRoot = host
	im, err := s.Resolve(t.Context(), "host")
	if err != nil {
		t.Fatal(err)
	}
	want := []sandbox.Bind{
		{Source: filepath.Join(host, "usr"), Target: "/usr", ReadOnly: true},
		{Source: filepath.Join(host, "bin"), Target: "/bin", ReadOnly: true},
		{Source: filepath.Join(host, "lib"), Target: "/lib", ReadOnly: true},
		{Source: filepath.Join(host, "var/lib/dpkg"), Target: "/var/lib/dpkg", ReadOnly: true},
	}
	if !slices.Equal(im.Binds, want) {
		t.Errorf("binds = %+v\nwant %+v", im.Binds, want)
	}
	layer := im.Layers[0]
	for _, mountpoint := range []string{"bin", "lib", "usr", "var/lib/dpkg"} {
		if names := dirNames(t, filepath.Join(layer, mountpoint)); len(names) > 0 {
			t.Errorf("mount point %s holds %v", mountpoint, names)
		}
	}
	if got, err := os.Readlink(filepath.Join(layer, "lib64")); err != nil || got != "usr/lib64" {
		t.Errorf("lib64 -> %q, %v", got, err)
	}
	if fi, err := os.Stat(filepath.Join(layer, "var/log/wtmp")); err == nil && os.Geteuid() == 0 {
		if _, gid := fileOwner(fi); gid != 43 {
			t.Errorf("var/log/wtmp group = %d, want utmp (43)", gid)
		}
	} else if err != nil {
		t.Error(err)
	}
	for path, want := range map[string]string{
		"/bin/sh": "sh", "/lib/libc.so": "libc", "/usr/bin/env": "env",
		"/etc/os-release": "ID=debian\n", "/var/lib/dpkg/status": "Package: sh\n",
	} {
		if got, err := im.ReadFile(path); err != nil || string(got) != want {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	for _, hidden := range []string{"/root/.bash_history", "/home/someone/notes", "/var/log/syslog", "/tmp/socket-like-file"} {
		if _, err := im.ReadFile(hidden); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(%s) error = %v, want fs.ErrNotExist", hidden, err)
		}
	}

	// A changed /etc makes a new layer; an unchanged one reuses it.
	same, err := s.Resolve(t.Context(), "host")
	if err != nil || same.Layers[0] != layer {
		t.Fatalf("unchanged host: %v, %v; want %s", same, err, layer)
	}
	passwd := filepath.Join(host, "etc/passwd")
	if err := os.WriteFile(passwd, []byte("root:x:0:0::/root:/bin/bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(passwd, later, later); err != nil {
		t.Fatal(err)
	}
	changed, err := s.Resolve(t.Context(), "host")
	if err != nil {
		t.Fatal(err)
	}
	if changed.Layers[0] == layer {
		t.Error("a changed /etc reused the old layer")
	}
	if got, _ := changed.ReadFile("/etc/passwd"); !strings.HasSuffix(string(got), "/bin/bash\n") {
		t.Errorf("new layer has passwd %q", got)
	}
}

func TestResolveDirectory(t *testing.T) {
	base := t.TempDir()
	writeFiles(t, base, map[string]string{
		"merged/etc/passwd":   "root",
		"merged/usr/bin/sh":   "sh",
		"merged/bin":          "->usr/bin",
		"split/etc/":          "",
		"split/bin/sh":        "sh",
		"noetc/usr/bin/sh":    "sh",
		"nobin/etc/passwd":    "root",
		"nobin/usr/lib/x":     "x",
		"etcfile/etc":         "not a dir",
		"etcfile/usr/bin/sh":  "sh",
		"plainfile/something": "x",
	})
	t.Chdir(base)
	cases := []struct {
		ref     string
		wantDir string // the layer; "" when it must fail
	}{
		{filepath.Join(base, "merged"), filepath.Join(base, "merged")},
		{"split", filepath.Join(base, "split")},
		{"./merged/", filepath.Join(base, "merged")},
		{"noetc", ""},
		{"nobin", ""},
		{"etcfile", ""},
		{"plainfile", ""},
	}
	s := NewStore(filepath.Join(t.TempDir(), "store"))
	for _, tc := range cases {
		t.Run(tc.ref, func(t *testing.T) {
			im, err := s.Resolve(t.Context(), tc.ref)
			if tc.wantDir != "" {
				if err != nil {
					t.Fatal(err)
				}
				if im.Ref != tc.wantDir || !slices.Equal(im.Layers, []string{tc.wantDir}) || im.Binds != nil {
					t.Errorf("image = %+v, want the directory %s as the only layer", im, tc.wantDir)
				}
				return
			}
			want := filepath.Join(base, tc.ref) + " is not a root filesystem (no /usr/bin or /etc); build one with `verisim image build`"
			if !errors.Is(err, ErrNotRootFS) || !strings.Contains(err.Error(), want) {
				t.Errorf("error = %v, want ErrNotRootFS saying %q", err, want)
			}
		})
	}
}

func TestResolveUnknown(t *testing.T) {
	s := NewStore(t.TempDir())
	t.Chdir(t.TempDir())
	for _, ref := range []string{"ubuntu:22.04", "no-such-image", "./missing-dir", "/no/such/dir", "Host"} {
		_, err := s.Resolve(t.Context(), ref)
		want := `unknown image "` + ref + `": use "host", a root filesystem directory, an OCI archive (.tar), or a name from "verisim image build"`
		if !errors.Is(err, ErrUnknownImage) || err.Error() != want {
			t.Errorf("Resolve(%q) error = %v\nwant %s", ref, err, want)
		}
	}
}

func TestList(t *testing.T) {
	dir := t.TempDir()
	s := NewStore(filepath.Join(dir, "store"))
	if got, err := s.List(t.Context()); err != nil || len(got) != 0 {
		t.Fatalf("List of an empty store = %v, %v", got, err)
	}
	ar := writeArchive(t, filepath.Join(dir, "a.tar"), twoLayers(t, false), archiveForm{oci: true})
	arImage, err := s.Resolve(t.Context(), ar)
	if err != nil {
		t.Fatal(err)
	}
	host := t.TempDir()
	writeFiles(t, host, map[string]string{"etc/passwd": "root\n", "usr/bin/env": "env"})
	s.hostRoot = host
	hostImage, err := s.Resolve(t.Context(), "host")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("List = %+v, want 2 images", got)
	}
	// Sorted by kind: host, then oci.
	if got[0].Kind != KindHost || got[0].Ref != "host" || got[0].Path != hostImage.Layers[0] || got[0].Size < int64(len("root\n")) {
		t.Errorf("host entry = %+v", got[0])
	}
	// Hard-linked tool counts once: the layers' file data is exactly this.
	wantSize := int64(len("root:x:0:0:root:/root:/bin/bash\n") + len("#!/bin/sh\necho tool\n") + len("su") + len("c") + len("notes") + len("x") + len("y"))
	if got[1].Kind != KindArchive || got[1].Ref != ar || got[1].Path != arImage.Layers[0] || got[1].Size != wantSize || !strings.HasPrefix(got[1].ID, "sha256-") {
		t.Errorf("archive entry = %+v, want size %d", got[1], wantSize)
	}
	if time.Since(got[1].Created) > time.Hour {
		t.Errorf("archive entry created %v", got[1].Created)
	}
}
