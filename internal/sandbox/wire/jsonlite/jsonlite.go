// Package jsonlite reads and writes the JSON of the sandbox protocol's
// messages without reflection.
//
// Why not encoding/json: the sandbox init is a fresh process per sandbox,
// and encoding/json's first use of a type builds its field cache by
// reflection. Measured in a cold process on the machines of
// docs/benchmarks.md, decoding the init's Config took ~215 µs the first
// time against ~14 µs warm, and the first command's request and replies
// another ~85 µs: a few per cent of creating a sandbox, paid by every one.
// The messages are small and fixed, so they decode and encode themselves
// through this package (see wire.Request.UnmarshalJSON); everything else,
// the host side included, may keep using encoding/json on the same bytes.
//
// Reader accepts any JSON text encoding/json accepts (nesting, as there, at
// most 10000 deep) and follows encoding/json where the two could differ for
// these messages: unknown keys and their values are
// skipped, null leaves a field at its zero value, integers must be integer
// literals that fit the field, and invalid UTF-8 or lone surrogates in
// strings become U+FFFD. Keys match exactly (encoding/json also accepts
// other letter cases). AppendString escapes as encoding/json does, so a
// message encodes to the same bytes either way.
package jsonlite

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Reader reads one JSON value from a byte slice.
type Reader struct {
	b     []byte
	i     int
	depth int
}

// maxDepth bounds how deeply objects and arrays nest, as encoding/json
// bounds it: deeper input is refused, not read into a deeper stack.
const maxDepth = 10000

// enter counts one more level of nesting; leave undoes it.
func (r *Reader) enter() error {
	if r.depth++; r.depth > maxDepth {
		return r.errorf("nested deeper than %d", maxDepth)
	}
	return nil
}

func (r *Reader) leave() { r.depth-- }

// NewReader reads the JSON text b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

func (r *Reader) errorf(format string, args ...any) error {
	return fmt.Errorf("json at offset %d: %s", r.i, fmt.Sprintf(format, args...))
}

func (r *Reader) space() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek returns the next byte that is not white space, 0 at the end.
func (r *Reader) peek() byte {
	r.space()
	if r.i < len(r.b) {
		return r.b[r.i]
	}
	return 0
}

func (r *Reader) literal(s string) error {
	if len(r.b)-r.i < len(s) || string(r.b[r.i:r.i+len(s)]) != s {
		return r.errorf("invalid literal, want %s", s)
	}
	r.i += len(s)
	return nil
}

// Null consumes a null and reports whether there was one.
func (r *Reader) Null() (bool, error) {
	if r.peek() != 'n' {
		return false, nil
	}
	return true, r.literal("null")
}

// End checks that nothing but white space follows the value read.
func (r *Reader) End() error {
	if r.space(); r.i < len(r.b) {
		return r.errorf("unexpected %q after the value", r.b[r.i])
	}
	return nil
}

// Object reads an object, calling field for each key with the reader
// positioned at its value, which field must read (or Skip). A null reads
// as an empty object.
func (r *Reader) Object(field func(key string) error) error {
	if null, err := r.Null(); null || err != nil {
		return err
	}
	if r.peek() != '{' {
		return r.errorf("want an object")
	}
	if err := r.enter(); err != nil {
		return err
	}
	defer r.leave()
	r.i++
	if r.peek() == '}' {
		r.i++
		return nil
	}
	for {
		if r.peek() != '"' {
			return r.errorf("want a key")
		}
		key, err := r.String()
		if err != nil {
			return err
		}
		if r.peek() != ':' {
			return r.errorf("want ':' after key %q", key)
		}
		r.i++
		if err := field(key); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return nil
		default:
			return r.errorf("want ',' or '}' in an object")
		}
	}
}

// Array reads an array, calling elem with the reader positioned at each
// element, which elem must read. It reports false for a null.
func (r *Reader) Array(elem func() error) (bool, error) {
	if null, err := r.Null(); null || err != nil {
		return false, err
	}
	if r.peek() != '[' {
		return false, r.errorf("want an array")
	}
	if err := r.enter(); err != nil {
		return false, err
	}
	defer r.leave()
	r.i++
	if r.peek() == ']' {
		r.i++
		return true, nil
	}
	for {
		if err := elem(); err != nil {
			return false, err
		}
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return true, nil
		default:
			return false, r.errorf("want ',' or ']' in an array")
		}
	}
}

// PtrTo reads an object into a new *T at *p with field, as Object calls
// it; null reads as nil.
func PtrTo[T any](r *Reader, p **T, field func(v *T, key string) error) error {
	if null, err := r.Null(); null || err != nil {
		*p = nil
		return err
	}
	v := new(T)
	*p = v
	return r.Object(func(key string) error { return field(v, key) })
}

// ArrayTo reads an array into *p, each element with elem; null reads as
// nil, [] as an empty slice.
func ArrayTo[T any](r *Reader, p *[]T, elem func(v *T) error) error {
	out := []T{}
	ok, err := r.Array(func() error {
		var v T
		err := elem(&v)
		out = append(out, v)
		return err
	})
	if !ok {
		out = nil
	}
	*p = out
	return err
}

// String reads a string; null reads as "".
func (r *Reader) String() (string, error) {
	if null, err := r.Null(); null || err != nil {
		return "", err
	}
	if r.peek() != '"' {
		return "", r.errorf("want a string")
	}
	r.i++
	start := r.i
	// The common case: no escapes, valid UTF-8.
	for r.i < len(r.b) {
		c := r.b[r.i]
		if c == '"' {
			s := r.b[start:r.i]
			r.i++
			if utf8.Valid(s) {
				return string(s), nil
			}
			r.i = start
			break
		}
		if c == '\\' || c < 0x20 {
			r.i = start
			break
		}
		r.i++
	}
	var out []byte
	for {
		if r.i >= len(r.b) {
			return "", r.errorf("unterminated string")
		}
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return string(out), nil
		case c < 0x20:
			return "", r.errorf("control character in a string")
		case c == '\\':
			if r.i+1 >= len(r.b) {
				return "", r.errorf("unterminated string")
			}
			e := r.b[r.i+1]
			r.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				ru, ok := r.hex4()
				if !ok {
					return "", r.errorf("invalid \\u escape")
				}
				if utf16.IsSurrogate(ru) {
					ru2 := rune(-1)
					if r.i+1 < len(r.b) && r.b[r.i] == '\\' && r.b[r.i+1] == 'u' {
						save := r.i
						r.i += 2
						if v, ok := r.hex4(); ok {
							ru2 = v
						}
						if dec := utf16.DecodeRune(ru, ru2); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							continue
						}
						r.i = save
					}
					ru = utf8.RuneError
				}
				out = utf8.AppendRune(out, ru)
			default:
				return "", r.errorf("invalid escape \\%c", e)
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			r.i++
		default:
			ru, n := utf8.DecodeRune(r.b[r.i:])
			out = utf8.AppendRune(out, ru)
			r.i += n
		}
	}
}

func (r *Reader) hex4() (rune, bool) {
	if len(r.b)-r.i < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(r.b[r.i:r.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	r.i += 4
	return rune(v), true
}

// number returns the next number token's text.
func (r *Reader) number() (string, error) {
	r.space()
	start := r.i
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	digits := func() int {
		n := 0
		for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	switch n := digits(); {
	case n == 0:
		return "", r.errorf("want a number")
	case n > 1 && r.b[r.i-n] == '0':
		return "", r.errorf("number with a leading zero")
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if digits() == 0 {
			return "", r.errorf("invalid number")
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			return "", r.errorf("invalid number")
		}
	}
	return string(r.b[start:r.i]), nil
}

// Int reads an integer that fits in bits bits; null reads as 0.
func (r *Reader) Int(bits int) (int64, error) {
	if null, err := r.Null(); null || err != nil {
		return 0, err
	}
	s, err := r.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, r.errorf("%s is not a %d-bit integer", s, bits)
	}
	return v, nil
}

// Uint reads an unsigned integer that fits in bits bits; null reads as 0.
func (r *Reader) Uint(bits int) (uint64, error) {
	if null, err := r.Null(); null || err != nil {
		return 0, err
	}
	s, err := r.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, r.errorf("%s is not an unsigned %d-bit integer", s, bits)
	}
	return v, nil
}

// Bool reads true or false; null reads as false.
func (r *Reader) Bool() (bool, error) {
	switch r.peek() {
	case 't':
		return true, r.literal("true")
	case 'f':
		return false, r.literal("false")
	case 'n':
		return false, r.literal("null")
	}
	return false, r.errorf("want true or false")
}

// Skip reads any value and discards it.
func (r *Reader) Skip() error {
	switch c := r.peek(); {
	case c == '{':
		return r.Object(func(string) error { return r.Skip() })
	case c == '[':
		_, err := r.Array(r.Skip)
		return err
	case c == '"':
		_, err := r.String()
		return err
	case c == 't' || c == 'f' || c == 'n':
		_, err := r.Bool()
		return err
	default:
		_, err := r.number()
		return err
	}
}

// Decode reads the JSON object b whole, calling field for each key as
// Reader.Object does; its errors name what was decoded.
func Decode(b []byte, what string, field func(r *Reader, key string) error) error {
	r := NewReader(b)
	err := r.Object(func(key string) error { return field(r, key) })
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return fmt.Errorf("decode %s: %w", what, err)
	}
	return nil
}

// StringTo reads a string into *p.
func (r *Reader) StringTo(p *string) (err error) { *p, err = r.String(); return err }

// StringsTo reads an array of strings into *p; null reads as nil.
func (r *Reader) StringsTo(p *[]string) error { return ArrayTo(r, p, r.StringTo) }

// BoolTo reads a boolean into *p.
func (r *Reader) BoolTo(p *bool) (err error) { *p, err = r.Bool(); return err }

// Int64To reads an integer into *p.
func (r *Reader) Int64To(p *int64) (err error) { *p, err = r.Int(64); return err }

// IntTo reads an integer into *p.
func (r *Reader) IntTo(p *int) error {
	v, err := r.Int(strconv.IntSize)
	*p = int(v)
	return err
}

// Uint32To reads an unsigned 32-bit integer into *p.
func (r *Reader) Uint32To(p *uint32) error {
	v, err := r.Uint(32)
	*p = uint32(v)
	return err
}

// Uint16To reads an unsigned 16-bit integer into *p.
func (r *Reader) Uint16To(p *uint16) error {
	v, err := r.Uint(16)
	*p = uint16(v)
	return err
}

// Uints32To reads an array of unsigned 32-bit integers into *p; null reads
// as nil.
func (r *Reader) Uints32To(p *[]uint32) error { return ArrayTo(r, p, r.Uint32To) }

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as encoding/json
// escapes it: HTML-safe (<, > and & as \u003c, \u003e, \u0026), U+2028
// and U+2029 escaped, invalid UTF-8 as \ufffd.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		ru, n := utf8.DecodeRuneInString(s[i:])
		if ru == utf8.RuneError && n == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += n
			start = i
			continue
		}
		if ru == '\u2028' || ru == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[ru&0xf])
			i += n
			start = i
			continue
		}
		i += n
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Object appends JSON objects whose fields are left out when empty, as
// encoding/json's omitempty does.
type Object struct {
	b     []byte
	empty bool
}

// NewObject starts an object at the end of b.
func NewObject(b []byte) *Object { return &Object{b: append(b, '{'), empty: true} }

// Key starts the value of field key.
func (o *Object) Key(key string) *Object {
	if !o.empty {
		o.b = append(o.b, ',')
	}
	o.empty = false
	o.b = AppendString(o.b, key)
	o.b = append(o.b, ':')
	return o
}

// Raw appends JSON text as the current value.
func (o *Object) Raw(v []byte) *Object { o.b = append(o.b, v...); return o }

// Int appends an integer value.
func (o *Object) Int(v int64) *Object { o.b = strconv.AppendInt(o.b, v, 10); return o }

// Uint appends an unsigned integer value.
func (o *Object) Uint(v uint64) *Object { o.b = strconv.AppendUint(o.b, v, 10); return o }

// Bool appends a boolean value.
func (o *Object) Bool(v bool) *Object { o.b = strconv.AppendBool(o.b, v); return o }

// String appends a string value.
func (o *Object) String(v string) *Object { o.b = AppendString(o.b, v); return o }

// Close ends the object and returns the bytes.
func (o *Object) Close() []byte { return append(o.b, '}') }
