package notify

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

var _ Sender = (*SMTPClient)(nil)

type sent struct{ to, subject, body string }

type fakeSender struct {
	msgs []sent
	fail map[string]bool
}

func (f *fakeSender) Send(to, subject, body string) error {
	if f.fail[to] {
		return errors.New("mailbox unavailable")
	}
	f.msgs = append(f.msgs, sent{to, subject, body})
	return nil
}

func alert() Alert {
	return Alert{Severity: Critical, Host: "web-1", Summary: "disk full", At: time.Date(2024, 5, 2, 9, 30, 0, 0, time.UTC)}
}

func TestNotifySendsToEveryRecipient(t *testing.T) {
	f := &fakeSender{}
	n := NewNotifier(f, []string{"oncall@example.com", "ops@example.com"})
	ok, err := n.Notify(alert())
	if !ok || err != nil {
		t.Fatalf("Notify = %v, %v", ok, err)
	}
	want := []sent{
		{"oncall@example.com", "[CRITICAL] disk full on web-1", Body(alert())},
		{"ops@example.com", "[CRITICAL] disk full on web-1", Body(alert())},
	}
	if !reflect.DeepEqual(f.msgs, want) {
		t.Fatalf("sent %+v, want %+v", f.msgs, want)
	}
}

func TestNotifySkipsInfo(t *testing.T) {
	f := &fakeSender{}
	n := NewNotifier(f, []string{"oncall@example.com"})
	a := alert()
	a.Severity = Info
	if ok, err := n.Notify(a); ok || err != nil {
		t.Fatalf("Notify(info) = %v, %v", ok, err)
	}
	if len(f.msgs) != 0 {
		t.Fatalf("info alert was mailed: %+v", f.msgs)
	}
}

func TestNotifySuppressesRepeats(t *testing.T) {
	f := &fakeSender{}
	n := NewNotifier(f, []string{"oncall@example.com"})
	n.Notify(alert())
	if ok, _ := n.Notify(alert()); ok {
		t.Fatal("repeat within the window was sent")
	}
	other := alert()
	other.Host = "web-2"
	if ok, _ := n.Notify(other); !ok {
		t.Fatal("alert for another host was suppressed")
	}
	if len(f.msgs) != 2 {
		t.Fatalf("sent %d messages, want 2", len(f.msgs))
	}
}

func TestNotifyJoinsErrors(t *testing.T) {
	f := &fakeSender{fail: map[string]bool{"a@example.com": true}}
	n := NewNotifier(f, []string{"a@example.com", "b@example.com"})
	ok, err := n.Notify(alert())
	if !ok || err == nil || !strings.Contains(err.Error(), "a@example.com") {
		t.Fatalf("Notify = %v, %v; want sent with an error naming a@example.com", ok, err)
	}
	if len(f.msgs) != 1 || f.msgs[0].to != "b@example.com" {
		t.Fatalf("sent %+v", f.msgs)
	}
}

func TestNotifyRejectsInvalid(t *testing.T) {
	f := &fakeSender{}
	n := NewNotifier(f, []string{"oncall@example.com"})
	if _, err := n.Notify(Alert{Severity: "loud"}); err == nil {
		t.Fatal("invalid alert accepted")
	}
}
