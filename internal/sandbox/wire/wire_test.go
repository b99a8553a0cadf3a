package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

type loop struct{ bytes.Buffer }

func TestFrameRoundTrip(t *testing.T) {
	cases := []struct {
		name    string
		typ     byte
		payload []byte
	}{
		{"empty", TypeStdinEOF, nil},
		{"small", TypeStdout, []byte("hello\n")},
		{"chunk", TypeData, bytes.Repeat([]byte{0xff}, ChunkSize)},
		{"max", TypeData, make([]byte, MaxFrame)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf loop
			conn := NewConn(&buf)
			if err := conn.Write(c.typ, c.payload); err != nil {
				t.Fatal(err)
			}
			if got := buf.Len(); got != 5+len(c.payload) {
				t.Fatalf("frame is %d bytes, want %d", got, 5+len(c.payload))
			}
			typ, p, err := conn.Read()
			if err != nil || typ != c.typ || !bytes.Equal(p, c.payload) {
				t.Fatalf("read %q %d bytes %v", typ, len(p), err)
			}
		})
	}
}

func TestFrameErrors(t *testing.T) {
	var buf loop
	conn := NewConn(&buf)
	if err := conn.Write(TypeData, make([]byte, MaxFrame+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("oversized write: %v", err)
	}
	cases := []struct {
		name string
		raw  []byte
		want error
	}{
		{"truncated header", []byte{0, 0}, io.ErrUnexpectedEOF},
		{"truncated payload", []byte{0, 0, 0, 5, 'O', 'a'}, io.ErrUnexpectedEOF},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 'O'}, ErrFrameTooLarge},
		{"eof", nil, io.EOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := NewConn(bytes.NewBuffer(c.raw)).Read()
			if !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestStream(t *testing.T) {
	var buf loop
	conn := NewConn(&buf)
	data := bytes.Repeat([]byte("0123456789"), 10000)
	if err := conn.WriteStream(TypeData, TypeDataEnd, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for {
		typ, p, err := conn.Read()
		if err != nil {
			t.Fatal(err)
		}
		if typ == TypeDataEnd {
			break
		}
		if len(p) > ChunkSize {
			t.Fatalf("chunk of %d bytes", len(p))
		}
		got = append(got, p...)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("stream corrupted: %d bytes, want %d", len(got), len(data))
	}
}

// FuzzRead feeds arbitrary bytes to the frame reader: it must never panic,
// and every frame it accepts must re-encode to the same bytes.
func FuzzRead(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 'i'})
	f.Add([]byte{0, 0, 0, 3, 'O', 'h', 'i', 0, 0, 0, 1, 'X'})
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, raw []byte) {
		conn := NewConn(bytes.NewBuffer(raw))
		var re loop
		out := NewConn(&re)
		consumed := 0
		for {
			typ, p, err := conn.Read()
			if err != nil {
				break
			}
			consumed += 5 + len(p)
			if err := out.Write(typ, p); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(re.Bytes(), raw[:consumed]) {
			t.Fatalf("re-encoded frames differ from input")
		}
	})
}
