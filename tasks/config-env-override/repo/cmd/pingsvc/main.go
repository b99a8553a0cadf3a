// Command pingsvc checks HTTP endpoints and reports their status.
package main

import (
	"encoding/json"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/nadia-haddad/pingsvc/config"
)

type result struct {
	Target  string    `json:"target"`
	Status  int       `json:"status"`
	Error   string    `json:"error,omitempty"`
	Latency string    `json:"latency"`
	At      time.Time `json:"at"`
}

func main() {
	path := flag.String("config", "pingsvc.json", "config file")
	flag.Parse()
	cfg, err := config.Load(*path)
	if err != nil {
		slog.Error("config", "err", err)
		os.Exit(1)
	}
	var level slog.Level
	level.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	client := &http.Client{
		Timeout:   time.Duration(cfg.Timeout),
		Transport: &http.Transport{MaxConnsPerHost: cfg.MaxConns},
	}
	var mu sync.Mutex
	results := map[string]result{}
	go func() {
		for {
			for _, t := range cfg.Targets {
				start := time.Now()
				r := result{Target: t, At: start}
				resp, err := client.Get(t)
				if err != nil {
					r.Error = err.Error()
				} else {
					r.Status = resp.StatusCode
					resp.Body.Close()
				}
				r.Latency = time.Since(start).String()
				log.Debug("checked", "target", t, "status", r.Status, "err", r.Error)
				mu.Lock()
				results[t] = r
				mu.Unlock()
			}
			time.Sleep(30 * time.Second)
		}
	}()
	http.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(results)
	})
	log.Info("listening", "addr", cfg.Addr)
	if err := http.ListenAndServe(cfg.Addr, nil); err != nil {
		log.Error("serve", "err", err)
		os.Exit(1)
	}
}
