package tokenizer

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Default special tokens of verisim's chat template.
const (
	EndOfText = "<|endoftext|>"
	ImStart   = "<|im_start|>"
	ImEnd     = "<|im_end|>"
	ToolCall  = "<tool_call>"
	ToolEnd   = "</tool_call>"
)

// DefaultSpecial lists the default special tokens in the order Train gives
// them ids.
func DefaultSpecial() []string {
	return []string{EndOfText, ImStart, ImEnd, ToolCall, ToolEnd}
}

// ErrUnknownID is returned by Decode for an id that names no token.
var ErrUnknownID = errors.New("unknown token id")

// Tokenizer is a byte-level BPE tokenizer. It is immutable and safe for
// concurrent use.
type Tokenizer struct {
	tokens []string // id → token as tokenizer.json writes it; "" for a hole
	pieces [][]byte // id → the bytes it decodes to; nil for a hole
	vocab  map[string]int32
	added  []addedToken // by id
	// addedAt indexes added by content, and addedFirst by first byte,
	// longest content first, for leftmost-longest matching.
	addedAt      map[string]int32
	addedFirst   [256][]int32
	byteID       [256]int32
	merges       map[uint64]merge
	mergeList    [][2]int32
	split        splitMode
	ignoreMerges bool
	meta         fileMeta
}

type merge struct{ rank, id int32 }

type addedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// fileMeta holds what Marshal writes back but Encode does not use.
type fileMeta struct {
	normalizer, preTokenizer, postProcessor, decoder json.RawMessage
	unkToken                                         *string
	fuseUnk                                          bool
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// build checks a vocabulary, merges and added tokens against each other and
// indexes them. Fields in errors use tokenizer.json paths.
func build(vocab map[string]int32, merges [][2]string, added []addedToken, split splitMode, ignoreMerges bool, meta fileMeta) (*Tokenizer, error) {
	n := int32(0)
	for tok, id := range vocab {
		if id < 0 {
			return nil, fmt.Errorf("model.vocab[%q]: negative id %d", tok, id)
		}
		n = max(n, id+1)
	}
	for i, a := range added {
		if a.ID < 0 {
			return nil, fmt.Errorf("added_tokens[%d]: negative id %d", i, a.ID)
		}
		n = max(n, a.ID+1)
	}
	t := &Tokenizer{
		tokens:       make([]string, n),
		pieces:       make([][]byte, n),
		vocab:        vocab,
		addedAt:      make(map[string]int32, len(added)),
		merges:       make(map[uint64]merge, len(merges)),
		split:        split,
		ignoreMerges: ignoreMerges,
		meta:         meta,
	}
	for tok, id := range vocab {
		if t.pieces[id] != nil {
			return nil, fmt.Errorf("model.vocab: id %d used by both %q and %q", id, t.tokens[id], tok)
		}
		t.tokens[id] = tok
		b, ok := fromByteLevel(tok)
		if !ok {
			// Not a byte-level token (an added token listed in the vocab,
			// say); merges never produce it, and it decodes as written.
			b = []byte(tok)
		}
		t.pieces[id] = b
	}
	t.added = slices.Clone(added)
	slices.SortFunc(t.added, func(a, b addedToken) int { return cmp.Compare(a.ID, b.ID) })
	for i, a := range t.added {
		field := fmt.Sprintf("added_tokens[%d]", i)
		switch {
		case a.Content == "":
			return nil, fmt.Errorf("%s: empty content", field)
		case a.SingleWord:
			return nil, unsupported(field+".single_word", true, "added tokens matched anywhere in the text")
		case a.LStrip:
			return nil, unsupported(field+".lstrip", true, "added tokens that keep surrounding whitespace")
		case a.RStrip:
			return nil, unsupported(field+".rstrip", true, "added tokens that keep surrounding whitespace")
		}
		if _, dup := t.addedAt[a.Content]; dup {
			return nil, fmt.Errorf("%s: content %q listed twice", field, a.Content)
		}
		if id, ok := vocab[a.Content]; ok && id != a.ID {
			return nil, fmt.Errorf("%s: %q has id %d but model.vocab gives it %d", field, a.Content, a.ID, id)
		}
		if t.pieces[a.ID] != nil && t.tokens[a.ID] != a.Content {
			return nil, fmt.Errorf("%s: id %d of %q already names %q", field, a.ID, a.Content, t.tokens[a.ID])
		}
		t.tokens[a.ID] = a.Content
		t.pieces[a.ID] = []byte(a.Content)
		t.addedAt[a.Content] = a.ID
		first := a.Content[0]
		t.addedFirst[first] = append(t.addedFirst[first], a.ID)
	}
	for i := range t.addedFirst {
		slices.SortFunc(t.addedFirst[i], func(a, b int32) int {
			return cmp.Or(cmp.Compare(len(t.tokens[b]), len(t.tokens[a])), cmp.Compare(a, b))
		})
	}
	for b := range 256 {
		id, ok := vocab[string(byteRunes[b])]
		if !ok {
			return nil, fmt.Errorf("model.vocab lacks the byte-level symbol %q for byte 0x%02x; every byte needs one", byteRunes[b], b)
		}
		t.byteID[b] = id
	}
	if len(merges) > math.MaxInt32 {
		return nil, fmt.Errorf("model.merges: %d merges is too many", len(merges))
	}
	for i, m := range merges {
		a, okA := vocab[m[0]]
		b, okB := vocab[m[1]]
		ab, okAB := vocab[m[0]+m[1]]
		if !okA || !okB || !okAB {
			return nil, fmt.Errorf("model.merges[%d]: %q %q needs %q, %q and %q in model.vocab", i, m[0], m[1], m[0], m[1], m[0]+m[1])
		}
		k := pairKey(a, b)
		if _, dup := t.merges[k]; dup {
			continue // the first, lowest-ranked copy wins
		}
		t.merges[k] = merge{rank: int32(len(t.mergeList)), id: ab}
		t.mergeList = append(t.mergeList, [2]int32{a, b})
	}
	return t, nil
}

// VocabSize is one more than the largest id, added tokens included.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// TokenID returns the id of a token written as tokenizer.json writes it:
// byte-level symbols for vocabulary entries ("Ġthe"), content for added
// tokens ("<|im_end|>").
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	if id, ok := t.addedAt[s]; ok {
		return id, true
	}
	id, ok := t.vocab[s]
	return id, ok
}

// Token is the inverse of TokenID; it returns "" for an unknown id.
func (t *Tokenizer) Token(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// Special returns the id of the added token whose content is name, such as
// ImStart. Added tokens that a file marks special=false (Qwen2.5's
// <tool_call>) count too: Encode matches both kinds the same way.
func (t *Tokenizer) Special(name string) (int32, bool) {
	id, ok := t.addedAt[name]
	return id, ok
}

// Encode tokenizes text; see EncodeBytes.
func (t *Tokenizer) Encode(text string) []int32 {
	return t.EncodeBytes([]byte(text))
}

// EncodeBytes tokenizes text: added tokens first, then the pre-tokenizer
// and BPE merges on the text between them. Any bytes are accepted.
func (t *Tokenizer) EncodeBytes(text []byte) []int32 {
	out := make([]int32, 0, len(text)/3+1)
	var sc scratch
	for len(text) > 0 {
		i, id, n := t.findAdded(text)
		for plain := text[:i]; len(plain) > 0; {
			k := t.split.next(plain)
			out = t.bpe(plain[:k], out, &sc)
			plain = plain[k:]
		}
		if n == 0 {
			break
		}
		out = append(out, id)
		text = text[i+n:]
	}
	return out
}

// findAdded returns the leftmost-longest added token in s: its offset, id
// and length, or len(s), 0, 0 if there is none.
func (t *Tokenizer) findAdded(s []byte) (int, int32, int) {
	if len(t.added) == 0 {
		return len(s), 0, 0
	}
	for i, c := range s {
		for _, id := range t.addedFirst[c] {
			if tok := t.tokens[id]; bytes.HasPrefix(s[i:], []byte(tok)) {
				return i, id, len(tok)
			}
		}
	}
	return len(s), 0, 0
}

// Decode returns the bytes ids stand for. It fails, naming the position,
// on an id that is no token.
func (t *Tokenizer) Decode(ids []int32) ([]byte, error) {
	n := 0
	for i, id := range ids {
		if id < 0 || int(id) >= len(t.pieces) || t.pieces[id] == nil {
			return nil, fmt.Errorf("decode ids[%d] = %d: %w", i, id, ErrUnknownID)
		}
		n += len(t.pieces[id])
	}
	out := make([]byte, 0, n)
	for _, id := range ids {
		out = append(out, t.pieces[id]...)
	}
	return out, nil
}

// DecodeString is Decode as a string; the string may hold invalid UTF-8.
func (t *Tokenizer) DecodeString(ids []int32) (string, error) {
	b, err := t.Decode(ids)
	return string(b), err
}
