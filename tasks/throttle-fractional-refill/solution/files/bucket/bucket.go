// Package bucket implements a token bucket.
package bucket

import (
	"sync"
	"time"
)

// Bucket holds up to Burst tokens and gains Rate tokens per second. Each
// allowed event takes one token.
type Bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  int
	tokens float64
	last   time.Time
	now    func() time.Time
}

// New returns a full bucket. now is the clock; nil means time.Now.
func New(rate float64, burst int, now func() time.Time) *Bucket {
	if now == nil {
		now = time.Now
	}
	if burst < 1 {
		burst = 1
	}
	return &Bucket{rate: rate, burst: burst, tokens: float64(burst), last: now(), now: now}
}

func (b *Bucket) refill() {
	now := b.now()
	elapsed := now.Sub(b.last)
	if elapsed <= 0 {
		return
	}
	b.tokens += elapsed.Seconds() * b.rate
	if b.tokens > float64(b.burst) {
		b.tokens = float64(b.burst)
	}
	b.last = now
}

// Allow takes a token if one is available.
func (b *Bucket) Allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Wait returns how long until a token will be available; 0 if one is now.
func (b *Bucket) Wait() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	if b.tokens >= 1 {
		return 0
	}
	if b.rate <= 0 {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}

// LastUsed is when the bucket was last refilled.
func (b *Bucket) LastUsed() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}
