package bucket

import (
	"testing"
	"time"
)

func TestRefillAcrossFrequentCalls(t *testing.T) {
	c := newClock()
	b := New(1, 1, c.now)
	var got []bool
	for i := 0; i < 8; i++ {
		got = append(got, b.Allow())
		c.advance(500 * time.Millisecond)
	}
	want := []bool{true, false, true, false, true, false, true, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Allow results = %v, want %v", got, want)
		}
	}
}

func TestRefillFractionalRate(t *testing.T) {
	c := newClock()
	b := New(0.5, 1, c.now)
	b.Allow()
	allowed := 0
	for i := 0; i < 32; i++ {
		c.advance(125 * time.Millisecond)
		if b.Allow() {
			allowed++
		}
	}
	if allowed != 2 {
		t.Fatalf("allowed %d over 4s at 0.5/s, want 2", allowed)
	}
}

func TestWaitAfterPartialRefill(t *testing.T) {
	c := newClock()
	b := New(1, 1, c.now)
	b.Allow()
	c.advance(250 * time.Millisecond)
	if b.Allow() {
		t.Fatal("allowed before a whole token accrued")
	}
	c.advance(250 * time.Millisecond)
	if b.Allow() {
		t.Fatal("allowed before a whole token accrued")
	}
	c.advance(500 * time.Millisecond)
	if !b.Allow() {
		t.Fatal("rejected after a full second at rate 1")
	}
}

func TestSteadyRateUnderPolling(t *testing.T) {
	c := newClock()
	b := New(8, 1, c.now)
	allowed := 0
	for i := 0; i < 640; i++ {
		if b.Allow() {
			allowed++
		}
		c.advance(time.Second / 64)
	}
	// 10s of polling at 8/s plus the initial token.
	if allowed < 80 || allowed > 81 {
		t.Fatalf("allowed %d over 10s at 8/s, want about 80", allowed)
	}
}
