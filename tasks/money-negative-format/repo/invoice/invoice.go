// Package invoice renders invoices and credit notes as plain text.
package invoice

import (
	"fmt"
	"strings"

	"github.com/hbauer/invoicer/money"
)

// Line is one item on an invoice.
type Line struct {
	Description string
	Qty         int64
	UnitCents   int64
}

// Doc is an invoice, or a credit note when its lines are negative.
type Doc struct {
	Number   string
	Customer string
	Currency string
	VATPct   int64
	Lines    []Line
}

// Net is the sum of the lines.
func (d Doc) Net() int64 {
	var t int64
	for _, l := range d.Lines {
		t += l.Qty * l.UnitCents
	}
	return t
}

// VAT is the tax on Net.
func (d Doc) VAT() int64 { return money.Percent(d.Net(), d.VATPct) }

// Render returns the document as text.
func (d Doc) Render() string {
	var b strings.Builder
	kind := "Invoice"
	if d.Net() < 0 {
		kind = "Credit note"
	}
	fmt.Fprintf(&b, "%s %s\n%s\n\n", kind, d.Number, d.Customer)
	for _, l := range d.Lines {
		fmt.Fprintf(&b, "%-30s %4d x %16s %18s\n", l.Description, l.Qty,
			money.Format(l.UnitCents, d.Currency), money.Format(l.Qty*l.UnitCents, d.Currency))
	}
	fmt.Fprintf(&b, "\n%-55s %18s\n", "Net", money.Format(d.Net(), d.Currency))
	fmt.Fprintf(&b, "%-55s %18s\n", fmt.Sprintf("VAT %d%%", d.VATPct), money.Format(d.VAT(), d.Currency))
	fmt.Fprintf(&b, "%-55s %18s\n", "Total", money.Format(d.Net()+d.VAT(), d.Currency))
	return b.String()
}
