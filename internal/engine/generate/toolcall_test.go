package generate

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestParseToolCalls(t *testing.T) {
	type call struct{ Name, Args string }
	for _, tc := range []struct {
		name      string
		text      string
		content   string
		calls     []call
		malformed []string
	}{
		{name: "plain text", text: " no calls here \n", content: " no calls here \n"},
		{
			name:    "one call, no content",
			text:    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": [1, 2]}}\n</tool_call>",
			content: "",
			calls:   []call{{"get_weather", `{"city":"Paris","days":[1,2]}`}},
		},
		{
			name:    "surrounding text and two calls",
			text:    "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>{\"name\":\"b\"}</tool_call>\nDone.",
			content: "Let me check.\n\n\nDone.",
			calls:   []call{{"a", "{}"}, {"b", "{}"}},
		},
		{
			name:      "malformed JSON stays in content",
			text:      "x <tool_call>{\"name\": \"a\", \"arguments\": {</tool_call> y",
			content:   "x <tool_call>{\"name\": \"a\", \"arguments\": {</tool_call> y",
			malformed: []string{"<tool_call>{\"name\": \"a\", \"arguments\": {</tool_call>"},
		},
		{
			name:      "missing name beside a good call",
			text:      "<tool_call>{\"arguments\": {}}</tool_call><tool_call>{\"name\": \"ok\"}</tool_call>",
			content:   "<tool_call>{\"arguments\": {}}</tool_call>",
			calls:     []call{{"ok", "{}"}},
			malformed: []string{"<tool_call>{\"arguments\": {}}</tool_call>"},
		},
		{
			name:      "arguments not an object",
			text:      "<tool_call>{\"name\": \"a\", \"arguments\": \"{}\"}</tool_call>",
			content:   "<tool_call>{\"name\": \"a\", \"arguments\": \"{}\"}</tool_call>",
			malformed: []string{"<tool_call>{\"name\": \"a\", \"arguments\": \"{}\"}</tool_call>"},
		},
		{
			name:      "unterminated block",
			text:      "hi <tool_call>{\"name\": \"a\"}",
			content:   "hi <tool_call>{\"name\": \"a\"}",
			malformed: []string{"<tool_call>{\"name\": \"a\"}"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content, calls, malformed := ParseToolCalls(tc.text)
			if content != tc.content {
				t.Errorf("content %q, want %q", content, tc.content)
			}
			var got []call
			for _, c := range calls {
				got = append(got, call{c.Name, c.Arguments})
			}
			if !slices.Equal(got, tc.calls) {
				t.Errorf("calls %+v, want %+v", got, tc.calls)
			}
			if !slices.Equal(malformed, tc.malformed) {
				t.Errorf("malformed %q, want %q", malformed, tc.malformed)
			}
			ids := map[string]bool{}
			for _, c := range calls {
				if !strings.HasPrefix(c.ID, "call_") || ids[c.ID] {
					t.Errorf("bad or repeated id %q", c.ID)
				}
				ids[c.ID] = true
			}
		})
	}
}

func FuzzParseToolCalls(f *testing.F) {
	for _, s := range []string{
		"",
		"plain",
		"<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": 1}}</tool_call>",
		"pre <tool_call>\n{\"name\": \"a\"}\n</tool_call> mid <tool_call>{bad</tool_call> post",
		"<tool_call><tool_call>{\"name\":\"a\"}</tool_call></tool_call>",
		"<tool_call>{\"name\": \"\"}</tool_call><tool_call>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		content, calls, malformed := ParseToolCalls(text)
		if len(calls) == 0 && content != text {
			t.Fatalf("no calls but content %q != text %q", content, text)
		}
		if len(content) > len(text) {
			t.Fatalf("content %q longer than text %q", content, text)
		}
		for _, m := range malformed {
			if !strings.Contains(content, m) {
				t.Fatalf("malformed block %q missing from content %q", m, content)
			}
		}
		// Each call renders back to a block that parses to the same call.
		var rendered strings.Builder
		for _, c := range calls {
			if c.Name == "" || !json.Valid([]byte(c.Arguments)) || !strings.HasPrefix(c.Arguments, "{") {
				t.Fatalf("bad call %+v", c)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(c.Arguments)); err != nil || compact.String() != c.Arguments {
				t.Fatalf("arguments not compact: %q", c.Arguments)
			}
			name, _ := json.Marshal(c.Name)
			rendered.WriteString("<tool_call>\n{\"name\": " + string(name) + ", \"arguments\": " + c.Arguments + "}\n</tool_call>")
		}
		again, calls2, bad := ParseToolCalls(rendered.String())
		if again != "" || len(bad) != 0 || len(calls2) != len(calls) {
			t.Fatalf("re-parse of %q: content %q, %d calls, malformed %q", rendered.String(), again, len(calls2), bad)
		}
		for i := range calls {
			if calls2[i].Name != calls[i].Name || calls2[i].Arguments != calls[i].Arguments {
				t.Fatalf("call %d: %+v re-parsed as %+v", i, calls[i], calls2[i])
			}
		}
	})
}
