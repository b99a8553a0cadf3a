package machine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/verisim/verisim/internal/fstree"
	"github.com/verisim/verisim/internal/image"
	"github.com/verisim/verisim/internal/persona"
)

// goRoot is where the images verisim composes keep the Go toolchain.
const goRoot = "/usr/local/go"

// warmPackages are the standard packages a small Go project and its tests
// build on; compiling them is most of the cost of a first "go test" on a
// machine with an empty build cache (20 s and more on two cores).
var warmPackages = []string{
	"bufio", "bytes", "container/list", "context", "crypto/rand", "crypto/sha256", "encoding/csv",
	"encoding/hex", "encoding/json", "errors", "flag", "fmt", "io", "io/fs", "log", "log/slog",
	"math", "math/rand", "net", "net/http", "net/http/httptest", "net/smtp", "net/url", "os",
	"os/exec", "path/filepath", "reflect", "regexp", "sort", "strconv", "strings", "sync",
	"testing", "text/tabwriter", "time", "unicode", "unicode/utf8",
}

// goCacheLayer returns a layer holding p's Go build cache (~/.cache/go-build)
// already filled with the standard library as the image's toolchain
// compiles it, the cache any developer who has built Go code before has.
// It is built once per toolchain and user with the host's go command, which
// must be the very toolchain the image holds: the cache's keys cover the
// toolchain and GOROOT, so anything else would only be dead weight. It
// returns "" when the image has no Go toolchain or the host's differs.
//
// The cache holds compiled standard library only, never a task's code.
func (b *Builder) goCacheLayer(ctx context.Context, img *image.Image, p *persona.Persona, personaLayer string) (string, error) {
	imgVersion, err := img.ReadFile(goRoot + "/VERSION")
	if err != nil {
		return "", nil
	}
	goBin := filepath.Join(goRoot, "bin", "go")
	hostVersion, err := os.ReadFile(filepath.Join(goRoot, "VERSION"))
	if err != nil || !bytes.Equal(hostVersion, imgVersion) {
		return "", nil
	}
	if _, err := os.Stat(goBin); err != nil {
		return "", nil
	}
	user := p.User()
	h := sha256.New()
	fmt.Fprintf(h, "gocache\x001\x00%s\x00%d\x00%d\x00%s\x00%s", imgVersion, user.UID, user.GID, user.Home, strings.Join(warmPackages, ","))
	dir := filepath.Join(b.caches, "gocache-"+hex.EncodeToString(h.Sum(nil))[:16])
	if cacheHit(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(b.caches, 0o700); err != nil {
		return "", err
	}
	// Filling the cache takes a minute of CPU: one builder at a time, the
	// others wait for its result.
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if cacheHit(dir) {
		return dir, nil
	}
	tmp := tempName(dir)
	// A build that failed half-way leaves a read-only module cache.
	defer fstree.RemoveAll(tmp)
	home := filepath.Join(tmp, filepath.FromSlash(user.Home))
	cache := filepath.Join(home, ".cache", "go-build")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	mod := filepath.Join(tmp, ".module")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return "", err
	}
	var imports strings.Builder
	for _, pkg := range warmPackages {
		if pkg != "testing" {
			fmt.Fprintf(&imports, "\t_ %q\n", pkg)
		}
	}
	files := map[string]string{
		"go.mod":       "module scratch\n\ngo 1.22\n",
		"main.go":      "package main\n\nimport (\n" + imports.String() + ")\n\nfunc main() {}\n",
		"main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestMain(t *testing.T) {}\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{{"build", "./..."}, {"test", "-count=1", "./..."}, {"vet", "./..."}} {
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir = mod
		cmd.Env = []string{
			"PATH=" + filepath.Join(goRoot, "bin") + ":/usr/bin:/bin", "HOME=" + home, "GOCACHE=" + cache,
			"GOPATH=" + filepath.Join(tmp, ".gopath"), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off",
			"GOTOOLCHAIN=local", "GOTELEMETRY=off",
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("warm the Go build cache (go %s): %w: %s", strings.Join(args, " "), err, out)
		}
	}
	for _, d := range []string{mod, filepath.Join(tmp, ".gopath")} {
		if err := fstree.RemoveAll(d); err != nil {
			return "", err
		}
	}
	// The directories on the way to the cache take their owner and mode
	// from the persona layer below, which they hide in the merged view.
	// Without root the files stay the builder's, which a rootless
	// sandbox's user namespace shows as its user's.
	var own fstree.Owner
	if err := matchParents(tmp, personaLayer, user.Home, &own); err != nil {
		return "", err
	}
	err = filepath.WalkDir(filepath.Join(home, ".cache"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return own.Lchown(path, int(user.UID), int(user.GID))
	})
	if err != nil {
		return "", fmt.Errorf("warm the Go build cache: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr == nil {
			return dir, nil
		}
		return "", err
	}
	return dir, nil
}

// matchParents gives each directory of layer on the path to dir (an
// in-machine absolute path) the owner and mode the same directory has in
// ref, when ref has it, as far as own may.
func matchParents(layer, ref, dir string, own *fstree.Owner) error {
	p := ""
	for _, el := range strings.Split(strings.Trim(dir, "/"), "/") {
		p = filepath.Join(p, el)
		fi, err := os.Stat(filepath.Join(ref, p))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		target := filepath.Join(layer, p)
		if err := os.Chmod(target, fi.Mode().Perm()); err != nil {
			return err
		}
		if uid, gid, ok := owner(fi); ok {
			if err := own.Lchown(target, uid, gid); err != nil {
				return err
			}
		}
	}
	return nil
}
