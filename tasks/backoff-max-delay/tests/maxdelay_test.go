package backoff

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestDelayCapped(t *testing.T) {
	p := Policy{Initial: 100 * time.Millisecond, Multiplier: 2, MaxDelay: time.Second}
	want := []time.Duration{
		100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		time.Second, time.Second, time.Second,
	}
	for n, w := range want {
		if got := p.Delay(n); got != w {
			t.Errorf("Delay(%d) = %v, want %v", n, got, w)
		}
	}
}

func TestDelayCappedManyAttempts(t *testing.T) {
	p := Policy{Initial: 100 * time.Millisecond, Multiplier: 2, MaxDelay: 30 * time.Second}
	for _, n := range []int{20, 63, 64, 100, 1000} {
		if got := p.Delay(n); got != 30*time.Second {
			t.Errorf("Delay(%d) = %v, want 30s", n, got)
		}
	}
}

func TestDelayZeroMaxIsUncapped(t *testing.T) {
	p := Policy{Initial: time.Second, Multiplier: 2}
	if got := p.Delay(10); got != 1024*time.Second {
		t.Errorf("Delay(10) = %v, want 1024s", got)
	}
}

func TestDelayInitialAboveMax(t *testing.T) {
	p := Policy{Initial: 5 * time.Second, Multiplier: 1.5, MaxDelay: 2 * time.Second}
	if got := p.Delay(0); got != 2*time.Second {
		t.Errorf("Delay(0) = %v, want 2s", got)
	}
}

func TestDoUsesCappedDelays(t *testing.T) {
	rec := &recorder{}
	p := Policy{Attempts: 6, Initial: time.Second, Multiplier: 3, MaxDelay: 10 * time.Second, Sleep: rec.sleep}
	Do(context.Background(), p, func() error { return errors.New("down") })
	want := []time.Duration{time.Second, 3 * time.Second, 9 * time.Second, 10 * time.Second, 10 * time.Second}
	if !reflect.DeepEqual(rec.waits, want) {
		t.Fatalf("waits = %v, want %v", rec.waits, want)
	}
}

func TestJitterAppliesToCappedDelay(t *testing.T) {
	rec := &recorder{}
	p := Policy{Attempts: 4, Initial: time.Second, Multiplier: 10, MaxDelay: 4 * time.Second, Jitter: 0.5,
		Sleep: rec.sleep, Rand: func() float64 { return 0.75 }}
	Do(context.Background(), p, func() error { return errors.New("down") })
	want := []time.Duration{1250 * time.Millisecond, 5 * time.Second, 5 * time.Second}
	if !reflect.DeepEqual(rec.waits, want) {
		t.Fatalf("waits = %v, want %v", rec.waits, want)
	}
}
