package image

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuildValidates(t *testing.T) {
	s := NewStore(t.TempDir())
	s.debootstrap = "verisim-no-such-debootstrap"
	cases := []struct {
		name string
		opts BuildOptions
		want string
	}{
		{"Upper", BuildOptions{}, "invalid image name"},
		{"a_b", BuildOptions{}, "invalid image name"},
		{"-dash", BuildOptions{}, "invalid image name"},
		{"dash-", BuildOptions{}, "invalid image name"},
		{"", BuildOptions{}, "invalid image name"},
		{"host", BuildOptions{}, "reserved"},
		{"../etc", BuildOptions{}, "invalid image name"},
		{"ok-name", BuildOptions{Suite: "Bookworm;rm"}, "invalid suite"},
		{"ok-name", BuildOptions{Packages: []string{"git", "--keyring=/x"}}, "invalid package"},
		{"ok-name", BuildOptions{Packages: []string{"git,curl"}}, "invalid package"},
		{"ok-name", BuildOptions{Packages: []string{"git", "build-essential", "g++"}}, "debootstrap is not installed; run scripts/install-deps.sh or apt-get install debootstrap"},
	}
	for _, tc := range cases {
		_, err := s.Build(t.Context(), tc.name, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%q, %+v) error = %v; want one saying %q", tc.name, tc.opts, err, tc.want)
		}
	}
	if _, err := s.Build(t.Context(), "ok-name", BuildOptions{}); !errors.Is(err, ErrNoDebootstrap) {
		t.Errorf("Build without debootstrap: %v; want ErrNoDebootstrap", err)
	}
	if names := dirNames(t, s.dir); len(names) > 0 {
		t.Errorf("failed builds left %v", names)
	}
}

// TestBuildDebootstrap builds a real image. It downloads about 200 MB from
// the machine's Debian mirror, so it runs only when asked.
func TestBuildDebootstrap(t *testing.T) {
	if os.Getenv("VERISIM_TEST_DEBOOTSTRAP") != "1" {
		t.Skip("set VERISIM_TEST_DEBOOTSTRAP=1 to run debootstrap (downloads about 200 MB)")
	}
	if _, err := NewStore("").findDebootstrap(); err != nil {
		t.Skip("debootstrap is not installed; run scripts/install-deps.sh")
	}
	if os.Geteuid() != 0 {
		t.Skip("debootstrap needs root")
	}
	s := NewStore(t.TempDir())
	var log bytes.Buffer
	im, err := s.Build(t.Context(), "test-minbase", BuildOptions{Packages: []string{"git"}, Log: &log})
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "debootstrap") {
		t.Errorf("log has no debootstrap output: %q", log.String())
	}
	osRelease, err := im.ReadFile("/etc/os-release")
	if err != nil || !strings.Contains(string(osRelease), "bookworm") {
		t.Errorf("/etc/os-release = %q, %v", osRelease, err)
	}
	if _, err := im.ReadFile("/usr/bin/git"); err != nil {
		t.Errorf("the included package git is missing: %v", err)
	}
	if _, err := im.ReadFile("/usr/lib/locale/en_US.utf8/LC_CTYPE"); err != nil {
		t.Errorf("en_US.UTF-8 was not compiled into the image: %v", err)
	}
	for _, gone := range []string{"/var/log/bootstrap.log", "/etc/resolv.conf"} {
		if _, err := im.ReadFile(gone); err == nil {
			t.Errorf("%s was left in the image", gone)
		}
	}
	if debs, _ := filepath.Glob(filepath.Join(im.Layers[0], "var/cache/apt/archives/*.deb")); len(debs) > 0 {
		t.Errorf("%d downloaded packages were left in the image", len(debs))
	}
	// The image is usable: chroot into it and run something.
	out, err := exec.CommandContext(t.Context(), "chroot", im.Layers[0], "/usr/bin/git", "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "git version") {
		t.Errorf("git --version in the image: %q, %v", out, err)
	}
	again, err := s.Resolve(t.Context(), "test-minbase")
	if err != nil || again.Layers[0] != im.Layers[0] {
		t.Errorf("Resolve(test-minbase) = %+v, %v", again, err)
	}
	list, err := s.List(t.Context())
	if err != nil || len(list) != 1 || list[0].Kind != KindBuilt || list[0].Size < 50<<20 {
		t.Errorf("List = %+v, %v", list, err)
	}
	if names := dirNames(t, filepath.Join(s.dir, "tmp")); len(names) > 0 {
		t.Errorf("tmp/ holds %v", names)
	}
}
