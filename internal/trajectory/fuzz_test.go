package trajectory

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzReader: no input makes the Reader panic or loop, and every record it
// accepts writes and reads back to an equal value.
func FuzzReader(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "example.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add(golden[:len(golden)/2])
	f.Add([]byte(`{"version":2}` + "\n"))
	f.Add([]byte(`{"version":1,"task_id":"t","status":"timeout","error":"e","started":"2025-01-01T00:00:00+00:00","finished":"2025-01-01T01:00:00.5-07:00"}`))
	f.Add([]byte("\n\n  \r\n{\"version\":1,\"turns\":[{}]}\n{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		for range bytes.Count(data, []byte("\n")) + 2 {
			tr, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				continue
			}
			var b bytes.Buffer
			if err := NewWriter(&b).Write(tr); err != nil {
				t.Fatalf("a record that read back does not write: %v", err)
			}
			again, err := NewReader(&b).Next()
			if err != nil {
				t.Fatalf("re-read: %v\n%s", err, b.Bytes())
			}
			if !reflect.DeepEqual(tr, again) {
				t.Fatalf("re-read differs:\n%#v\n%#v", tr, again)
			}
		}
		if _, err := r.Next(); err == nil {
			t.Fatal("more records than lines")
		}
	})
}
