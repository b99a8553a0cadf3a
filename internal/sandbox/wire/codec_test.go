package wire

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/sandbox/wire/jsonlite/jsonlitetest"
)

// The types without their codec methods, for encoding/json to handle as
// the reference.
type (
	plainResponse Response
	plainExit     Exit
	plainWinSize  WinSize
	plainRequest  Request // its TTY still decodes through WinSize's method, tested apart
)

func randText(r *rand.Rand) string {
	pieces := []string{"a", "/", " ", "\"", "\\", "<", "&", "\n", "\x01", "é", "日本", "\u2028", "😀", "\xff", "PATH=/usr/bin"}
	var sb strings.Builder
	for range r.IntN(6) {
		sb.WriteString(pieces[r.IntN(len(pieces))])
	}
	return sb.String()
}

func randTexts(r *rand.Rand) []string {
	switch r.IntN(3) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, 1+r.IntN(4))
	for i := range out {
		out[i] = randText(r)
	}
	return out
}

func randRequest(r *rand.Rand) Request {
	q := Request{Op: randText(r), Args: randTexts(r), Env: randTexts(r), Dir: randText(r), UID: r.Uint32(), GID: r.Uint32() >> r.IntN(32),
		TimeoutMS: r.Int64() >> r.IntN(64), Path: randText(r), Mode: r.Uint32(), PID: r.IntN(1 << 22), Signal: r.IntN(64) - 1}
	if r.IntN(2) == 0 {
		q.Groups = []uint32{r.Uint32(), 27}
	}
	if r.IntN(2) == 0 {
		q.TTY = &WinSize{Rows: uint16(r.IntN(1 << 16)), Cols: uint16(r.IntN(1 << 16))}
	}
	return q
}

// perturb re-encodes a JSON object with unknown fields of every shape,
// nulls for absent optional fields and indentation.
func perturb(t *testing.T, b []byte, r *rand.Rand) []byte {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["zz_unknown"] = map[string]any{"a": []any{1.5, "x", nil, true, map[string]any{}}}
	m["another"] = -3e10
	for _, k := range []string{"tty", "groups", "env", "session", "binds"} {
		if _, ok := m[k]; !ok && r.IntN(2) == 0 {
			m[k] = nil
		}
	}
	out, err := json.MarshalIndent(m, " ", "\t")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRequestDecodesAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 3000 {
		b, err := json.Marshal(plainRequest(randRequest(r)))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			b = perturb(t, b, r)
		}
		var want plainRequest
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		var got Request
		if err := got.UnmarshalJSON(b); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(got, Request(want)) {
			t.Fatalf("%s:\ngot  %+v\nwant %+v", b, got, want)
		}
	}
	for _, bad := range []string{`{"op":1}`, `{"uid":-1}`, `{"uid":4294967296}`, `{"args":"x"}`, `{"tty":{"rows":70000}}`, `{"op":"exec"} x`, `[]`, `{"op":"exec",}`} {
		var q Request
		if err := q.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%s: decoded without error to %+v", bad, q)
		}
		var p plainRequest
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("%s: encoding/json accepts it, so should the codec", bad)
		}
	}
}

func TestWinSizeDecodesAsEncodingJSON(t *testing.T) {
	for _, in := range []string{`{"rows":24,"cols":80}`, `{"cols":1}`, `{}`, `null`, `{"rows":65535,"x":[1]}`, `{"rows":65536}`, `{"rows":-1}`, `{"rows":"1"}`} {
		var want plainWinSize
		werr := json.Unmarshal([]byte(in), &want)
		var got WinSize
		gerr := got.UnmarshalJSON([]byte(in))
		if (werr == nil) != (gerr == nil) || werr == nil && got != WinSize(want) {
			t.Errorf("%s: got %+v, %v; encoding/json %+v, %v", in, got, gerr, want, werr)
		}
	}
}

func TestResponseAndExitEncodeAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 3000 {
		p := Response{PID: r.IntN(3) * r.IntN(1<<22), Size: r.Int64() >> r.IntN(64)}
		if r.IntN(3) == 0 {
			p.Error = &Error{Code: randText(r), Message: randText(r)}
		}
		for range r.IntN(4) {
			p.Files = append(p.Files, FileInfo{Name: randText(r), Size: r.Int64() >> r.IntN(64), Mode: r.Uint32(), ModTime: r.Int64() - r.Int64(), Link: randText(r)})
		}
		if r.IntN(5) == 0 {
			p.Files = []FileInfo{}
		}
		want, err := json.Marshal(plainResponse(p))
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.MarshalJSON()
		if err != nil || string(got) != string(want) {
			t.Fatalf("Response %+v:\ngot  %s (%v)\nwant %s", p, got, err, want)
		}
		x := Exit{Code: r.IntN(512) - 256, Signal: r.IntN(3) * r.IntN(65), TimedOut: r.IntN(2) == 0}
		want, _ = json.Marshal(plainExit(x))
		if got, err := x.MarshalJSON(); err != nil || string(got) != string(want) {
			t.Fatalf("Exit %+v: got %s (%v), want %s", x, got, err, want)
		}
	}
}

// TestCodecsCoverEveryField: with every field set, the codecs agree with
// encoding/json, so a field added to a message and forgotten in its codec
// fails here.
func TestCodecsCoverEveryField(t *testing.T) {
	var q plainRequest
	jsonlitetest.Fill(&q)
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	var got Request
	if err := got.UnmarshalJSON(b); err != nil || !reflect.DeepEqual(got, Request(q)) {
		t.Errorf("request %s:\ngot  %+v (%v)\nwant %+v", b, got, err, q)
	}
	var w plainWinSize
	jsonlitetest.Fill(&w)
	b, _ = json.Marshal(w)
	var gw WinSize
	if err := gw.UnmarshalJSON(b); err != nil || gw != WinSize(w) {
		t.Errorf("window size %s: got %+v (%v)", b, gw, err)
	}
	var p plainResponse
	jsonlitetest.Fill(&p)
	want, _ := json.Marshal(p)
	if b, err := Response(p).MarshalJSON(); err != nil || string(b) != string(want) {
		t.Errorf("response:\ngot  %s (%v)\nwant %s", b, err, want)
	}
	var x plainExit
	jsonlitetest.Fill(&x)
	want, _ = json.Marshal(x)
	if b, err := Exit(x).MarshalJSON(); err != nil || string(b) != string(want) {
		t.Errorf("exit: got %s (%v), want %s", b, err, want)
	}
}
