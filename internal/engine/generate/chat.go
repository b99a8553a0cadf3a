package generate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/verisim/verisim/internal/engine/tokenizer"
)

// Message is one turn of a chat conversation in OpenAI's shape: Role is
// "system", "user", "assistant" or "tool".
type Message struct {
	Role    string
	Content string
	// ToolCalls are an assistant turn's calls.
	ToolCalls []ToolCall
	// ToolCallID names the call a "tool" message answers. The template
	// does not render it: Qwen2.5 pairs results with calls by order.
	ToolCallID string
}

// ToolCall is one function call; Arguments is a JSON object as text.
type ToolCall struct {
	ID, Name, Arguments string
}

// Tool is a function the model may call; Parameters is its JSON schema.
type Tool struct {
	Name, Description string
	Parameters        json.RawMessage
}

const (
	toolsHead = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
	toolsTail = "\n</tools>\n\nFor each function call, return a json object with function name and arguments within " +
		tokenizer.ToolCall + tokenizer.ToolEnd + " XML tags:\n" + tokenizer.ToolCall +
		"\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n" + tokenizer.ToolEnd
)

// RenderChat renders msgs in ChatML as Qwen2.5's chat template does, with
// tools described in the system turn and tool results sent back as a user
// turn of <tool_response> blocks. JSON in the prompt (tool schemas, call
// arguments) is written as Python's json.dumps writes it, ", " and ": "
// separators and non-ASCII kept, because that is what the template's tojson
// gave the model in training.
//
// Where it differs from Qwen2.5: with no system message there is no default
// "You are Qwen…" turn; with tools and no system message the system turn
// holds only the tools section.
func RenderChat(msgs []Message, tools []Tool, addGenerationPrompt bool) string {
	var b strings.Builder
	turn := func(role string) { b.WriteString(tokenizer.ImStart + role + "\n") }
	end := func() { b.WriteString(tokenizer.ImEnd + "\n") }

	rest := msgs
	if len(msgs) > 0 && msgs[0].Role == "system" {
		rest = msgs[1:]
	}
	switch {
	case len(tools) > 0:
		turn("system")
		if len(rest) < len(msgs) {
			b.WriteString(msgs[0].Content + "\n\n")
		}
		b.WriteString(toolsHead)
		for _, t := range tools {
			b.WriteString("\n")
			writeTool(&b, t)
		}
		b.WriteString(toolsTail)
		end()
	case len(rest) < len(msgs):
		turn("system")
		b.WriteString(msgs[0].Content)
		end()
	}

	for i, m := range rest {
		switch {
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			b.WriteString(tokenizer.ImStart + "assistant")
			if m.Content != "" {
				b.WriteString("\n" + m.Content)
			}
			for _, c := range m.ToolCalls {
				b.WriteString("\n" + tokenizer.ToolCall + "\n{\"name\": \"" + c.Name + "\", \"arguments\": ")
				writeArguments(&b, c.Arguments)
				b.WriteString("}\n" + tokenizer.ToolEnd)
			}
			end()
		case m.Role == "tool":
			// Consecutive results share one user turn.
			if i == 0 || rest[i-1].Role != "tool" {
				b.WriteString(tokenizer.ImStart + "user")
			}
			b.WriteString("\n<tool_response>\n" + m.Content + "\n</tool_response>")
			if i == len(rest)-1 || rest[i+1].Role != "tool" {
				end()
			}
		default:
			turn(m.Role)
			b.WriteString(m.Content)
			end()
		}
	}
	if addGenerationPrompt {
		turn("assistant")
	}
	return b.String()
}

// writeTool writes t as the OpenAI tool object Qwen2.5's template receives:
// {"type": "function", "function": {"name", "description", "parameters"}}.
func writeTool(b *strings.Builder, t Tool) {
	b.WriteString(`{"type": "function", "function": {"name": `)
	writePyString(b, t.Name)
	if t.Description != "" {
		b.WriteString(`, "description": `)
		writePyString(b, t.Description)
	}
	if len(t.Parameters) > 0 {
		b.WriteString(`, "parameters": `)
		if err := writePyJSON(b, t.Parameters); err != nil {
			// Not JSON: show it as the string it is rather than drop it.
			writePyString(b, string(t.Parameters))
		}
	}
	b.WriteString("}}")
}

// writeArguments writes a call's arguments as the template's tojson of the
// parsed object; arguments that are not JSON are written as a JSON string.
func writeArguments(b *strings.Builder, args string) {
	if args == "" {
		args = "{}"
	}
	var tmp strings.Builder
	if err := writePyJSON(&tmp, []byte(args)); err != nil {
		writePyString(b, args)
		return
	}
	b.WriteString(tmp.String())
}

// writePyJSON re-encodes the JSON value raw as Python's json.dumps with
// ensure_ascii=False would: keys in their order, ", " and ": " separators.
func writePyJSON(b *strings.Builder, raw []byte) error {
	if !json.Valid(raw) {
		return fmt.Errorf("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := writePyValue(b, dec); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after JSON value")
	}
	return nil
}

func writePyValue(b *strings.Builder, dec *json.Decoder) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := t.(type) {
	case json.Delim:
		closing := map[json.Delim]string{'{': "}", '[': "]"}[v]
		b.WriteString(v.String())
		for i := 0; dec.More(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if v == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				writePyString(b, k.(string))
				b.WriteString(": ")
			}
			if err := writePyValue(b, dec); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return err
		}
		b.WriteString(closing)
	case string:
		writePyString(b, v)
	case json.Number:
		b.WriteString(v.String())
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case nil:
		b.WriteString("null")
	}
	return nil
}

// writePyString writes s as json.dumps(s, ensure_ascii=False) does: only
// the quote, the backslash and control characters are escaped.
func writePyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}
