// Package pager computes page windows over a list of known length.
package pager

// Page describes one page of results.
type Page struct {
	Number     int // 1-based
	PerPage    int
	Total      int // number of items overall
	TotalPages int
	Offset     int // index of the first item on this page
	Limit      int // number of items on this page
	HasNext    bool
	HasPrev    bool
}

// New returns page number (1-based) of total items split into pages of
// perPage. A number below 1 is treated as 1; a number past the end gives an
// empty page.
func New(total, perPage, number int) Page {
	if perPage < 1 {
		perPage = 1
	}
	if number < 1 {
		number = 1
	}
	p := Page{Number: number, PerPage: perPage, Total: total}
	p.TotalPages = total/perPage + 1
	p.Offset = (number - 1) * perPage
	if p.Offset > total {
		p.Offset = total
	}
	p.Limit = perPage
	if p.Offset+p.Limit > total {
		p.Limit = total - p.Offset
	}
	p.HasPrev = number > 1
	p.HasNext = number < p.TotalPages
	return p
}
