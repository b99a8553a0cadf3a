package jsonlite

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// randString mixes the characters JSON escaping treats specially with
// plain text, multi-byte runes and invalid UTF-8.
func randString(r *rand.Rand) string {
	pieces := []string{"a", "Z", " ", "/", "\"", "\\", "<", ">", "&", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f",
		"é", "日本", "\u2028", "\u2029", "\ufffd", "😀", "\xff", "\xe2\x82", "\xed\xa0\x80", "\U0010ffff"}
	var sb strings.Builder
	for range r.IntN(12) {
		sb.WriteString(pieces[r.IntN(len(pieces))])
	}
	return sb.String()
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
	for c := range 256 {
		check(string([]byte{byte(c)}))
		check("x" + string(rune(c)) + "y")
	}
	for range 5000 {
		check(randString(r))
	}
}

func TestStringMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	inputs := []string{
		`""`, `"plain"`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9\u65e5"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`,
		`"\ud83dx"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`, `"\u0000"`, "\"\xff\"", "\"a\xe2\x82b\"", `null`,
		`"\x"`, `"\u12"`, `"\u12g4"`, "\"a\nb\"", `"unterminated`, `"`, `5`, `"a" "b"`, ` "spaced" `,
	}
	for range 2000 {
		b, _ := json.Marshal(randString(r))
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		var want string
		werr := json.Unmarshal([]byte(in), &want)
		rd := NewReader([]byte(in))
		got, gerr := rd.String()
		if gerr == nil {
			gerr = rd.End()
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: encoding/json err %v, jsonlite err %v", in, werr, gerr)
		}
		if werr == nil && got != want {
			t.Fatalf("%q: got %q, want %q", in, got, want)
		}
		if gerr == nil && !utf8.ValidString(got) {
			t.Fatalf("%q: decoded to invalid UTF-8 %q", in, got)
		}
	}
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		bits int
	}{
		{"0", 32}, {"-0", 32}, {"12", 32}, {"-12", 32}, {"2147483647", 32}, {"2147483648", 32}, {"-2147483648", 32},
		{"9223372036854775807", 64}, {"9223372036854775808", 64}, {"1.5", 64}, {"1e3", 64}, {"1E+3", 64}, {"01", 64},
		{"-", 64}, {"1.", 64}, {".5", 64}, {"null", 64}, {`"1"`, 64}, {"true", 64}, {" 7 ", 64}, {"1 2", 64},
	} {
		var want32 int32
		var want64 int64
		var werr error
		if tc.bits == 32 {
			werr = json.Unmarshal([]byte(tc.in), &want32)
			want64 = int64(want32)
		} else {
			werr = json.Unmarshal([]byte(tc.in), &want64)
		}
		rd := NewReader([]byte(tc.in))
		got, gerr := rd.Int(tc.bits)
		if gerr == nil {
			gerr = rd.End()
		}
		if (werr == nil) != (gerr == nil) || werr == nil && got != want64 {
			t.Errorf("Int(%q, %d) = %d, %v; encoding/json %d, %v", tc.in, tc.bits, got, gerr, want64, werr)
		}
		var wantU uint16
		werr = json.Unmarshal([]byte(tc.in), &wantU)
		rd = NewReader([]byte(tc.in))
		gotU, gerr := rd.Uint(16)
		if gerr == nil {
			gerr = rd.End()
		}
		if (werr == nil) != (gerr == nil) || werr == nil && gotU != uint64(wantU) {
			t.Errorf("Uint(%q, 16) = %d, %v; encoding/json %d, %v", tc.in, gotU, gerr, wantU, werr)
		}
	}
}

// TestSkip: unknown values of every shape are skipped whole, and broken
// ones are errors.
func TestSkip(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `{"a":[1,{"b":null},"x",true,false,-1.5e3]}`, ` [ [ ] , { } ] `, `"s"`, `12`, `null`,
	} {
		rd := NewReader([]byte(in))
		if err := rd.Skip(); err != nil || rd.End() != nil {
			t.Errorf("Skip(%s): %v", in, err)
		}
	}
	for _, in := range []string{`{`, `[1,]`, `{"a"}`, `{"a":}`, `{1:2}`, `[1 2]`, `tru`, `nul`, `{"a":1,}`, ``} {
		rd := NewReader([]byte(in))
		if err := rd.Skip(); err == nil && rd.End() == nil {
			t.Errorf("Skip(%q) accepted broken JSON", in)
		}
	}
}

// TestDepth: nesting is bounded as encoding/json bounds it, and deep input
// is refused without growing the stack with it.
func TestDepth(t *testing.T) {
	for _, tc := range []struct {
		depth int
		ok    bool
	}{{10000, true}, {10001, false}, {1 << 20, false}} {
		b := []byte(strings.Repeat("[", tc.depth) + strings.Repeat("]", tc.depth))
		rd := NewReader(b)
		err := rd.Skip()
		if err == nil {
			err = rd.End()
		}
		if (err == nil) != tc.ok || json.Valid(b) != tc.ok {
			t.Errorf("depth %d: jsonlite %v, json.Valid %v, want ok=%v", tc.depth, err, json.Valid(b), tc.ok)
		}
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",{"b":null}]}`, `"\ud83d\ude00"`, `[true,false]`, `-1.5e3`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rd := NewReader(b)
		err := rd.Skip()
		if err == nil {
			err = rd.End()
		}
		// jsonlite takes whole exactly what encoding/json takes.
		if valid := json.Valid(b); valid != (err == nil) {
			t.Fatalf("%q: json.Valid %v, jsonlite %v", b, valid, err)
		}
	})
}

// FuzzString: a string decodes as encoding/json decodes it, or fails
// where it fails.
func FuzzString(f *testing.F) {
	for _, s := range []string{`"a\u00e9\ud83d\ude00"`, `"\ud83d\u0041"`, "\"\xff\"", `"\/"`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want string
		werr := json.Unmarshal(b, &want)
		rd := NewReader(b)
		got, gerr := rd.String()
		if gerr == nil {
			gerr = rd.End()
		}
		if (werr == nil) != (gerr == nil) || werr == nil && got != want {
			t.Fatalf("%q: jsonlite %q, %v; encoding/json %q, %v", b, got, gerr, want, werr)
		}
	})
}
