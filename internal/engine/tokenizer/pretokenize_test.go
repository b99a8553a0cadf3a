package tokenizer

import (
	"bytes"
	"slices"
	"testing"
)

func pieces(m splitMode, s string) []string {
	var out []string
	for b := []byte(s); len(b) > 0; {
		n := m.next(b)
		out = append(out, string(b[:n]))
		b = b[n:]
	}
	return out
}

func TestSplit(t *testing.T) {
	const code = "func (s *T) X() {\n\treturn nil\n}"
	tests := []struct {
		name, in          string
		qwen, llama, gpt2 []string // llama nil: same as qwen
	}{
		{"words", "Hello world", []string{"Hello", " world"}, nil, []string{"Hello", " world"}},
		{"leading spaces", "  leading", []string{" ", " leading"}, nil, []string{" ", " leading"}},
		{"trailing spaces", "trailing  ", []string{"trailing", "  "}, nil, []string{"trailing", "  "}},
		{"only spaces", "   ", []string{"   "}, nil, []string{"   "}},
		{"newline run then tab", "a\n\n\tb", []string{"a", "\n\n", "\tb"}, nil, []string{"a", "\n\n", "\t", "b"}},
		{"spaces then newline at end", "x  \n", []string{"x", "  \n"}, nil, []string{"x", "  \n"}},
		{"crlf between spaces", "x \r\n y", []string{"x", " \r\n", " y"}, nil, []string{"x", " \r\n", " y"}},
		{"numbers", "x = 12345",
			[]string{"x", " =", " ", "1", "2", "3", "4", "5"},
			[]string{"x", " =", " ", "123", "45"},
			[]string{"x", " =", " 12345"}},
		{"contractions", "don't I'LL 'sam",
			[]string{"don", "'t", " I", "'LL", " '", "sam"}, nil,
			[]string{"don", "'t", " I", "'", "LL", " '", "sam"}},
		{"contraction first", "'sam", []string{"'s", "am"}, nil, []string{"'s", "am"}},
		{"punctuation then newlines", "!!!\n\nx", []string{"!!!\n\n", "x"}, nil, []string{"!!!", "\n", "\n", "x"}},
		{"code", code,
			[]string{"func", " (", "s", " *", "T", ")", " X", "()", " {\n", "\treturn", " nil", "\n", "}"}, nil,
			[]string{"func", " (", "s", " *", "T", ")", " X", "()", " {", "\n", "\t", "return", " nil", "\n", "}"}},
		{"mixed scripts", "héllo世界 мир٣", []string{"héllo世界", " мир", "٣"}, nil, []string{"héllo世界", " мир", "٣"}},
		{"punct before letters", "(x", []string{"(x"}, nil, []string{"(", "x"}},
		{"invalid utf-8", "a\xffb\xfe", []string{"a", "\xffb", "\xfe"}, nil, []string{"a", "\xff", "b", "\xfe"}},
		{"nbsp", "a\u00a0b", []string{"a", "\u00a0b"}, nil, []string{"a", "\u00a0", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			llama := tc.llama
			if llama == nil {
				llama = tc.qwen
			}
			for _, c := range []struct {
				m    splitMode
				want []string
			}{{splitQwen2, tc.qwen}, {splitLlama3, llama}, {splitGPT2, tc.gpt2}} {
				if got := pieces(c.m, tc.in); !slices.Equal(got, c.want) {
					t.Errorf("%s: split(%q) = %q, want %q", c.m.pattern()[:12], tc.in, got, c.want)
				}
			}
		})
	}
}

// checkPartition fails if the pieces of s do not concatenate back to s.
func checkPartition(t *testing.T, s []byte) {
	t.Helper()
	for _, m := range []splitMode{splitQwen2, splitLlama3, splitGPT2, splitNone} {
		var got []byte
		for b := s; len(b) > 0; {
			n := m.next(b)
			if n <= 0 || n > len(b) {
				t.Fatalf("mode %d: next(%q) = %d", m, b, n)
			}
			got = append(got, b[:n]...)
			b = b[n:]
		}
		if !bytes.Equal(got, s) {
			t.Fatalf("mode %d: pieces of %q join to %q", m, s, got)
		}
	}
}
