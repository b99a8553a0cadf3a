package middleware

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func serve(t *testing.T, incoming []string) (ctxID, headerID string) {
	t.Helper()
	h := RequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctxID = GetRequestID(r.Context())
	}))
	req := httptest.NewRequest("GET", "/", nil)
	for _, v := range incoming {
		req.Header.Add(HeaderRequestID, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return ctxID, rec.Header().Get(HeaderRequestID)
}

func TestRequestIDReusesIncoming(t *testing.T) {
	for _, in := range []string{"lb-7f3a9c21", "5b0d6c1e-8a4f-4c3e-9d2b-1f0e7a6b5c4d", "abc"} {
		ctxID, headerID := serve(t, []string{in})
		if ctxID != in || headerID != in {
			t.Errorf("incoming %q: context %q, response header %q", in, ctxID, headerID)
		}
	}
}

func TestRequestIDBlankIncoming(t *testing.T) {
	for _, in := range []string{"", "   "} {
		ctxID, headerID := serve(t, []string{in})
		if !hexID.MatchString(ctxID) || headerID != ctxID {
			t.Errorf("incoming %q: context %q, response header %q; want a fresh id", in, ctxID, headerID)
		}
	}
}

func TestRequestIDMissingIsUnique(t *testing.T) {
	a, _ := serve(t, nil)
	b, _ := serve(t, nil)
	if !hexID.MatchString(a) || !hexID.MatchString(b) || a == b {
		t.Errorf("generated ids %q and %q", a, b)
	}
}
