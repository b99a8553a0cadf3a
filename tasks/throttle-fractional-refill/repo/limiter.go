// Package throttle rate-limits HTTP requests per client.
package throttle

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kwame-asante/throttle/bucket"
)

const idleAfter = 10 * time.Minute

// Limiter keeps one bucket per key.
type Limiter struct {
	rate  float64
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket.Bucket
}

// NewLimiter allows rate events per second per key, in bursts of up to
// burst. now is the clock; nil means time.Now.
func NewLimiter(rate float64, burst int, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{rate: rate, burst: burst, now: now, buckets: map[string]*bucket.Bucket{}}
}

// Allow reports whether an event for key may happen now.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	b, ok := l.buckets[key]
	if !ok {
		b = bucket.New(l.rate, l.burst, l.now)
		l.buckets[key] = b
	}
	l.sweep()
	l.mu.Unlock()
	if b.Allow() {
		return true, 0
	}
	return false, b.Wait()
}

func (l *Limiter) sweep() {
	now := l.now()
	for k, b := range l.buckets {
		if now.Sub(b.LastUsed()) > idleAfter {
			delete(l.buckets, k)
		}
	}
}

// ByRemoteIP keys requests by the client's IP address.
func ByRemoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Middleware rejects requests over the limit with 429.
func (l *Limiter) Middleware(key func(*http.Request) string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, wait := l.Allow(key(r))
		if !ok {
			secs := int(math.Ceil(wait.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			http.Error(w, "rate limit exceeded", http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}
