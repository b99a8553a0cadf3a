// Package middleware holds net/http middleware shared between services.
package middleware

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
)

// HeaderRequestID is the header carrying the request id.
const HeaderRequestID = "X-Request-ID"

type ctxKey struct{}

// RequestID gives every request an id, stored in its context and echoed in
// the X-Request-ID response header. An id the request already carries in
// X-Request-ID (set by a load balancer or the caller) is kept; a new one is
// generated only when the header is missing or blank.
func RequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimSpace(r.Header.Get(HeaderRequestID))
		if id == "" {
			id = newID()
		}
		w.Header().Set(HeaderRequestID, id)
		ctx := context.WithValue(r.Context(), ctxKey{}, id)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// GetRequestID returns the request id stored by RequestID, or "".
func GetRequestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}
