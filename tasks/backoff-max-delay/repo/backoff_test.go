package backoff

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

type recorder struct{ waits []time.Duration }

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.waits = append(r.waits, d)
	return nil
}

func TestDelay(t *testing.T) {
	p := Policy{Initial: 100 * time.Millisecond, Multiplier: 2}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}
	for n, w := range want {
		if got := p.Delay(n); got != w {
			t.Errorf("Delay(%d) = %v, want %v", n, got, w)
		}
	}
}

func TestDoRetriesUntilSuccess(t *testing.T) {
	rec := &recorder{}
	p := Policy{Attempts: 5, Initial: time.Second, Multiplier: 3, Sleep: rec.sleep}
	calls := 0
	err := Do(context.Background(), p, func() error {
		calls++
		if calls < 3 {
			return errors.New("flaky")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err=%v calls=%d", err, calls)
	}
	if want := []time.Duration{time.Second, 3 * time.Second}; !reflect.DeepEqual(rec.waits, want) {
		t.Fatalf("waits = %v, want %v", rec.waits, want)
	}
}

func TestDoGivesUp(t *testing.T) {
	rec := &recorder{}
	boom := errors.New("boom")
	calls := 0
	err := Do(context.Background(), Policy{Attempts: 3, Initial: time.Millisecond, Sleep: rec.sleep}, func() error {
		calls++
		return boom
	})
	if err != boom || calls != 3 || len(rec.waits) != 2 {
		t.Fatalf("err=%v calls=%d waits=%v", err, calls, rec.waits)
	}
}

func TestPermanent(t *testing.T) {
	bad := errors.New("bad request")
	calls := 0
	err := Do(context.Background(), Policy{Attempts: 5, Sleep: (&recorder{}).sleep}, func() error {
		calls++
		return Permanent(bad)
	})
	if err != bad || calls != 1 {
		t.Fatalf("err=%v calls=%d", err, calls)
	}
}

func TestContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Do(ctx, Policy{Attempts: 3, Sleep: (&recorder{}).sleep}, func() error { return errors.New("x") })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestJitter(t *testing.T) {
	rec := &recorder{}
	p := Policy{Attempts: 2, Initial: time.Second, Jitter: 0.5, Sleep: rec.sleep, Rand: func() float64 { return 0 }}
	Do(context.Background(), p, func() error { return errors.New("x") })
	if len(rec.waits) != 1 || rec.waits[0] != 500*time.Millisecond {
		t.Fatalf("waits = %v", rec.waits)
	}
}
