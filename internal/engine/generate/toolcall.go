package generate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/verisim/verisim/internal/engine/tokenizer"
)

// ParseToolCalls splits a completion into its text and its tool calls.
// Each <tool_call>…</tool_call> block whose body is a JSON object with a
// non-empty string "name" and an "arguments" object (or none, read as {})
// becomes a call, its arguments compacted, and is cut from content. Any
// other block, an unterminated one included, is returned in malformed and
// left in content, so that a caller can show and count it.
//
// With no call found content is text unchanged; otherwise it is what is left,
// trimmed of surrounding whitespace. Ids are "call_" plus a hash of text and
// the call's index: the same completion always gets the same ids, different
// completions almost surely different ones.
func ParseToolCalls(text string) (content string, calls []ToolCall, malformed []string) {
	var kept strings.Builder
	rest := text
	for {
		open := strings.Index(rest, tokenizer.ToolCall)
		if open < 0 {
			kept.WriteString(rest)
			break
		}
		body := rest[open+len(tokenizer.ToolCall):]
		end := strings.Index(body, tokenizer.ToolEnd)
		if end < 0 {
			malformed = append(malformed, rest[open:])
			kept.WriteString(rest)
			break
		}
		block := rest[open : open+len(tokenizer.ToolCall)+end+len(tokenizer.ToolEnd)]
		c, ok := parseCall(body[:end])
		if ok {
			kept.WriteString(rest[:open])
			calls = append(calls, c)
		} else {
			kept.WriteString(rest[:open] + block)
			malformed = append(malformed, block)
		}
		rest = rest[open+len(block):]
	}
	if len(calls) == 0 {
		return text, nil, malformed
	}
	sum := sha256.Sum256([]byte(text))
	prefix := "call_" + hex.EncodeToString(sum[:6])
	for i := range calls {
		calls[i].ID = fmt.Sprintf("%s_%d", prefix, i)
	}
	return strings.TrimSpace(kept.String()), calls, malformed
}

func parseCall(body string) (ToolCall, bool) {
	var v struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Name == nil || *v.Name == "" {
		return ToolCall{}, false
	}
	args := bytes.TrimSpace(v.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if args[0] != '{' {
		return ToolCall{}, false
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return ToolCall{}, false
	}
	return ToolCall{Name: *v.Name, Arguments: compact.String()}, true
}
