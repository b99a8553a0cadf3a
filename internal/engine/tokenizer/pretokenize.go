package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// splitMode names a pre-tokenizer split pattern. Go's regexp has no
// lookahead, which all of them need for `\s+(?!\S)`, so each is a hand-written
// matcher that follows the regex's leftmost-first alternation.
type splitMode int

const (
	splitQwen2  splitMode = iota // \p{N}: one digit per piece
	splitLlama3                  // \p{N}{1,3}
	splitGPT2                    // ?\p{N}+, case-sensitive contractions
	splitNone                    // the whole text is one piece
)

// The patterns as they appear in tokenizer.json files.
const (
	patternGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	patternQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

func (m splitMode) pattern() string {
	switch m {
	case splitGPT2:
		return patternGPT2
	case splitLlama3:
		return patternLlama3
	case splitQwen2:
		return patternQwen2
	}
	return ""
}

// class is the regex-relevant category of one rune.
type class uint8

const (
	clOther class = iota // [^\s\p{L}\p{N}], and bytes that are not UTF-8
	clLetter
	clNumber
	clSpace // \s other than \r and \n
	clNewline
)

var asciiClass = func() (t [128]class) {
	for c := range 128 {
		r := rune(c)
		switch {
		case r == '\r' || r == '\n':
			t[c] = clNewline
		case unicode.IsSpace(r):
			t[c] = clSpace
		case unicode.IsLetter(r):
			t[c] = clLetter
		case unicode.IsNumber(r):
			t[c] = clNumber
		}
	}
	return t
}()

// at classifies the rune at s[i] and returns its width; past the end it
// returns width 0.
func at(s []byte, i int) (class, int) {
	if i >= len(s) {
		return clOther, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, w := utf8.DecodeRune(s[i:])
	switch {
	case r == utf8.RuneError && w == 1:
		return clOther, 1
	case unicode.IsSpace(r):
		return clSpace, w
	case unicode.IsLetter(r):
		return clLetter, w
	case unicode.IsNumber(r):
		return clNumber, w
	}
	return clOther, w
}

// run returns the end of the run of runes starting at i whose class
// satisfies ok, and how many runes it holds.
func run(s []byte, i int, ok func(class) bool) (end, n int) {
	for {
		c, w := at(s, i)
		if w == 0 || !ok(c) {
			return i, n
		}
		i += w
		n++
	}
}

func isLetter(c class) bool { return c == clLetter }
func isNumber(c class) bool { return c == clNumber }
func isOther(c class) bool  { return c == clOther }
func isSpace(c class) bool  { return c == clSpace || c == clNewline }
func isNewline(c class) bool {
	return c == clNewline
}

// next returns the length of the first piece of s; s must not be empty.
// Pieces partition s: they never overlap and never skip a byte.
func (m splitMode) next(s []byte) int {
	if m == splitNone {
		return len(s)
	}
	if n := contraction(s, m != splitGPT2); n > 0 {
		return n
	}
	if m == splitGPT2 {
		return nextGPT2(s)
	}
	return nextQwen(s, m == splitLlama3)
}

// contraction matches 's|'t|'re|'ve|'m|'ll|'d, ASCII case-folded when fold
// is set (the (?i:...) group in the Llama-3 and Qwen2 patterns).
func contraction(s []byte, fold bool) int {
	if len(s) < 2 || s[0] != '\'' {
		return 0
	}
	lower := func(c byte) byte {
		if fold && c >= 'A' && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	switch lower(s[1]) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v', 'l':
		want := map[byte]byte{'r': 'e', 'v': 'e', 'l': 'l'}[lower(s[1])]
		if len(s) >= 3 && lower(s[2]) == want {
			return 3
		}
	}
	return 0
}

// spaceTail matches `\s+(?!\S)|\s+` at the start of s, which begins with a
// whitespace rune: the whole run if it ends the text or is a single rune,
// otherwise the run less its last rune, which is left to join the next word.
func spaceTail(s []byte) int {
	end, n := run(s, 0, isSpace)
	if end == len(s) || n == 1 {
		return end
	}
	_, w := utf8.DecodeLastRune(s[:end])
	return end - w
}

// nextGPT2 follows `'s|...| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`.
func nextGPT2(s []byte) int {
	c, _ := at(s, 0)
	start := 0
	if s[0] == ' ' {
		// " ?" takes the space only if the next rune starts a word.
		if c1, _ := at(s, 1); c1 == clLetter || c1 == clNumber || c1 == clOther {
			start, c = 1, c1
		}
	}
	var end int
	switch c {
	case clLetter:
		end, _ = run(s, start, isLetter)
	case clNumber:
		end, _ = run(s, start, isNumber)
	case clOther:
		end, _ = run(s, start, isOther)
	default:
		return spaceTail(s)
	}
	return end
}

// nextQwen follows the Qwen2 pattern, or Llama-3's when digits3 is set:
// `[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1 or 1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`.
func nextQwen(s []byte, digits3 bool) int {
	c0, w0 := at(s, 0)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0 == clLetter {
		end, _ := run(s, 0, isLetter)
		return end
	}
	if c0 == clOther || c0 == clSpace {
		if c1, _ := at(s, w0); c1 == clLetter {
			end, _ := run(s, w0, isLetter)
			return end
		}
	}
	// \p{N} or \p{N}{1,3}
	if c0 == clNumber {
		if !digits3 {
			return w0
		}
		i := 0
		for k := 0; k < 3; k++ {
			c, w := at(s, i)
			if w == 0 || c != clNumber {
				break
			}
			i += w
		}
		return i
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	start := -1
	if c0 == clOther {
		start = 0
	} else if s[0] == ' ' {
		if c1, _ := at(s, 1); c1 == clOther {
			start = 1
		}
	}
	if start >= 0 {
		end, _ := run(s, start, isOther)
		end, _ = run(s, end, isNewline)
		return end
	}
	// `\s*[\r\n]+`: up to and including the last newline in the space run.
	end, _ := run(s, 0, isSpace)
	last := -1
	for i := 0; i < end; i++ {
		if s[i] == '\r' || s[i] == '\n' {
			last = i
		}
	}
	if last >= 0 {
		return last + 1
	}
	return spaceTail(s)
}
