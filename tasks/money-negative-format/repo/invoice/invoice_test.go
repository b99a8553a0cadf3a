package invoice

import (
	"strings"
	"testing"
)

func TestRenderInvoice(t *testing.T) {
	d := Doc{Number: "2024-017", Customer: "Acme GmbH", Currency: "EUR", VATPct: 19,
		Lines: []Line{{"Consulting (hours)", 12, 9500}, {"Travel", 1, 23450}}}
	out := d.Render()
	for _, want := range []string{"Invoice 2024-017", "95.00 EUR", "1,140.00 EUR", "Net", "1,374.50 EUR", "261.16 EUR", "1,635.66 EUR"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}
