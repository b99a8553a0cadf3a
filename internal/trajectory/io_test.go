package trajectory

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// inUTC returns a deep-enough copy of t with its times in UTC, as a Reader
// returns them.
func inUTC(t *Trajectory) *Trajectory {
	c := *t
	c.Turns = append([]Turn(nil), t.Turns...)
	c.inUTC()
	return &c
}

func writeAll(t *testing.T, trs ...*Trajectory) []byte {
	t.Helper()
	var b bytes.Buffer
	w := NewWriter(&b)
	for _, tr := range trs {
		if err := w.Write(tr); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func readAll(r io.Reader) ([]*Trajectory, error) {
	var out []*Trajectory
	rd := NewReader(r)
	for {
		tr, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, tr)
	}
}

func TestRoundTrip(t *testing.T) {
	zone := time.FixedZone("CEST", 2*60*60)
	local := example()
	local.Started = time.Now() // with a monotonic reading
	local.Finished = local.Started.Add(time.Second).In(zone)
	local.Turns[0].Started = local.Started.In(zone)

	odd := failed()
	odd.Error = "line one\nline two \"quoted\" <html> & \x00 \u2028 ünïcode 🚀"
	odd.Metadata = map[string]string{"": "empty key", "k": ""}
	odd.Flags = []Flag{}
	odd.Turns = []Turn{{Index: 0, Messages: []Message{{Role: "assistant"}}, Observations: []Observation{{Tool: "x", ExitCode: intp(137)}}}}
	odd.Reward = math.Copysign(0, -1)

	big := example()
	big.Turns[0].PromptTokenIDs = make([]int32, 300_000) // a line far over bufio's default 64 KiB
	for i := range big.Turns[0].PromptTokenIDs {
		big.Turns[0].PromptTokenIDs[i] = int32(i * 7919)
	}
	big.Turns[1].PrefixBreak = true

	tests := []struct {
		name string
		tr   *Trajectory
	}{
		{"example", example()},
		{"infra error", failed()},
		{"local times with monotonic clock", local},
		{"awkward strings and empty collections", odd},
		{"long token lists", big},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := writeAll(t, tt.tr, tt.tr)
			if n := bytes.Count(data, []byte("\n")); n != 2 || data[len(data)-1] != '\n' {
				t.Fatalf("wrote %d newlines for 2 records; want each record on one line", n)
			}
			got, err := readAll(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			want := inUTC(tt.tr)
			if len(got) != 2 || !reflect.DeepEqual(got[0], want) || !reflect.DeepEqual(got[1], want) {
				t.Fatalf("read back\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestWriteDoesNotModify(t *testing.T) {
	tr := example()
	zone := time.FixedZone("X", 3600)
	tr.Started = tr.Started.In(zone)
	tr.Turns[0].Started = tr.Turns[0].Started.In(zone)
	writeAll(t, tr)
	if tr.Started.Location() != zone || tr.Turns[0].Started.Location() != zone {
		t.Error("Write changed the caller's times")
	}
}

func TestWriteRefusesInvalid(t *testing.T) {
	var b bytes.Buffer
	tr := example()
	tr.Status = StatusInfraError
	err := NewWriter(&b).Write(tr)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "fix-date-parse/3") {
		t.Errorf("Write: %v, want ErrInvalid naming the episode", err)
	}
	if b.Len() != 0 {
		t.Errorf("wrote %d bytes for an invalid record", b.Len())
	}
}

func TestGolden(t *testing.T) {
	golden := filepath.Join("testdata", "example.jsonl")
	got := writeAll(t, example(), failed())
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the wire format changed; if that is intended, update docs/trajectory-format.md and run go test -update.\ngot:\n%s\nwant:\n%s", got, want)
	}
	trs, err := ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if len(trs) != 2 || !reflect.DeepEqual(trs[0], example()) || !reflect.DeepEqual(trs[1], failed()) {
		t.Errorf("golden file reads back as %+v", trs)
	}
}

// TestDocExample keeps the example in the format's specification exact.
func TestDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "trajectory-format.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(doc, []byte("```jsonl\n"))
	block, _, ok2 := bytes.Cut(rest, []byte("```"))
	if !ok || !ok2 {
		t.Fatal("no ```jsonl block in docs/trajectory-format.md")
	}
	trs, err := readAll(bytes.NewReader(block))
	if err != nil || len(trs) == 0 {
		t.Fatalf("example in docs/trajectory-format.md: %d records, %v", len(trs), err)
	}
	if again := writeAll(t, trs...); !bytes.Equal(again, block) {
		t.Errorf("the example in docs/trajectory-format.md is not as a Writer writes it; a Writer writes:\n%s", again)
	}
}

func TestConcurrentWriters(t *testing.T) {
	const goroutines, perGoroutine = 16, 25
	// Records of 40-80 KB, well over a pipe's atomic size and bufio's
	// buffers, so a record split over several writes would show.
	content := func(g int) string { return strings.Repeat(fmt.Sprintf("%x", g), 40_000) }
	record := func(g, i int) *Trajectory {
		tr := example()
		tr.TaskID = fmt.Sprintf("task-%d", g)
		tr.Sample = i
		tr.Turns[0].Messages[1].Content = content(g)
		return tr
	}
	tests := []struct {
		name   string
		shared bool // one Writer for all goroutines, or one OpenFile each
	}{
		{"one shared writer", true},
		{"a writer per goroutine", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runs", "r1", "trajectories.jsonl")
			var shared *Writer
			if tt.shared {
				w, c, err := OpenFile(path)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				shared = w
			}
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for g := range goroutines {
				wg.Go(func() {
					w := shared
					if w == nil {
						ow, c, err := OpenFile(path)
						if err != nil {
							errs <- err
							return
						}
						defer c.Close()
						w = ow
					}
					for i := range perGoroutine {
						if err := w.Write(record(g, i)); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			trs, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(trs) != goroutines*perGoroutine {
				t.Fatalf("read %d records, want %d", len(trs), goroutines*perGoroutine)
			}
			done, err := Finished(path)
			if err != nil {
				t.Fatal(err)
			}
			for g := range goroutines {
				for i := range perGoroutine {
					if !done[Key(fmt.Sprintf("task-%d", g), i)] {
						t.Fatalf("task-%d/%d missing", g, i)
					}
				}
			}
			for _, tr := range trs {
				var g int
				fmt.Sscanf(tr.TaskID, "task-%d", &g)
				if tr.Turns[0].Messages[1].Content != content(g) {
					t.Fatalf("%s: content is not what goroutine %d wrote", tr.Key(), g)
				}
			}
		})
	}
}

func TestTruncatedTail(t *testing.T) {
	a, b, c := example(), example(), example()
	a.Sample, b.Sample, c.Sample = 0, 1, 2
	whole := writeAll(t, a, b, c)
	lastStart := bytes.LastIndexByte(whole[:len(whole)-1], '\n') + 1
	tests := []struct {
		name string
		keep int // bytes of the last record kept
	}{
		{"one byte", 1},
		{"mid token list", 200},
		{"all but the closing brace", len(whole) - lastStart - 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			if err := os.WriteFile(path, whole[:lastStart+tt.keep], 0o644); err != nil {
				t.Fatal(err)
			}
			trs, err := ReadFile(path)
			if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "line 3") {
				t.Fatalf("ReadFile: %v, want ErrTruncated at line 3", err)
			}
			if len(trs) != 2 || !reflect.DeepEqual(trs[1], b) {
				t.Fatalf("ReadFile returned %d records, want the 2 good ones", len(trs))
			}
			done, err := Finished(path)
			if err != nil || !reflect.DeepEqual(done, map[string]bool{"fix-date-parse/0": true, "fix-date-parse/1": true}) {
				t.Fatalf("Finished = %v, %v", done, err)
			}

			// Resume: append the cut episode again.
			w, closer, err := OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(c); err != nil {
				t.Fatal(err)
			}
			if err := closer.Close(); err != nil {
				t.Fatal(err)
			}
			trs, err = ReadFile(path)
			if !errors.Is(err, ErrTruncated) || len(trs) != 3 || !reflect.DeepEqual(trs[2], c) {
				t.Fatalf("after resuming: %d records, %v; want 3 and ErrTruncated for the cut line", len(trs), err)
			}
			if done, err := Finished(path); err != nil || len(done) != 3 {
				t.Fatalf("Finished after resuming = %v, %v", done, err)
			}
		})
	}
}

func TestTailWithoutNewline(t *testing.T) {
	data := writeAll(t, example())
	trs, err := readAll(bytes.NewReader(data[:len(data)-1]))
	if err != nil || len(trs) != 1 {
		t.Fatalf("a whole record without its newline: %d records, %v", len(trs), err)
	}
	_, err = readAll(strings.NewReader(`{"version":1,"sample":"three"}`))
	if err == nil || errors.Is(err, ErrTruncated) {
		t.Fatalf("whole JSON of the wrong shape at the end: %v, want an error other than ErrTruncated", err)
	}
	_, err = readAll(strings.NewReader(`{"version":1,"sample":3}]`))
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("invalid JSON at the end without a newline: %v, want ErrTruncated", err)
	}
}

func TestReaderErrors(t *testing.T) {
	good := string(writeAll(t, example()))
	invalid := example()
	invalid.Version = 1
	invalid.Status = "weird"
	tests := []struct {
		name  string
		line  string
		is    error
		wants []string
	}{
		{"not JSON", "{\"version\":1,]\n", nil, []string{"line 3", "invalid character"}},
		{"wrong type", `{"version":1,"sample":"three"}` + "\n", nil, []string{"line 3", "sample"}},
		{"invalid record", `{"version":1,"task_id":"x","status":"weird","started":"2025-01-01T00:00:00Z","finished":"2025-01-01T00:00:00Z"}` + "\n",
			ErrInvalid, []string{"line 3", `unknown status "weird"`}},
		{"newer version", `{"version":7,"task_id":"x","status":"ok"}` + "\n", ErrUnsupportedVersion, []string{"line 3", "version 7", "up to 1"}},
		{"newer version with changed field types", `{"version":2,"turns":"elsewhere","reward":{"v":1}}` + "\n", ErrUnsupportedVersion, []string{"version 2"}},
		{"cut-short record mid-file", `{"version":1,"task_id":"x","turns":[{"prompt_token_ids":[1,2` + "\n", ErrTruncated, []string{"line 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(good + "\n" + tt.line + good))
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
			_, err := r.Next()
			if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("Next: %v, want %v", err, tt.is)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Next: %v, want it to mention %q", err, w)
				}
			}
			if tr, err := r.Next(); err != nil || tr.Sample != 3 {
				t.Fatalf("the record after a bad line: %v, %v", tr, err)
			}
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("at the end: %v, want io.EOF", err)
			}
		})
	}
}

func TestFinishedRefusesNewerVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(`{"version":2,"task_id":"x","sample":0}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Finished(path); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("Finished: %v, want ErrUnsupportedVersion", err)
	}
	if _, err := ReadFile(path); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("ReadFile: %v, want ErrUnsupportedVersion", err)
	}
}

func TestFinishedMissingFile(t *testing.T) {
	done, err := Finished(filepath.Join(t.TempDir(), "none.jsonl"))
	if err != nil || len(done) != 0 {
		t.Errorf("Finished on a missing file = %v, %v; want empty", done, err)
	}
}

// endless yields 'x' forever.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestLineTooLong(t *testing.T) {
	r := NewReader(io.MultiReader(strings.NewReader(string(writeAll(t, example()))), endless{}))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the error sticks
		if _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "line 2: longer than 67108864 bytes") {
			t.Fatalf("Next: %v, want line 2 too long", err)
		}
	}
}

// flaky accepts the first n bytes of its first write, then fails it.
type flaky struct {
	bytes.Buffer
	n      int
	failed bool
}

func (f *flaky) Write(p []byte) (int, error) {
	if !f.failed {
		f.failed = true
		f.Buffer.Write(p[:f.n])
		return f.n, errors.New("disk full")
	}
	return f.Buffer.Write(p)
}

func TestWriteAfterPartialWrite(t *testing.T) {
	f := &flaky{n: 50}
	w := NewWriter(f)
	if err := w.Write(example()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Write: %v, want disk full", err)
	}
	if err := w.Write(failed()); err != nil {
		t.Fatal(err)
	}
	r := NewReader(&f.Buffer)
	if _, err := r.Next(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("the partly written record: %v, want ErrTruncated", err)
	}
	if tr, err := r.Next(); err != nil || !reflect.DeepEqual(tr, failed()) {
		t.Fatalf("the next record: %v, %v", tr, err)
	}
}
