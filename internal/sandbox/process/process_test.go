package process

import (
	"testing"

	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/sandboxtest"
)

func TestConformance(t *testing.T) {
	rt, err := New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.Run(t, sandboxtest.Harness{
		Runtime: rt,
		Spec: func(t *testing.T) sandbox.Spec {
			return sandbox.Spec{Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}
		},
	})
}
