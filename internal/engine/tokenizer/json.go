package tokenizer

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/verisim/verisim/internal/atomicfile"
)

// UnsupportedError reports a tokenizer.json setting verisim does not
// implement.
type UnsupportedError struct {
	Field string // JSON path, e.g. "model.type"
	Value string // the value found, as JSON
	Want  string // what verisim supports instead
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("unsupported tokenizer.json: field %s = %s; verisim supports %s", e.Field, e.Value, e.Want)
}

func unsupported(field string, value any, want string) error {
	v, err := json.Marshal(value)
	if err != nil {
		v = fmt.Appendf(nil, "%v", value)
	}
	return &UnsupportedError{Field: field, Value: string(v), Want: want}
}

// fileJSON is tokenizer.json. M is the type of one merge: read as raw JSON
// (a "a b" string or an ["a", "b"] pair, both in use), written as pairs.
type fileJSON[M any] struct {
	Version       string          `json:"version"`
	Truncation    json.RawMessage `json:"truncation"`
	Padding       json.RawMessage `json:"padding"`
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         modelJSON[M]    `json:"model"`
}

type modelJSON[M any] struct {
	Type                    string    `json:"type"`
	Dropout                 *float64  `json:"dropout"`
	UnkToken                *string   `json:"unk_token"`
	ContinuingSubwordPrefix *string   `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string   `json:"end_of_word_suffix"`
	FuseUnk                 bool      `json:"fuse_unk"`
	ByteFallback            bool      `json:"byte_fallback"`
	IgnoreMerges            bool      `json:"ignore_merges"`
	Vocab                   vocabJSON `json:"vocab"`
	Merges                  []M       `json:"merges"`
}

// vocabJSON writes the vocabulary in id order, as Hugging Face does, rather
// than the key order encoding/json gives a map.
type vocabJSON struct {
	m      map[string]int32
	tokens []string // by id, for writing
}

func (v *vocabJSON) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &v.m) }

func (v vocabJSON) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	for id, tok := range v.tokens {
		if _, ok := v.m[tok]; !ok || v.m[tok] != int32(id) {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		k, err := marshalNoEscape(tok)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		fmt.Fprintf(&buf, ":%d", id)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// Load reads a tokenizer.json file; see Parse.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	return t, nil
}

// Parse reads a Hugging Face tokenizer.json holding a byte-level BPE
// model. Merges may be "a b" strings or ["a","b"] pairs. Settings that would
// change ids in ways verisim does not implement give an *UnsupportedError.
func Parse(data []byte) (*Tokenizer, error) {
	var f fileJSON[json.RawMessage]
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	m := f.Model
	const bpe = "byte-level BPE"
	switch {
	case m.Type != "BPE":
		return nil, unsupported("model.type", m.Type, bpe)
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, unsupported("model.dropout", *m.Dropout, "null (no BPE dropout)")
	case m.ByteFallback:
		return nil, unsupported("model.byte_fallback", true, "false (byte-level BPE has no byte fallback)")
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "":
		return nil, unsupported("model.continuing_subword_prefix", *m.ContinuingSubwordPrefix, "null")
	case m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return nil, unsupported("model.end_of_word_suffix", *m.EndOfWordSuffix, "null")
	case !isNull(f.Truncation):
		return nil, unsupported("truncation", f.Truncation, "null (callers bound lengths themselves)")
	case !isNull(f.Padding):
		return nil, unsupported("padding", f.Padding, "null (callers pad themselves)")
	}
	if err := checkNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	split, err := parsePreTokenizer(f.PreTokenizer)
	if err != nil {
		return nil, err
	}
	if err := checkTyped("decoder", f.Decoder, "a ByteLevel decoder", "ByteLevel"); err != nil {
		return nil, err
	}
	if !isNull(f.PostProcessor) {
		if err := checkTyped("post_processor", f.PostProcessor, "ByteLevel, TemplateProcessing or a Sequence of them, or null",
			"ByteLevel", "TemplateProcessing", "Sequence"); err != nil {
			return nil, err
		}
	}
	merges := make([][2]string, len(m.Merges))
	for i, raw := range m.Merges {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			a, b, ok := cutSpace(s)
			if !ok {
				return nil, fmt.Errorf("model.merges[%d] = %q: want two tokens separated by one space", i, s)
			}
			merges[i] = [2]string{a, b}
			continue
		}
		var pair []string
		if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("model.merges[%d] = %s: want \"a b\" or [\"a\", \"b\"]", i, raw)
		}
		merges[i] = [2]string{pair[0], pair[1]}
	}
	if m.Vocab.m == nil {
		return nil, fmt.Errorf("model.vocab: missing")
	}
	meta := fileMeta{
		normalizer:    compact(f.Normalizer),
		preTokenizer:  compact(f.PreTokenizer),
		postProcessor: compact(f.PostProcessor),
		decoder:       compact(f.Decoder),
		unkToken:      m.UnkToken,
		fuseUnk:       m.FuseUnk,
	}
	return build(m.Vocab.m, merges, f.AddedTokens, split, m.IgnoreMerges, meta)
}

func cutSpace(s string) (string, string, bool) {
	a, b, ok := bytes.Cut([]byte(s), []byte(" "))
	if !ok || len(a) == 0 || len(b) == 0 || bytes.IndexByte(b, ' ') >= 0 {
		return "", "", false
	}
	return string(a), string(b), true
}

func compact(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return json.RawMessage("null")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return json.RawMessage("null")
	}
	return buf.Bytes()
}

type typed struct {
	Type string `json:"type"`
}

// checkTyped requires raw to be an object whose type is one of types.
func checkTyped(field string, raw json.RawMessage, want string, types ...string) error {
	var t typed
	if isNull(raw) {
		return unsupported(field, nil, want)
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	if !slices.Contains(types, t.Type) {
		return unsupported(field+".type", t.Type, want)
	}
	return nil
}

func checkNormalizer(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	return checkTyped("normalizer", raw, "null or NFC (NFC is kept but not applied)", "NFC")
}

type preJSON struct {
	Type           string            `json:"type"`
	AddPrefixSpace *bool             `json:"add_prefix_space"`
	UseRegex       *bool             `json:"use_regex"`
	Pretokenizers  []json.RawMessage `json:"pretokenizers"`
	Pattern        struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior string `json:"behavior"`
	Invert   bool   `json:"invert"`
}

const wantPre = "a ByteLevel pre_tokenizer, alone or after a Split with the GPT-2, Llama-3 or Qwen2 pattern"

func parsePreTokenizer(raw json.RawMessage) (splitMode, error) {
	if isNull(raw) {
		return 0, unsupported("pre_tokenizer", nil, wantPre)
	}
	var p preJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return 0, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch p.Type {
	case "ByteLevel":
		if err := checkByteLevel("pre_tokenizer", p); err != nil {
			return 0, err
		}
		if p.UseRegex == nil || *p.UseRegex {
			return splitGPT2, nil
		}
		return splitNone, nil
	case "Sequence":
		if len(p.Pretokenizers) != 2 {
			return 0, unsupported("pre_tokenizer.pretokenizers", fmt.Sprintf("%d entries", len(p.Pretokenizers)), wantPre)
		}
		var s, b preJSON
		if err := json.Unmarshal(p.Pretokenizers[0], &s); err != nil {
			return 0, fmt.Errorf("pre_tokenizer.pretokenizers[0]: %w", err)
		}
		if err := json.Unmarshal(p.Pretokenizers[1], &b); err != nil {
			return 0, fmt.Errorf("pre_tokenizer.pretokenizers[1]: %w", err)
		}
		const sf, bf = "pre_tokenizer.pretokenizers[0]", "pre_tokenizer.pretokenizers[1]"
		switch {
		case s.Type != "Split":
			return 0, unsupported(sf+".type", s.Type, wantPre)
		case s.Pattern.Regex == nil:
			return 0, unsupported(sf+".pattern", "not a Regex", wantPre)
		case s.Behavior != "Isolated":
			return 0, unsupported(sf+".behavior", s.Behavior, "Isolated")
		case s.Invert:
			return 0, unsupported(sf+".invert", true, "false")
		case b.Type != "ByteLevel":
			return 0, unsupported(bf+".type", b.Type, wantPre)
		case b.UseRegex == nil || *b.UseRegex:
			return 0, unsupported(bf+".use_regex", true, "false after a Split")
		}
		if err := checkByteLevel(bf, b); err != nil {
			return 0, err
		}
		for _, m := range []splitMode{splitQwen2, splitLlama3, splitGPT2} {
			if *s.Pattern.Regex == m.pattern() {
				return m, nil
			}
		}
		return 0, unsupported(sf+".pattern.Regex", *s.Pattern.Regex, "the GPT-2, Llama-3 and Qwen2 split patterns")
	}
	return 0, unsupported("pre_tokenizer.type", p.Type, wantPre)
}

// checkByteLevel refuses add_prefix_space, which inserts a byte that Decode
// would then return. Hugging Face defaults it to true when absent.
func checkByteLevel(field string, p preJSON) error {
	if p.AddPrefixSpace == nil || *p.AddPrefixSpace {
		return unsupported(field+".add_prefix_space", true, "false (exact byte round trip)")
	}
	return nil
}

var byteLevelJSON = json.RawMessage(`{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}`)

// defaultMeta is what a trained tokenizer writes: Qwen2's layout.
func defaultMeta() fileMeta {
	pre, _ := json.Marshal(map[string]any{
		"type": "Sequence",
		"pretokenizers": []json.RawMessage{
			mustJSON(map[string]any{
				"type":     "Split",
				"pattern":  map[string]string{"Regex": patternQwen2},
				"behavior": "Isolated",
				"invert":   false,
			}),
			byteLevelJSON,
		},
	})
	return fileMeta{
		normalizer:    json.RawMessage("null"),
		preTokenizer:  pre,
		postProcessor: byteLevelJSON,
		decoder:       byteLevelJSON,
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Marshal writes t as tokenizer.json, merges as pairs. Parse(Marshal())
// gives a tokenizer with the same ids, and Marshal of that the same bytes.
func (t *Tokenizer) Marshal() ([]byte, error) {
	merges := make([][2]string, len(t.mergeList))
	for i, m := range t.mergeList {
		merges[i] = [2]string{t.tokens[m[0]], t.tokens[m[1]]}
	}
	added := slices.Clone(t.added)
	slices.SortFunc(added, func(a, b addedToken) int { return cmp.Compare(a.ID, b.ID) })
	if added == nil {
		added = []addedToken{}
	}
	f := fileJSON[[2]string]{
		Version:       "1.0",
		Truncation:    json.RawMessage("null"),
		Padding:       json.RawMessage("null"),
		AddedTokens:   added,
		Normalizer:    t.meta.normalizer,
		PreTokenizer:  t.meta.preTokenizer,
		PostProcessor: t.meta.postProcessor,
		Decoder:       t.meta.decoder,
		Model: modelJSON[[2]string]{
			Type:         "BPE",
			UnkToken:     t.meta.unkToken,
			FuseUnk:      t.meta.fuseUnk,
			IgnoreMerges: t.ignoreMerges,
			Vocab:        vocabJSON{m: t.vocab, tokens: t.tokens},
			Merges:       merges,
		},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("marshal tokenizer.json: %w", err)
	}
	return buf.Bytes(), nil
}

// Save writes t to path as tokenizer.json, atomically.
func (t *Tokenizer) Save(path string) error {
	data, err := t.Marshal()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return fmt.Errorf("save tokenizer %s: %w", path, err)
	}
	return nil
}
