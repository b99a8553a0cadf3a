package bucket

import (
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *clock { return &clock{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)} }

func TestBurst(t *testing.T) {
	c := newClock()
	b := New(1, 3, c.now)
	for i := 0; i < 3; i++ {
		if !b.Allow() {
			t.Fatalf("request %d of the burst rejected", i+1)
		}
	}
	if b.Allow() {
		t.Fatal("request past the burst allowed")
	}
}

func TestRefillWholeSeconds(t *testing.T) {
	c := newClock()
	b := New(2, 2, c.now)
	b.Allow()
	b.Allow()
	c.advance(time.Second)
	if !b.Allow() || !b.Allow() || b.Allow() {
		t.Fatal("expected exactly 2 tokens after 1s at rate 2")
	}
}

func TestRefillCappedAtBurst(t *testing.T) {
	c := newClock()
	b := New(10, 2, c.now)
	b.Allow()
	c.advance(time.Hour)
	n := 0
	for b.Allow() {
		n++
	}
	if n != 2 {
		t.Fatalf("allowed %d after a long idle, want burst 2", n)
	}
}

func TestWait(t *testing.T) {
	c := newClock()
	b := New(4, 1, c.now)
	if b.Wait() != 0 {
		t.Fatal("full bucket should not wait")
	}
	b.Allow()
	if w := b.Wait(); w <= 0 || w > 250*time.Millisecond {
		t.Fatalf("Wait = %v", w)
	}
}
