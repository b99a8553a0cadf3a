package serve

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

func openaiClient(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

var weatherTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("the weather in a city"),
	Parameters: shared.FunctionParameters{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
	},
})

func TestOpenAIClient(t *testing.T) {
	_, srv, _ := startServer(t)
	client := openaiClient(srv.URL)
	params := openai.ChatCompletionNewParams{
		Model: "toy",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("you can call tools"),
			openai.UserMessage("weather in paris?"),
		},
		Tools:     []openai.ChatCompletionToolUnionParam{weatherTool},
		MaxTokens: openai.Int(10),
		Seed:      openai.Int(3),
	}
	got, err := client.Chat.Completions.New(t.Context(), params)
	if err != nil {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			t.Fatalf("%v: %s", err, apiErr.DumpRequest(true))
		}
		t.Fatal(err)
	}
	if got.Object != "chat.completion" || len(got.Choices) != 1 || got.Choices[0].Message.Role != "assistant" || got.Usage.CompletionTokens == 0 {
		t.Errorf("response %+v", got)
	}
	if v := got.JSON.ExtraFields["weights_version"]; v.Raw() != `"0"` {
		t.Errorf("weights_version extra field %q", v.Raw())
	}

	stream := client.Chat.Completions.NewStreaming(t.Context(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != got.Choices[0].Message.Content || acc.Choices[0].FinishReason != got.Choices[0].FinishReason {
		t.Errorf("streamed %+v, non-streamed %+v", acc.Choices, got.Choices)
	}
}

// TestToolCallMessage checks the tool-call path a random model cannot be
// made to take: a completion holding a call becomes message.tool_calls
// that the OpenAI client reads, and a malformed block stays in content
// and is counted.
func TestToolCallMessage(t *testing.T) {
	s, _, _ := startServer(t)
	text := "let me check\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"paris\"}}\n</tool_call>"
	msg, finish := s.assistantMessage(text, "stop", true)
	if finish != "tool_calls" || len(msg.ToolCalls) != 1 {
		t.Fatalf("finish %q, message %+v", finish, msg)
	}
	b, err := json.Marshal(chatResponse{Object: "chat.completion", Choices: []chatChoice{{Message: msg, FinishReason: finish}}})
	if err != nil {
		t.Fatal(err)
	}
	var cc openai.ChatCompletion
	if err := json.Unmarshal(b, &cc); err != nil {
		t.Fatal(err)
	}
	call := cc.Choices[0].Message.ToolCalls[0]
	if call.Function.Name != "get_weather" || call.Function.Arguments != `{"city":"paris"}` || call.ID == "" || call.Type != "function" || cc.Choices[0].Message.Content != "let me check" {
		t.Errorf("client read %+v from %s", cc.Choices[0].Message, b)
	}

	bad := "<tool_call>{not json}</tool_call>"
	msg, finish = s.assistantMessage(bad, "stop", true)
	if finish != "stop" || len(msg.ToolCalls) != 0 || msg.Content == nil || *msg.Content != bad {
		t.Errorf("malformed: finish %q, message %+v", finish, msg)
	}
	if n := testutilCounter(t, s); n != 1 {
		t.Errorf("malformed counter %v, want 1", n)
	}
	// With tool_choice "none" nothing is parsed.
	if msg, finish := s.assistantMessage(text, "stop", false); finish != "stop" || *msg.Content != text {
		t.Errorf("unparsed: finish %q, message %+v", finish, msg)
	}
}

func testutilCounter(t *testing.T, s *Server) float64 {
	t.Helper()
	mfs, err := s.met.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "verisim_serve_malformed_tool_calls_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no malformed tool call counter")
	return 0
}
