package notify

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Notifier mails alerts to a fixed list of recipients, dropping those below
// warning and repeats within the suppression window.
type Notifier struct {
	smtp       *SMTPClient
	recipients []string
	window     time.Duration
	now        func() time.Time

	mu   sync.Mutex
	last map[string]time.Time // host+summary -> last sent
}

// NewNotifier returns a Notifier that mails through the relay at addr.
func NewNotifier(addr, from string, recipients []string) *Notifier {
	return &Notifier{
		smtp:       &SMTPClient{Addr: addr, From: from},
		recipients: recipients,
		window:     10 * time.Minute,
		now:        time.Now,
		last:       map[string]time.Time{},
	}
}

// Notify mails a to every recipient. It returns whether the alert was sent
// and the errors of the recipients that failed, joined.
func (n *Notifier) Notify(a Alert) (bool, error) {
	if err := a.Validate(); err != nil {
		return false, err
	}
	if rank[a.Severity] < rank[Warning] {
		return false, nil
	}
	key := a.Host + "\x00" + a.Summary
	n.mu.Lock()
	now := n.now()
	if t, ok := n.last[key]; ok && now.Sub(t) < n.window {
		n.mu.Unlock()
		return false, nil
	}
	n.last[key] = now
	n.mu.Unlock()

	subject, body := Subject(a), Body(a)
	var errs []error
	for _, to := range n.recipients {
		if err := n.smtp.Send(to, subject, body); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", to, err))
		}
	}
	return true, errors.Join(errs...)
}
