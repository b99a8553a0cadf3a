package invoice

import (
	"strings"
	"testing"
)

func TestRenderCreditNote(t *testing.T) {
	d := Doc{Number: "2024-017-C", Customer: "Acme GmbH", Currency: "EUR", VATPct: 19,
		Lines: []Line{{"Travel refund", 1, -23450}}}
	out := d.Render()
	for _, want := range []string{"Credit note 2024-017-C", "-234.50 EUR", "-44.56 EUR", "-279.06 EUR"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, ".-") {
		t.Errorf("malformed amount in\n%s", out)
	}
}
