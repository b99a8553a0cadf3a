package run

import (
	"fmt"
	"io"
	"math"
	"time"
)

// progress shows training progress: a line rewritten in place on a
// terminal, otherwise a line every 10 seconds and at each evaluation.
type progress struct {
	w        io.Writer
	tty      bool
	total    int
	first    int     // the step this process started at
	baseline float64 // NaN: none to show
	start    time.Time
	last     time.Time
	heldOut  float64
	line     string
	tokens   int
}

func newProgress(w io.Writer, tty bool, total, first int, baseline float64) *progress {
	return &progress{w: w, tty: tty, total: total, first: first, baseline: baseline, start: time.Now(), heldOut: math.NaN()}
}

// update shows step m, which trained on tokens tokens.
func (p *progress) update(m Metric, tokens int) {
	p.tokens += tokens
	if m.HeldOutLoss != nil {
		p.heldOut = *m.HeldOutLoss
	}
	el := time.Since(p.start)
	done := m.Step - p.first
	eta := time.Duration(float64(el) / float64(done) * float64(p.total-m.Step)).Truncate(time.Second)
	held := "-"
	if !math.IsNaN(p.heldOut) {
		held = fmt.Sprintf("%.3f", p.heldOut)
	}
	if !math.IsNaN(p.baseline) {
		held += fmt.Sprintf(" (unigram %.3f)", p.baseline)
	}
	loss := math.NaN()
	if m.Loss != nil {
		loss = *m.Loss
	}
	p.line = fmt.Sprintf("step %d/%d  loss %.3f  held-out %s  lr %.2g  %.0f trained tok/s  ETA %s",
		m.Step, p.total, loss, held, m.LR, float64(p.tokens)/el.Seconds(), eta)
	switch {
	case p.tty:
		fmt.Fprintf(p.w, "\r\033[K%s", p.line)
	case m.HeldOutLoss != nil || time.Since(p.last) >= 10*time.Second:
		fmt.Fprintln(p.w, p.line)
		p.last = time.Now()
	}
}

// finish ends the line rewritten in place; it may be called more than
// once.
func (p *progress) finish() {
	if p.tty && p.line != "" {
		fmt.Fprintln(p.w)
		p.line = ""
	}
}
