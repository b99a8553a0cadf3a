package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestEngine runs the engine benchmark at a toy scale and checks that
// every row has a figure and that the reload served the new version.
func TestEngine(t *testing.T) {
	tab, err := Engine(t.Context(), EngineOptions{Sizes: []string{"tiny"}, Vocab: 512, Steps: 4, Prompt: 32, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tab.Write(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Log("\n" + text)
	for _, r := range tab.Rows {
		c := r.Cells["tiny"]
		if c.Value == "" || c.Value == "-" {
			t.Errorf("row %q has no figure", r.Scenario)
		}
	}
	for _, want := range []string{"decode tokens/s, batch 32", "time to first token, 32-token prompt", "reload → first token"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if c := tab.Rows[len(tab.Rows)-1].Cells["tiny"]; c.Value != "v1" {
		t.Errorf("version served after reload = %q, want v1", c.Value)
	}
}
