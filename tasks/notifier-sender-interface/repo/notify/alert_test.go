package notify

import (
	"strings"
	"testing"
	"time"
)

func TestSubject(t *testing.T) {
	a := Alert{Severity: Critical, Host: "web-1", Summary: "disk full"}
	if got := Subject(a); got != "[CRITICAL] disk full on web-1" {
		t.Errorf("Subject = %q", got)
	}
}

func TestBody(t *testing.T) {
	a := Alert{
		Severity: Warning, Host: "db-2", Summary: "replication lag 40s",
		Labels: map[string]string{"team": "data", "dc": "fra"},
		At:     time.Date(2024, 5, 2, 9, 30, 0, 0, time.UTC),
	}
	want := "Host:     db-2\nSeverity: warning\nTime:     2024-05-02T09:30:00Z\nLabels:\n  dc=fra\n  team=data\n\nreplication lag 40s\n"
	if got := Body(a); got != want {
		t.Errorf("Body =\n%s\nwant\n%s", got, want)
	}
}

func TestValidate(t *testing.T) {
	if err := (Alert{Severity: "loud", Host: "h", Summary: "s"}).Validate(); err == nil || !strings.Contains(err.Error(), "severity") {
		t.Errorf("bad severity: %v", err)
	}
	if err := (Alert{Severity: Info, Host: "h"}).Validate(); err == nil {
		t.Error("missing summary accepted")
	}
}
