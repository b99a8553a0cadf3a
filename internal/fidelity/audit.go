package fidelity

import (
	"context"
	"fmt"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

// AuditOptions select what an audit runs and what it compares against.
type AuditOptions struct {
	// Profile is a reference captured on a real machine; nil judges by the
	// built-in rules alone.
	Profile *Profile
	// Probes names the probes to run; empty runs them all.
	Probes []string
	// Concurrency bounds how many probes run at once; zero means 8.
	Concurrency int
}

// Audit runs the selected probes in sb and judges each observation. A probe
// that cannot observe or decide gives an "error" row, never a tell. Audit
// itself fails only for bad options or when ctx ends.
func Audit(ctx context.Context, sb sandbox.Sandbox, opts AuditOptions) (*Report, error) {
	if opts.Profile != nil && opts.Profile.Version != ProfileVersion {
		return nil, fmt.Errorf("audit %s: profile version %d: %w", sb.ID(), opts.Profile.Version, ErrProfileVersion)
	}
	probes, err := selectProbes(opts.Probes)
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", sb.ID(), err)
	}
	start := time.Now()
	rows := make([]Row, len(probes))
	forEach(ctx, len(probes), opts.Concurrency, func(ctx context.Context, i int) {
		rows[i] = auditOne(ctx, sb, probes[i], opts.Profile)
	})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("audit %s: %w", sb.ID(), err)
	}
	r := &Report{
		Version:   ReportVersion,
		Sandbox:   sb.ID(),
		Started:   start.UTC(),
		ElapsedMS: time.Since(start).Milliseconds(),
		Rows:      rows,
	}
	if p := opts.Profile; p != nil {
		r.Reference = &ReferenceInfo{CapturedAt: p.CapturedAt, Host: p.Host}
	}
	r.tally()
	return r, nil
}

func auditOne(ctx context.Context, sb sandbox.Sandbox, p Probe, profile *Profile) Row {
	row := Row{
		Probe:      p.Name,
		Severity:   p.Severity,
		Why:        p.Why,
		Limitation: p.Limitation,
	}
	obs, err := p.gather(ctx, sb)
	if err != nil {
		row.Status, row.Evidence = StatusError, oneLine(err.Error())
		return row
	}
	ref := profile.reference(p)
	v := p.decide(obs, ref)
	row.Status, row.Evidence, row.Compared = v.status, oneLine(v.evidence), ref != nil
	return row
}
