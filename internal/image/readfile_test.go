package image

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/sandbox"
)

// Layers as a sandbox snapshot leaves them: overlayfs whiteouts (0/0
// character devices) and opaque directories (an xattr).
func TestReadFileOverlay(t *testing.T) {
	base := t.TempDir()
	upper, lower, bottom, bind := filepath.Join(base, "upper"), filepath.Join(base, "lower"), filepath.Join(base, "bottom"), filepath.Join(base, "bind")
	writeFiles(t, bottom, map[string]string{
		"etc/hosts":      "bottom hosts",
		"etc/only":       "bottom only",
		"data/hidden":    "hidden by opaque upper",
		"data/sub/deep":  "hidden too",
		"shadowed/file":  "below a file",
		"mnt/covered":    "under a bind",
		"link-to-bottom": "->etc/only",
	})
	writeFiles(t, lower, map[string]string{
		"etc/hosts":   "lower hosts",
		"etc/deleted": "lower deleted",
		"etc/lower":   "lower",
		"data/":       "",
		"shadowed":    "a file now",
		"abs":         "->/etc/lower",
		"rel":         "->../etc/./lower",
		"loop1":       "->loop2",
		"loop2":       "->loop1",
		"dirlink":     "->etc",
		"escape":      "->../../../../etc/lower",
	})
	writeFiles(t, upper, map[string]string{
		"etc/hosts":  "upper hosts",
		"data/fresh": "upper fresh",
	})
	writeFiles(t, bind, map[string]string{"inside": "bound", "link": "->/etc/hosts"})
	if err := unix.Mknod(filepath.Join(upper, "etc/deleted"), unix.S_IFCHR, 0); err != nil {
		t.Skipf("making a whiteout needs root (mknod: %v)", err)
	}
	if err := unix.Lsetxattr(filepath.Join(lower, "data"), "trusted.overlay.opaque", []byte("y"), 0); err != nil {
		t.Skipf("marking an opaque directory needs trusted xattrs (CAP_SYS_ADMIN): %v", err)
	}
	im := &Image{
		Ref:    "test",
		Layers: []string{upper, lower, bottom},
		Binds:  []sandbox.Bind{{Source: bind, Target: "/mnt", ReadOnly: true}},
	}
	cases := []struct {
		path string
		want string // "" → fs.ErrNotExist; "!..." → another error containing it
	}{
		{"/etc/hosts", "upper hosts"},
		{"/etc/lower", "lower"},
		{"/etc/only", "bottom only"},
		{"/etc/deleted", ""},
		{"/data/fresh", "upper fresh"},
		{"/data/hidden", ""},
		{"/data/sub/deep", ""},
		{"/shadowed", "a file now"},
		{"/shadowed/file", "!not a directory"},
		{"/abs", "lower"},
		{"/rel", "lower"},
		{"/escape", "lower"},
		{"/dirlink/hosts", "upper hosts"},
		{"/link-to-bottom", "bottom only"},
		{"/mnt/inside", "bound"},
		{"/mnt/covered", ""},
		{"/mnt/link", "upper hosts"},
		{"/etc/../etc/hosts", "upper hosts"},
		{"/../../etc/hosts", "upper hosts"},
		{"/loop1", "!too many levels"},
		{"/etc", "!is a directory"},
		{"etc/hosts", "!not absolute"},
		{"/nope", ""},
	}
	for _, tc := range cases {
		got, err := im.ReadFile(tc.path)
		switch {
		case tc.want == "":
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("ReadFile(%s) = %q, %v; want fs.ErrNotExist", tc.path, got, err)
			}
		case strings.HasPrefix(tc.want, "!"):
			if err == nil || !strings.Contains(err.Error(), tc.want[1:]) {
				t.Errorf("ReadFile(%s) error = %v; want one saying %q", tc.path, err, tc.want[1:])
			}
		default:
			if err != nil || string(got) != tc.want {
				t.Errorf("ReadFile(%s) = %q, %v; want %q", tc.path, got, err, tc.want)
			}
		}
	}
}
