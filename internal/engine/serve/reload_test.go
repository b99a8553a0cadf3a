package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

func reloadBody(path, version string) string {
	b, _ := json.Marshal(map[string]string{"path": path, "version": version})
	return string(b)
}

func chatIDs(t *testing.T, url string, seed int) ([]int32, string) {
	t.Helper()
	var r chatResponse
	h := postOK(t, url+"/v1/chat/completions", fmt.Sprintf(chatBody, seed, `,"return_token_ids":true`), &r)
	if h.Get(WeightsVersionHeader) != r.WeightsVersion {
		t.Fatalf("header version %q, body %q", h.Get(WeightsVersionHeader), r.WeightsVersion)
	}
	return r.Choices[0].TokenIDs, r.WeightsVersion
}

func TestReload(t *testing.T) {
	s, srv, _ := startServer(t)
	before, v := chatIDs(t, srv.URL, 21)
	if v != "0" {
		t.Fatalf("version %q before reload", v)
	}

	// A checkpoint of another shape is refused and the old one keeps serving.
	wide := writeCheckpoint(t, "wide", 2, 48)
	status, _, b := post(t, srv.URL+"/admin/reload", reloadBody(wide, "bad"))
	if status != http.StatusConflict || !strings.Contains(string(b), "hidden_size is 48, serving 32") {
		t.Errorf("mismatched reload: status %d, %s", status, b)
	}
	if ids, v := chatIDs(t, srv.URL, 21); v != "0" || !slices.Equal(ids, before) {
		t.Errorf("after refused reload: version %q, ids %v, want 0 and %v", v, ids, before)
	}

	// Same shape, other seed: the new weights serve new requests.
	next := writeCheckpoint(t, "next", 2, 32)
	var rr struct {
		WeightsVersion  string `json:"weights_version"`
		PreviousVersion string `json:"previous_version"`
	}
	postOK(t, srv.URL+"/admin/reload", reloadBody(next, "v1"), &rr)
	if rr.WeightsVersion != "v1" || rr.PreviousVersion != "0" || s.WeightsVersion() != "v1" {
		t.Errorf("reload answered %+v, server at %q", rr, s.WeightsVersion())
	}
	after, v := chatIDs(t, srv.URL, 21)
	if v != "v1" || slices.Equal(after, before) {
		t.Errorf("after reload: version %q, ids %v (before %v)", v, after, before)
	}
}

// TestReloadInFlight reloads while a stream is between tokens: the stream
// finishes on the weights it started with, without an error, and the next
// request sees the new ones.
func TestReloadInFlight(t *testing.T) {
	s, srv, _ := startServer(t)
	const body = `{"messages":[{"role":"user","content":"hi"}],"max_tokens":20,"seed":8,"n":2,"stop":"never-matches"%s}`
	var old chatResponse
	postOK(t, srv.URL+"/v1/chat/completions", fmt.Sprintf(body, ""), &old)

	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.onToken = func() {
		once.Do(func() {
			close(paused)
			<-resume
		})
	}
	type result struct {
		res    streamResult
		header string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(fmt.Sprintf(body, `,"stream":true`)))
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			done <- result{err: err}
			return
		}
		var events []string
		for _, l := range strings.Split(string(raw), "\n\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				events = append(events, d)
			}
		}
		done <- result{res: collectStream(t, events), header: resp.Header.Get(WeightsVersionHeader)}
	}()
	<-paused
	next := writeCheckpoint(t, "next", 2, 32)
	var rr map[string]string
	postOK(t, srv.URL+"/admin/reload", reloadBody(next, "v2"), &rr)
	close(resume)

	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.header != "0" || r.res.version != "0" {
		t.Errorf("in-flight stream: header %q, chunks %q, want 0", r.header, r.res.version)
	}
	// Both choices, the second started after the reload, are the old
	// weights' output.
	if want := *old.Choices[0].Message.Content + *old.Choices[1].Message.Content; r.res.content != want {
		t.Errorf("in-flight stream content %q, old weights give %q", r.res.content, want)
	}
	var now chatResponse
	postOK(t, srv.URL+"/v1/chat/completions", fmt.Sprintf(body, ""), &now)
	if now.WeightsVersion != "v2" || *now.Choices[0].Message.Content == *old.Choices[0].Message.Content {
		t.Errorf("after reload: version %q, content %q (old %q)", now.WeightsVersion, *now.Choices[0].Message.Content, *old.Choices[0].Message.Content)
	}
}

func TestMetrics(t *testing.T) {
	_, srv, _ := startServer(t)
	var r chatResponse
	postOK(t, srv.URL+"/v1/chat/completions", fmt.Sprintf(chatBody, 1, ""), &r)
	post(t, srv.URL+"/v1/chat/completions", `{`)
	post(t, srv.URL+"/admin/reload", reloadBody("/nowhere", "x"))
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{
		`verisim_serve_requests_total{endpoint="chat_completions",status="200"} 1`,
		`verisim_serve_requests_total{endpoint="chat_completions",status="400"} 1`,
		fmt.Sprintf("verisim_serve_generated_tokens_total %d", r.Usage.CompletionTokens),
		`verisim_serve_reloads_total{result="failed"} 1`,
		"verisim_serve_in_flight_requests 0",
		"verisim_serve_malformed_tool_calls_total 0",
		"verisim_serve_active_sequences 0",
		`verisim_serve_request_duration_seconds_count{endpoint="chat_completions"} 2`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
