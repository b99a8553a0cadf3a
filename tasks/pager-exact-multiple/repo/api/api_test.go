package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

func books(n int) MemStore {
	var s MemStore
	for i := 1; i <= n; i++ {
		s = append(s, Book{ID: i, Title: fmt.Sprintf("Book %d", i), Author: "A"})
	}
	return s
}

func get(t *testing.T, h http.Handler, url string) (int, listResponse) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
	var resp listResponse
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatal(err)
		}
	}
	return rec.Code, resp
}

func TestListBooks(t *testing.T) {
	h := Handler(books(45))
	code, resp := get(t, h, "/books?page=3&per_page=20")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	if len(resp.Books) != 5 || resp.Books[0].ID != 41 || resp.TotalPages != 3 || resp.HasNext {
		t.Fatalf("resp = %+v", resp)
	}
}

func TestDefaultsAndCap(t *testing.T) {
	h := Handler(books(150))
	_, resp := get(t, h, "/books")
	if resp.PerPage != 20 || resp.Page != 1 || len(resp.Books) != 20 {
		t.Errorf("defaults: %+v", resp)
	}
	_, resp = get(t, h, "/books?per_page=1000")
	if resp.PerPage != MaxPerPage {
		t.Errorf("per_page not capped: %d", resp.PerPage)
	}
}

func TestBadParams(t *testing.T) {
	h := Handler(books(3))
	for _, u := range []string{"/books?page=x", "/books?per_page=0"} {
		if code, _ := get(t, h, u); code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", u, code)
		}
	}
}
