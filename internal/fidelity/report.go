package fidelity

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// ReportVersion is the version of the report's JSON form.
const ReportVersion = 1

// Report is the outcome of an audit.
type Report struct {
	Version int       `json:"version"`
	Sandbox string    `json:"sandbox"`
	Started time.Time `json:"started"`
	// ElapsedMS is how long the audit took, in milliseconds.
	ElapsedMS int64 `json:"elapsed_ms"`
	// Reference describes the profile probes were compared against, if any.
	Reference *ReferenceInfo `json:"reference,omitempty"`
	// Score is the share of ok among probes that did not error, 0-100.
	Score  int    `json:"score"`
	Counts Counts `json:"counts"`
	// Rows hold one row per probe, in probe order.
	Rows []Row `json:"rows"`
}

// ReferenceInfo identifies the profile an audit compared against.
type ReferenceInfo struct {
	CapturedAt time.Time `json:"captured_at"`
	Host       HostInfo  `json:"host"`
}

// Row is one probe's outcome.
type Row struct {
	Probe    string   `json:"probe"`
	Severity Severity `json:"severity"`
	Status   Status   `json:"status"`
	// Evidence is one short line: what was seen, or why the probe errored.
	Evidence string `json:"evidence"`
	Why      string `json:"why"`
	// Limitation is the probe's known limitation; a tell with one is
	// reported, never hidden, and counted in Counts.Limited.
	Limitation string `json:"limitation,omitempty"`
	// Compared says the probe was judged against the reference profile.
	Compared bool `json:"compared,omitempty"`
}

// Counts tally the rows by status.
type Counts struct {
	OK    int `json:"ok"`
	Tell  int `json:"tell"`
	Error int `json:"error"`
	// StrongTell counts tells of strong probes.
	StrongTell int `json:"strong_tell"`
	// Limited counts tells of probes with a known limitation.
	Limited int `json:"limited"`
}

func (r *Report) tally() {
	r.Counts = Counts{}
	for _, row := range r.Rows {
		switch row.Status {
		case StatusOK:
			r.Counts.OK++
		case StatusTell:
			r.Counts.Tell++
			if row.Severity == Strong {
				r.Counts.StrongTell++
			}
			if row.Limitation != "" {
				r.Counts.Limited++
			}
		default:
			r.Counts.Error++
		}
	}
	r.Score = 0
	if decided := r.Counts.OK + r.Counts.Tell; decided > 0 {
		r.Score = int(math.Round(100 * float64(r.Counts.OK) / float64(decided)))
	}
}

// Tells returns the rows that found a tell.
func (r *Report) Tells() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Status == StatusTell {
			out = append(out, row)
		}
	}
	return out
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// WriteTable writes the report as an aligned table for people, followed by
// the score and, for every tell, how a model would use it and any known
// limitation.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBE\tSEVERITY\tSTATUS\tEVIDENCE")
	for _, row := range r.Rows {
		status := string(row.Status)
		if row.Status == StatusTell && row.Limitation != "" {
			status += "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", row.Probe, row.Severity, status, clip(row.Evidence, 100))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nscore %d/100: %d ok, %d tell (%d strong, %d known limitation*), %d error\n",
		r.Score, r.Counts.OK, r.Counts.Tell, r.Counts.StrongTell, r.Counts.Limited, r.Counts.Error)
	if ref := r.Reference; ref != nil {
		fmt.Fprintf(&b, "compared against a profile captured %s on %s (%s)\n",
			ref.CapturedAt.Format(time.DateOnly), ref.Host.Distro, ref.Host.Kernel)
	} else {
		fmt.Fprintln(&b, "judged by built-in rules (no reference profile)")
	}
	if tells := r.Tells(); len(tells) > 0 {
		fmt.Fprintln(&b, "\ntells:")
		for _, row := range tells {
			fmt.Fprintf(&b, "  %s: %s\n", row.Probe, row.Why)
			if row.Limitation != "" {
				fmt.Fprintf(&b, "    * known limitation: %s\n", row.Limitation)
			}
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// maxEvidence bounds a row's evidence, in runes.
const maxEvidence = 160

// oneLine makes s a single short line of valid text.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Join(strings.Fields(s), " ")
	return clip(s, maxEvidence)
}

// clip shortens s to n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
