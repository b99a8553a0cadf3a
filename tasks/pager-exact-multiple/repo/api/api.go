// Package api serves the library over HTTP.
package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/lena-fischer/shelf/pager"
)

// Book is one book on the shelf.
type Book struct {
	ID     int    `json:"id"`
	Title  string `json:"title"`
	Author string `json:"author"`
}

// Store lists books in a stable order.
type Store interface {
	Books() []Book
}

// MaxPerPage caps per_page.
const MaxPerPage = 100

type listResponse struct {
	Books      []Book `json:"books"`
	Page       int    `json:"page"`
	PerPage    int    `json:"per_page"`
	Total      int    `json:"total"`
	TotalPages int    `json:"total_pages"`
	HasNext    bool   `json:"has_next"`
}

// Handler returns the API's routes.
func Handler(s Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /books", func(w http.ResponseWriter, r *http.Request) {
		page, err := intParam(r, "page", 1)
		if err != nil {
			http.Error(w, "bad page", http.StatusBadRequest)
			return
		}
		per, err := intParam(r, "per_page", 20)
		if err != nil || per < 1 {
			http.Error(w, "bad per_page", http.StatusBadRequest)
			return
		}
		if per > MaxPerPage {
			per = MaxPerPage
		}
		all := s.Books()
		p := pager.New(len(all), per, page)
		resp := listResponse{
			Books:      append([]Book{}, all[p.Offset:p.Offset+p.Limit]...),
			Page:       p.Number,
			PerPage:    p.PerPage,
			Total:      p.Total,
			TotalPages: p.TotalPages,
			HasNext:    p.HasNext,
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	})
	return mux
}

func intParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	return strconv.Atoi(v)
}

// MemStore is a Store backed by a slice.
type MemStore []Book

// Books returns the books in insertion order.
func (m MemStore) Books() []Book { return m }
