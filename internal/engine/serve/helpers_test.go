package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/safetensors"
	"github.com/verisim/verisim/internal/engine/tokenizer"
)

const toyCorpus = `the quick brown fox jumps over the lazy dog.
func main() { fmt.Println("hello, world") }
<|im_start|>user
what is the weather in paris?<|im_end|>
<|im_start|>assistant
it is sunny in paris today.<|im_end|>
`

const testMaxPos = 512

var (
	toyOnce sync.Once
	toyTok  *tokenizer.Tokenizer
	toyErr  error
)

func testTokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	toyOnce.Do(func() {
		toyTok, toyErr = tokenizer.Train(context.Background(), strings.NewReader(strings.Repeat(toyCorpus, 4)), 320, tokenizer.DefaultSpecial())
	})
	if toyErr != nil {
		t.Fatal(toyErr)
	}
	return toyTok
}

// writeCheckpoint saves a tiny 2-layer Qwen2 model initialised from seed,
// plus the toy tokenizer, in a fresh directory named name.
func writeCheckpoint(t testing.TB, name string, seed uint64, hidden int) string {
	return writeArchCheckpoint(t, "qwen2", name, seed, hidden)
}

// writeArchCheckpoint is writeCheckpoint for arch "qwen2", "llama" or
// "moe" (4 experts, top 2).
func writeArchCheckpoint(t testing.TB, arch, name string, seed uint64, hidden int) string {
	t.Helper()
	tok := testTokenizer(t)
	cfg, err := model.ConfigFor(arch, "tiny", tok.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumHiddenLayers = hidden, 64, 2
	cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim = 4, 2, 8
	if cfg.MoE() {
		cfg.NumLocalExperts, cfg.NumExpertsPerTok = 4, 2
	}
	cfg.MaxPositionEmbeddings = testMaxPos
	m, err := model.Init(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	// bf16, as the trainer publishes: the server keeps these weights in
	// bfloat16, while scoring passes in the tests widen them.
	if err := m.Save(dir, safetensors.BF16); err != nil {
		t.Fatal(err)
	}
	if err := tok.Save(filepath.Join(dir, TokenizerFile)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startServer serves a fresh checkpoint (seed 1) under the name "toy".
func startServer(t *testing.T) (*Server, *httptest.Server, string) {
	t.Helper()
	dir := writeCheckpoint(t, "toy", 1, 32)
	s, err := New(Options{ModelDir: dir, MaxN: 4})
	if err != nil {
		t.Fatal(err)
	}
	runServer(t, s)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv, dir
}

// runServer runs s's decode loop until the test ends.
func runServer(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// post sends body as JSON and returns the status, headers and body.
func post(t *testing.T, url, body string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// postOK is post that fails the test unless the status is 200, and decodes
// the body into v.
func postOK(t *testing.T, url, body string, v any) http.Header {
	t.Helper()
	status, h, b := post(t, url, body)
	if status != http.StatusOK {
		t.Fatalf("POST %s: status %d: %s", url, status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return h
}

// readSSE reads a server-sent event stream to its end, returning the data
// payloads; the last is "[DONE]" for a stream that finished.
func readSSE(t *testing.T, r io.Reader) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("unexpected SSE line %q", line)
		}
		events = append(events, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// streamResult is what a chat stream added up to; content is the
// choices' content one after the other.
type streamResult struct {
	content, finish, version string
	chunks                   int
	usage                    *usage
}

func collectStream(t *testing.T, events []string) streamResult {
	t.Helper()
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream did not end with [DONE]: %q", events)
	}
	var out streamResult
	var sb bytes.Buffer
	var perChoice []string // choices' content, which a stream interleaves
	for _, e := range events[:len(events)-1] {
		var c chatChunk
		dec := json.NewDecoder(strings.NewReader(e))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("chunk %s: %v", e, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk object %q", c.Object)
		}
		if out.version != "" && c.WeightsVersion != out.version {
			t.Fatalf("weights_version changed within a stream: %q then %q", out.version, c.WeightsVersion)
		}
		out.version = c.WeightsVersion
		out.chunks++
		if c.Usage != nil {
			out.usage = c.Usage
		}
		for _, ch := range c.Choices {
			for len(perChoice) <= ch.Index {
				perChoice = append(perChoice, "")
			}
			if ch.Delta.Content != nil {
				perChoice[ch.Index] += *ch.Delta.Content
			}
			if ch.FinishReason != nil {
				out.finish = *ch.FinishReason
			}
		}
	}
	for _, c := range perChoice {
		sb.WriteString(c)
	}
	out.content = sb.String()
	return out
}
