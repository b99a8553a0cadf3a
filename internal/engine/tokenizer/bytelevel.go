package tokenizer

// byteRunes is GPT-2's bytes_to_unicode table: it gives every byte a
// printable rune so a token can be written as a JSON string without spaces or
// control characters. Printable Latin-1 bytes stand for themselves; the other
// 68 take the runes from U+0100 upward in byte order.
var byteRunes = func() (t [256]rune) {
	n := rune(0)
	for b := range 256 {
		if printableByte(byte(b)) {
			t[b] = rune(b)
		} else {
			t[b] = 256 + n
			n++
		}
	}
	return t
}()

func printableByte(b byte) bool {
	return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)
}

// byteOrder lists the bytes in the order their runes sort, which is the id
// order of the first 256 entries in GPT-2's vocabulary.
var byteOrder = func() (o [256]byte) {
	i := 0
	for b := range 256 {
		if printableByte(byte(b)) {
			o[i] = byte(b)
			i++
		}
	}
	for b := range 256 {
		if !printableByte(byte(b)) {
			o[i] = byte(b)
			i++
		}
	}
	return o
}()

// runeByte inverts byteRunes; runes outside the table report ok=false.
func runeByte(r rune) (byte, bool) {
	switch {
	case r < 256 && printableByte(byte(r)):
		return byte(r), true
	case r >= 256 && r < 256+68:
		return nonPrintable[r-256], true
	}
	return 0, false
}

var nonPrintable = func() (t [68]byte) {
	copy(t[:], byteOrder[188:])
	return t
}()

// byteLevel writes b in byte-level symbols, the form tokenizer.json uses.
func byteLevel(b []byte) string {
	rs := make([]rune, len(b))
	for i, c := range b {
		rs[i] = byteRunes[c]
	}
	return string(rs)
}

// fromByteLevel reverses byteLevel; ok is false if s holds a rune that is no
// byte's symbol.
func fromByteLevel(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		b, ok := runeByte(r)
		if !ok {
			return nil, false
		}
		out = append(out, b)
	}
	return out, true
}
