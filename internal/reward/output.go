package reward

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
)

// tailBuffer keeps the last max bytes written to it (none when max is 0),
// and counts the rest.
type tailBuffer struct {
	max     int
	buf     []byte
	dropped int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	if t.max == 0 {
		t.dropped += int64(len(p))
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	// Trimming at twice the limit keeps the copying amortised.
	if len(t.buf) > 2*t.max {
		cut := len(t.buf) - t.max
		t.dropped += int64(cut)
		t.buf = append(t.buf[:0], t.buf[cut:]...)
	}
	return len(p), nil
}

// String returns the kept bytes as valid UTF-8, saying how much came
// before them.
func (t *tailBuffer) String() string {
	b := t.buf
	dropped := t.dropped
	if len(b) > t.max {
		dropped += int64(len(b) - t.max)
		b = b[len(b)-t.max:]
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if dropped > 0 {
		s = fmt.Sprintf("[%d bytes of output before this]\n", dropped) + s
	}
	return s
}

// outputSink receives the grade command's stdout and stderr: it keeps the
// tail and feeds every line to the parser as it comes, so that tests
// reported early in a long output still count.
type outputSink struct {
	mu     sync.Mutex
	parser lineParser // nil: nothing to parse
	tail   tailBuffer
	line   []byte
	// long is set while the rest of an over-long line is skipped.
	long bool
}

func (o *outputSink) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	o.tail.Write(p)
	if o.parser == nil {
		return n, nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !o.long {
			room := maxLine - len(o.line)
			if len(chunk) > room {
				chunk = chunk[:room]
				o.long = true
			}
			o.line = append(o.line, chunk...)
		}
		if i < 0 {
			break
		}
		o.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (o *outputSink) emit() {
	o.parser.line(strings.TrimSuffix(string(o.line), "\r"))
	o.line = o.line[:0]
	o.long = false
}

// flush parses a last line without a newline.
func (o *outputSink) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.parser != nil && (len(o.line) > 0 || o.long) {
		o.emit()
	}
}
