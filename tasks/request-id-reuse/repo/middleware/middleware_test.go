package middleware

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

var hexID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestRequestIDGenerated(t *testing.T) {
	var seen string
	h := RequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = GetRequestID(r.Context())
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if !hexID.MatchString(seen) {
		t.Fatalf("request id %q is not 32 hex digits", seen)
	}
	if got := rec.Header().Get(HeaderRequestID); got != seen {
		t.Fatalf("response header %q, context %q", got, seen)
	}
}

func TestChainOrderAndLog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}), RequestID, AccessLog(log))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/brew", nil))
	line := buf.String()
	if !strings.Contains(line, "status=418") || !strings.Contains(line, "path=/brew") {
		t.Fatalf("log line %q", line)
	}
	if !strings.Contains(line, "request_id="+rec.Header().Get(HeaderRequestID)) {
		t.Fatalf("log line %q lacks the request id", line)
	}
}

func TestRecover(t *testing.T) {
	var buf bytes.Buffer
	h := Recover(slog.New(slog.NewTextHandler(&buf, nil)))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 500 || !strings.Contains(buf.String(), "boom") {
		t.Fatalf("code %d, log %q", rec.Code, buf.String())
	}
}
