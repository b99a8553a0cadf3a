package machine

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/image"
	"github.com/verisim/verisim/internal/persona"
)

// baseImage is a directory image with a few accounts, enough for a persona
// layer to merge with.
func baseImage(t *testing.T) *image.Image {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/bash\nubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash\n",
		"etc/group":  "root:x:0:\nadm:x:4:\nsudo:x:27:ubuntu\nubuntu:x:1000:\n",
		"etc/shadow": "root:*:19000:0:99999:7:::\n",
		"bin/bash":   "",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755)
	img, err := image.NewStore(t.TempDir()).Resolve(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestSpec(t *testing.T) {
	img := baseImage(t)
	dir := t.TempDir()
	b := NewBuilder(dir)
	p := persona.Default()
	spec, err := b.Spec(t.Context(), Machine{Image: img, Persona: p})
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Layers) != 1+len(img.Layers) || !strings.HasPrefix(filepath.Base(spec.Layers[0]), "persona-") {
		t.Fatalf("layers %v", spec.Layers)
	}
	if spec.Hostname != p.Hostname || spec.Dir != p.Home || spec.User.UID != p.UID {
		t.Errorf("spec %+v does not follow the persona", spec)
	}
	// The user is in the sudo and adm groups the base has.
	if want := []uint32{p.GID, 4, 27}; !reflect.DeepEqual(spec.User.Groups, want) {
		t.Errorf("groups %v, want %v", spec.User.Groups, want)
	}
	// A second spec reuses the cached layer, still knows the groups, and
	// marks the layer used (gc keeps caches used within a week).
	week := time.Now().Add(-7 * 24 * time.Hour)
	if err := os.Chtimes(spec.Layers[0], week, week); err != nil {
		t.Fatal(err)
	}
	again, err := NewBuilder(dir).Spec(t.Context(), Machine{Image: img, Persona: persona.Default()})
	if err != nil {
		t.Fatal(err)
	}
	if again.Layers[0] != spec.Layers[0] || !reflect.DeepEqual(again.User, spec.User) {
		t.Errorf("cached spec differs: %+v vs %+v", again, spec)
	}
	if fi, err := os.Stat(spec.Layers[0]); err != nil || time.Since(fi.ModTime()) > time.Hour {
		t.Errorf("the reused persona layer was not marked used: %v", err)
	}
	// The image's own homes are hidden.
	home := filepath.Join(spec.Layers[0], "home")
	var v [1]byte
	name := "trusted.overlay.opaque"
	if os.Geteuid() != 0 {
		name = "user.overlay.opaque"
	}
	if n, err := unix.Lgetxattr(home, name, v[:]); err != nil || n != 1 || v[0] != 'y' {
		t.Errorf("%s is not marked opaque (%s): %v", home, name, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("builder left %d entries, want the one persona layer", len(ents))
	}
}

func TestSpecRepo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := filepath.Join(t.TempDir(), "widgets")
	os.MkdirAll(repo, 0o755)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=A", "-c", "user.email=a@b.c", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git: %v %s", err, out)
		}
	}
	img := baseImage(t)
	dir := t.TempDir()
	spec, err := NewBuilder(dir).Spec(t.Context(), Machine{Image: img, Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	ws := spec.Layers[0]
	if len(spec.OwnedLayers) != 1 || spec.OwnedLayers[0] != ws {
		t.Errorf("workspace layer %s not owned by the sandbox: %v", ws, spec.OwnedLayers)
	}
	if spec.Dir != "/home/maya/src/widgets" {
		t.Errorf("dir %s", spec.Dir)
	}
	if _, err := os.Stat(filepath.Join(ws, spec.Dir, ".git")); err != nil {
		t.Errorf("no clone in the workspace layer: %v", err)
	}

	// A missing repository is ErrRepo and leaves nothing behind.
	before, _ := os.ReadDir(dir)
	_, err = NewBuilder(dir).Spec(t.Context(), Machine{Image: img, Repo: filepath.Join(t.TempDir(), "missing")})
	if !errors.Is(err, ErrRepo) {
		t.Errorf("missing repo: %v, want ErrRepo", err)
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("a failed spec left %d entries, had %d", len(after), len(before))
	}
}
