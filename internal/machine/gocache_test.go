package machine

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/image"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/guest"
	"github.com/verisim/verisim/internal/sandbox/local/localtest"
)

func TestMain(m *testing.M) {
	if guest.IsInit() {
		guest.Main()
	}
	os.Exit(m.Run())
}

// TestWarmGoCache builds a machine on the host image with a warm Go build
// cache and checks, inside it, that the go command finds the standard
// library already compiled, as the persona's user.
func TestWarmGoCache(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for the local sandbox backend")
	}
	if _, err := os.Stat(goRoot + "/bin/go"); err != nil {
		t.Skip("needs a Go toolchain at " + goRoot)
	}
	img, err := image.NewStore(t.TempDir()).Resolve(t.Context(), "host")
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	b := NewBuilder(state, WithCaches(localtest.Caches()))
	spec, err := b.Spec(t.Context(), Machine{Image: img, WarmGoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(spec.Layers[0], "gocache-") {
		t.Fatalf("no cache layer on top: %v", spec.Layers)
	}
	again, err := b.Spec(t.Context(), Machine{Image: img, WarmGoCache: true})
	if err != nil || again.Layers[0] != spec.Layers[0] {
		t.Fatalf("cache layer not reused: %v %v", again.Layers, err)
	}
	rt := localtest.Runtime(t)
	sb, err := rt.Create(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(t.Context())
	var out bytes.Buffer
	st, err := sb.Run(t.Context(), sandbox.Cmd{
		Args:   []string{"/bin/sh", "-c", `go list -f '{{.ImportPath}} {{.Stale}}' fmt testing encoding/json && stat -c %U ~/.cache/go-build`},
		Stdout: &out, Stderr: &out,
	})
	if err != nil || st.Code != 0 {
		t.Fatalf("go list: %v %+v\n%s", err, st, out.String())
	}
	want := "fmt false\ntesting false\nencoding/json false\nmaya\n"
	if out.String() != want {
		t.Fatalf("in the machine:\n%s\nwant:\n%s", out.String(), want)
	}
}
