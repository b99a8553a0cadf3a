package api

import "testing"

func TestListBooksExactMultiple(t *testing.T) {
	h := Handler(books(40))
	_, resp := get(t, h, "/books?page=2&per_page=20")
	if resp.TotalPages != 2 || resp.HasNext || len(resp.Books) != 20 || resp.Books[19].ID != 40 {
		t.Fatalf("page 2 of 40: total_pages=%d has_next=%v books=%d", resp.TotalPages, resp.HasNext, len(resp.Books))
	}
	_, resp = get(t, h, "/books?page=1&per_page=20")
	if resp.TotalPages != 2 || !resp.HasNext {
		t.Fatalf("page 1 of 40: total_pages=%d has_next=%v", resp.TotalPages, resp.HasNext)
	}
}
