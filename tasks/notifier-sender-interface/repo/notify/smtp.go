package notify

import (
	"fmt"
	"net/smtp"
	"strings"
)

// SMTPClient sends plain-text mail through a relay that needs no auth.
type SMTPClient struct {
	Addr string // host:port
	From string
}

// Send mails one message.
func (c *SMTPClient) Send(to, subject, body string) error {
	msg := strings.Join([]string{
		"From: " + c.From,
		"To: " + to,
		"Subject: " + subject,
		"Content-Type: text/plain; charset=utf-8",
		"",
		body,
	}, "\r\n")
	if err := smtp.SendMail(c.Addr, nil, c.From, []string{to}, []byte(msg)); err != nil {
		return fmt.Errorf("smtp %s: %w", c.Addr, err)
	}
	return nil
}
