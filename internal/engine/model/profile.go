package model

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Profile accumulates the wall time of forward passes by kind of work:
// matmul (the projections, the MLP or the experts with their routing, the
// LM head), attention (Q·Kᵀ, mask and softmax, P·V) and the total; the
// rest (norms, RoPE, embeddings, residuals) is the difference. It is safe
// for concurrent forward passes; a nil *Profile records nothing.
type Profile struct {
	matmul, attention, total atomic.Int64
}

// ProfileReport is a Profile's totals.
type ProfileReport struct {
	Matmul, Attention, Total time.Duration
}

func (p *Profile) now() time.Time {
	if p == nil {
		return time.Time{}
	}
	return time.Now()
}

type profKind int

const (
	profMatmul profKind = iota
	profAttention
	profTotal
)

func (p *Profile) add(kind profKind, since time.Time) {
	if p == nil {
		return
	}
	d := int64(time.Since(since))
	switch kind {
	case profMatmul:
		p.matmul.Add(d)
	case profAttention:
		p.attention.Add(d)
	case profTotal:
		p.total.Add(d)
	}
}

// Reset zeroes the totals.
func (p *Profile) Reset() {
	p.matmul.Store(0)
	p.attention.Store(0)
	p.total.Store(0)
}

// Report returns the totals so far.
func (p *Profile) Report() ProfileReport {
	return ProfileReport{
		Matmul:    time.Duration(p.matmul.Load()),
		Attention: time.Duration(p.attention.Load()),
		Total:     time.Duration(p.total.Load()),
	}
}

// Split is "matmul% / attention% / other%" of the total.
func (r ProfileReport) Split() string {
	if r.Total <= 0 {
		return "-"
	}
	pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(r.Total) }
	return fmt.Sprintf("%.0f%% / %.0f%% / %.0f%%", pct(r.Matmul), pct(r.Attention), pct(r.Total-r.Matmul-r.Attention))
}
