// Package notify formats alerts and mails them to the on-call list.
package notify

import (
	"fmt"
	"strings"
	"time"
)

// Severity levels, lowest first.
const (
	Info     = "info"
	Warning  = "warning"
	Critical = "critical"
)

var rank = map[string]int{Info: 0, Warning: 1, Critical: 2}

// Alert is one alert as posted to alertd.
type Alert struct {
	Severity string            `json:"severity"`
	Host     string            `json:"host"`
	Summary  string            `json:"summary"`
	Labels   map[string]string `json:"labels,omitempty"`
	At       time.Time         `json:"at"`
}

// Validate reports what is wrong with a, if anything.
func (a Alert) Validate() error {
	if _, ok := rank[a.Severity]; !ok {
		return fmt.Errorf("unknown severity %q", a.Severity)
	}
	if a.Host == "" || a.Summary == "" {
		return fmt.Errorf("host and summary are required")
	}
	return nil
}

// Subject is the mail subject for a.
func Subject(a Alert) string {
	return fmt.Sprintf("[%s] %s on %s", strings.ToUpper(a.Severity), a.Summary, a.Host)
}

// Body is the mail body for a.
func Body(a Alert) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Host:     %s\n", a.Host)
	fmt.Fprintf(&b, "Severity: %s\n", a.Severity)
	fmt.Fprintf(&b, "Time:     %s\n", a.At.UTC().Format(time.RFC3339))
	if len(a.Labels) > 0 {
		keys := make([]string, 0, len(a.Labels))
		for k := range a.Labels {
			keys = append(keys, k)
		}
		sortStrings(keys)
		b.WriteString("Labels:\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s=%s\n", k, a.Labels[k])
		}
	}
	b.WriteString("\n" + a.Summary + "\n")
	return b.String()
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
