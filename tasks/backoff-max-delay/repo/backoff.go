// Package backoff retries operations with exponential backoff.
package backoff

import (
	"context"
	"errors"
	"math"
	"math/rand"
	"time"
)

// Policy says how often and how long to retry.
type Policy struct {
	Attempts   int           // total calls, including the first; < 1 means 1
	Initial    time.Duration // wait before the first retry
	Multiplier float64       // growth per retry; < 1 means 1
	Jitter     float64       // randomise each wait by ± this fraction (0..1)

	// Sleep waits for d or until ctx is done. Nil means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for jitter. Nil means math/rand.
	Rand func() float64
}

// Delay returns the wait before retry number n (0 for the first retry),
// before jitter.
func (p Policy) Delay(n int) time.Duration {
	m := p.Multiplier
	if m < 1 {
		m = 1
	}
	return time.Duration(float64(p.Initial) * math.Pow(m, float64(n)))
}

func (p Policy) jittered(d time.Duration) time.Duration {
	if p.Jitter <= 0 {
		return d
	}
	r := rand.Float64
	if p.Rand != nil {
		r = p.Rand
	}
	f := 1 + p.Jitter*(2*r()-1)
	return time.Duration(float64(d) * f)
}

type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent wraps err so that Do returns it without retrying.
func Permanent(err error) error { return permanent{err} }

// Do calls fn until it succeeds, returns a Permanent error, the attempts
// run out, or ctx is done. It returns fn's last error (unwrapped from
// Permanent), or ctx's error if that came first.
func Do(ctx context.Context, p Policy, fn func() error) error {
	attempts := p.Attempts
	if attempts < 1 {
		attempts = 1
	}
	sleep := p.Sleep
	if sleep == nil {
		sleep = timerSleep
	}
	var err error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			if serr := sleep(ctx, p.jittered(p.Delay(i-1))); serr != nil {
				return serr
			}
		}
		err = fn()
		if err == nil {
			return nil
		}
		var perm permanent
		if errors.As(err, &perm) {
			return perm.err
		}
	}
	return err
}

func timerSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
