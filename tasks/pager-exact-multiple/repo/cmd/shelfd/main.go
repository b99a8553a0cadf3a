// Command shelfd serves the library API.
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/lena-fischer/shelf/api"
)

func main() {
	addr := flag.String("addr", ":8080", "listen address")
	flag.Parse()
	store := api.MemStore{
		{ID: 1, Title: "The Left Hand of Darkness", Author: "Ursula K. Le Guin"},
		{ID: 2, Title: "Kindred", Author: "Octavia E. Butler"},
		{ID: 3, Title: "Solaris", Author: "Stanisław Lem"},
	}
	log.Printf("listening on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, api.Handler(store)))
}
