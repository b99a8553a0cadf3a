package trajectory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// MaxLineBytes is the longest record, without its newline, that a Writer
// writes and a Reader reads.
const MaxLineBytes = 64 << 20

// Writer writes trajectories as JSON Lines. It is safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
	// torn is set when a write stopped part way through a record, so the
	// next record starts on a line of its own.
	torn bool
}

// NewWriter returns a Writer that writes to w. Each record reaches w in a
// single Write call, so records from several Writers appending to one
// O_APPEND file do not interleave.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write validates t and writes it as one line. Times are written in UTC;
// t itself is not modified.
func (w *Writer) Write(t *Trajectory) error {
	line, err := encode(t)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.torn {
		line = append([]byte{'\n'}, line...)
	}
	n, err := w.w.Write(line)
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.torn = n > 0 && n < len(line)
		return fmt.Errorf("write trajectory %s: %w", t.Key(), err)
	}
	w.torn = false
	return nil
}

// encode returns t's line, newline included.
func encode(t *Trajectory) ([]byte, error) {
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("write trajectory %s: %w", t.Key(), err)
	}
	c := *t
	c.Turns = append([]Turn(nil), t.Turns...)
	c.inUTC()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // code is full of <, > and &
	if err := enc.Encode(&c); err != nil {
		return nil, fmt.Errorf("encode trajectory %s: %w", t.Key(), err)
	}
	if b.Len()-1 > MaxLineBytes {
		return nil, fmt.Errorf("encode trajectory %s: %d bytes is over the %d-byte line limit", t.Key(), b.Len()-1, MaxLineBytes)
	}
	return b.Bytes(), nil
}

// OpenFile opens path for appending, creating it and its parent directory
// if needed, and returns a Writer on it and the Closer that syncs and closes
// the file. If the file ends in a record cut short by a crash, OpenFile
// first ends that line, so the records it appends stay whole and the cut
// record reads as ErrTruncated.
func OpenFile(path string) (_ *Writer, _ io.Closer, retErr error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("open trajectories: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open trajectories: %w", err)
	}
	defer func() {
		if retErr != nil {
			f.Close()
		}
	}()
	if err := endLine(f); err != nil {
		return nil, nil, fmt.Errorf("open trajectories %s: %w", path, err)
	}
	return NewWriter(f), syncCloser{f}, nil
}

// endLine appends a newline to f unless it is empty or ends in one. Another
// process appending at the same time can at worst cause an empty line, which
// readers skip.
func endLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, st.Size()-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	_, err = f.Write([]byte{'\n'})
	return err
}

type syncCloser struct{ f *os.File }

func (c syncCloser) Close() error {
	return errors.Join(c.f.Sync(), c.f.Close())
}
