// Command alertd receives alerts over HTTP and mails them.
package main

import (
	"encoding/json"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/tcheng/alertd/notify"
)

func main() {
	addr := envOr("ALERTD_LISTEN", ":9093")
	n := notify.NewNotifier(
		&notify.SMTPClient{
			Addr: envOr("ALERTD_SMTP", "localhost:25"),
			From: envOr("ALERTD_FROM", "alertd@localhost"),
		},
		strings.Split(envOr("ALERTD_TO", "root@localhost"), ","),
	)
	http.HandleFunc("POST /alert", func(w http.ResponseWriter, r *http.Request) {
		var a notify.Alert
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if a.At.IsZero() {
			a.At = time.Now()
		}
		sent, err := n.Notify(a)
		if err != nil {
			log.Printf("alert %s/%s: %v", a.Host, a.Summary, err)
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		log.Printf("alert %s/%s sent=%v", a.Host, a.Summary, sent)
		w.WriteHeader(http.StatusAccepted)
	})
	log.Printf("listening on %s", addr)
	log.Fatal(http.ListenAndServe(addr, nil))
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
