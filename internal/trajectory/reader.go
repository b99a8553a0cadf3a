package trajectory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

var (
	// ErrTruncated marks a record cut short, as a crash during a write
	// leaves it. The records around it are intact.
	ErrTruncated = errors.New("record cut short")
	// ErrUnsupportedVersion marks a record written with a newer schema
	// version than this package reads.
	ErrUnsupportedVersion = errors.New("unsupported trajectory version")
)

// Reader reads trajectories from JSON Lines. It is not safe for concurrent
// use.
type Reader struct {
	lines *lineScanner
}

// NewReader returns a Reader that reads from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{lines: newLineScanner(r)}
}

// Next returns the next record, validated and with its times in UTC, or
// io.EOF after the last. Errors name the line. After an error about one
// record (ErrTruncated, ErrUnsupportedVersion, bad JSON, a record that does
// not validate), Next goes on with the next line; after a read error or a
// line longer than MaxLineBytes it returns that error again.
func (r *Reader) Next() (*Trajectory, error) {
	line, n, tail, err := r.lines.next()
	if err != nil {
		return nil, err
	}
	t := new(Trajectory)
	if err := decode(line, tail, t); err != nil {
		return nil, fmt.Errorf("line %d: %w", n, err)
	}
	t.inUTC()
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n, err)
	}
	return t, nil
}

// Line is the number (from 1) of the line of the record Next last returned
// or failed on.
func (r *Reader) Line() int { return r.lines.n }

// decode unmarshals line into v. tail says that line is the input's last
// and lacks its newline: invalid JSON there is a record cut short, as is a
// line anywhere that is the beginning of a JSON value.
func decode(line []byte, tail bool, v interface{ version() int }) error {
	err := json.Unmarshal(line, v)
	if err == nil {
		if got := v.version(); got > Version {
			return unsupported(got)
		}
		return nil
	}
	var probe keyFields
	if json.Unmarshal(line, &probe) == nil && probe.Version > Version {
		return unsupported(probe.Version)
	}
	if cutShort(line) || (tail && !json.Valid(line)) {
		return fmt.Errorf("%w (a crash during a write?): %v", ErrTruncated, err)
	}
	return err
}

func unsupported(v int) error {
	return fmt.Errorf("%w: version %d, this reader reads up to %d", ErrUnsupportedVersion, v, Version)
}

// cutShort reports whether line is the beginning of a JSON value that
// ends too soon.
func cutShort(line []byte) bool {
	err := json.NewDecoder(bytes.NewReader(line)).Decode(new(json.RawMessage))
	return errors.Is(err, io.ErrUnexpectedEOF)
}

func (t *Trajectory) version() int { return t.Version }

// keyFields is the part of a record that Finished needs.
type keyFields struct {
	Version int    `json:"version"`
	TaskID  string `json:"task_id"`
	Sample  int    `json:"sample"`
}

func (k *keyFields) version() int { return k.Version }

// ReadFile reads every record in the file at path. Records cut short by a
// crash are skipped; then the good records come back with an error that
// wraps ErrTruncated. On any other error ReadFile returns no records.
func ReadFile(path string) ([]*Trajectory, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trajectories: %w", err)
	}
	defer f.Close()
	var out []*Trajectory
	var torn []error
	r := NewReader(f)
	for {
		t, err := r.Next()
		switch {
		case err == io.EOF:
			if len(torn) > 0 {
				return out, fmt.Errorf("read trajectories %s: %w", path, errors.Join(torn...))
			}
			return out, nil
		case errors.Is(err, ErrTruncated):
			torn = append(torn, err)
		case err != nil:
			return nil, fmt.Errorf("read trajectories %s: %w", path, err)
		default:
			out = append(out, t)
		}
	}
}

// Finished returns the keys ("task_id/sample", see Key) of every episode
// recorded in the file at path, whatever its status, so a resumed run can
// skip them. A missing file has none. Records cut short are ignored; other
// records are checked for their version but not otherwise validated.
func Finished(path string) (map[string]bool, error) {
	done := make(map[string]bool)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finished episodes: %w", err)
	}
	defer f.Close()
	lines := newLineScanner(f)
	for {
		line, n, tail, err := lines.next()
		if err == io.EOF {
			return done, nil
		}
		if err != nil {
			return nil, fmt.Errorf("finished episodes in %s: %w", path, err)
		}
		var k keyFields
		if err := decode(line, tail, &k); errors.Is(err, ErrTruncated) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("finished episodes in %s: line %d: %w", path, n, err)
		}
		done[Key(k.TaskID, k.Sample)] = true
	}
}

// lineScanner splits input into lines, skipping blank ones, and says
// whether the last line lacked its newline.
type lineScanner struct {
	s       *bufio.Scanner
	n       int  // number of the line last returned
	partial bool // the line last returned ended at EOF without a newline
	err     error
}

func newLineScanner(r io.Reader) *lineScanner {
	ls := &lineScanner{s: bufio.NewScanner(r)}
	ls.s.Buffer(make([]byte, 0, 64<<10), MaxLineBytes+1)
	ls.s.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			ls.partial = true
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	return ls
}

// next returns the next non-blank line, its number, and whether it is a
// last line without a newline.
func (ls *lineScanner) next() (line []byte, n int, tail bool, err error) {
	if ls.err != nil {
		return nil, 0, false, ls.err
	}
	for ls.s.Scan() {
		ls.n++
		if line := ls.s.Bytes(); len(bytes.TrimSpace(line)) > 0 {
			return line, ls.n, ls.partial, nil
		}
	}
	switch err := ls.s.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		ls.err = fmt.Errorf("line %d: longer than %d bytes", ls.n+1, MaxLineBytes)
	case err != nil:
		ls.err = fmt.Errorf("line %d: %w", ls.n+1, err)
	default:
		ls.err = io.EOF
	}
	return nil, 0, false, ls.err
}
