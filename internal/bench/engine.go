package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/verisim/verisim/internal/engine/generate"
	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/safetensors"
	"github.com/verisim/verisim/internal/engine/serve"
	"github.com/verisim/verisim/internal/engine/tokenizer"
)

// EngineOptions configure the inference engine benchmark.
type EngineOptions struct {
	// Sizes are model presets (model.Presets), one column each.
	Sizes []string
	// Arch is "llama" (default) or "moe".
	Arch string
	// Vocab is the models' vocabulary size; default 8192, what
	// `verisim tokenizer train` builds by default.
	Vocab int
	// Steps is the number of decode steps timed per batch size; default 32.
	Steps int
	// Prompt is the prompt length for time to first token; default 1000.
	Prompt int
	// Dir holds the benchmark's checkpoints.
	Dir string
	// Progress, if set, gets a line per measurement.
	Progress io.Writer
}

// engineResult is one model size's measurements.
type engineResult struct {
	params int64
	// decode and decodeProfile are keyed by weights ("fp32", "bf16")
	// and batch size.
	decode                map[string]map[int]float64 // tokens/s
	decodeProfile         map[string]map[int]model.ProfileReport
	ttft, prefill, reload time.Duration
	reloadLoad            time.Duration
	sampleMicros          float64
	// stall is the longest pause between a decoding stream's tokens while
	// another request's prompt is prefilled, and promptTTFT that prompt's
	// time to first token, keyed by prefill chunk (0: the whole prompt in
	// one step).
	stall, promptTTFT map[int]time.Duration
	prefillProfile    model.ProfileReport
	servedVer         string
}

// Engine measures the built-in engine on randomly initialised models of
// each size: decode throughput at batch 1 and 32 (model.ForwardBatch, one
// token per sequence per step) with where a step's time goes, time to
// first token for a prompt through the HTTP server, and the time from
// POST /admin/reload to the first token on the new weights.
func Engine(ctx context.Context, o EngineOptions) (*Table, error) {
	if o.Arch == "" {
		o.Arch = "llama"
	}
	if o.Vocab == 0 {
		o.Vocab = 8192
	}
	if o.Steps == 0 {
		o.Steps = 32
	}
	if o.Prompt == 0 {
		o.Prompt = 1000
	}
	if len(o.Sizes) == 0 {
		return nil, fmt.Errorf("bench engine: no model sizes")
	}
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	tok, err := benchTokenizer(ctx)
	if err != nil {
		return nil, err
	}
	results := map[string]*engineResult{}
	for _, size := range o.Sizes {
		cfg, err := model.ConfigFor(o.Arch, size, o.Vocab)
		if err != nil {
			return nil, fmt.Errorf("bench engine: %w", err)
		}
		cfg.MaxPositionEmbeddings = max(cfg.MaxPositionEmbeddings, o.Prompt+64)
		r := &engineResult{params: cfg.ParamCount(), decode: map[string]map[int]float64{}, decodeProfile: map[string]map[int]model.ProfileReport{}}
		results[size] = r
		m, err := model.Init(cfg, 1)
		if err != nil {
			return nil, err
		}
		// The same bf16 checkpoint, widened to float32 and kept in
		// bfloat16 (as the server keeps it): the same logits, half the
		// bytes per step.
		ckpt := filepath.Join(o.Dir, size, "decode")
		if err := m.Save(ckpt, safetensors.BF16); err != nil {
			return nil, err
		}
		for _, w := range []string{"fp32", "bf16"} {
			wm, err := model.LoadWith(ckpt, model.LoadOptions{KeepBF16: w == "bf16"})
			if err != nil {
				return nil, err
			}
			r.decode[w], r.decodeProfile[w] = map[int]float64{}, map[int]model.ProfileReport{}
			for _, batch := range []int{1, 32} {
				progress("%s: decode, batch %d, %s weights", size, batch, w)
				tps, prof, err := decodeRate(wm, batch, o.Steps)
				if err != nil {
					return nil, err
				}
				r.decode[w][batch], r.decodeProfile[w][batch] = tps, prof
			}
		}
		r.sampleMicros = sampleCost(o.Vocab)
		r.stall, r.promptTTFT = map[int]time.Duration{}, map[int]time.Duration{}
		for _, chunk := range []int{256, 0} {
			progress("%s: a %d-token prefill beside a decoding stream, prefill chunk %d", size, o.Prompt, chunk)
			stall, ttft, err := prefillStall(ctx, m, o.Prompt, chunk)
			if err != nil {
				return nil, err
			}
			r.stall[chunk], r.promptTTFT[chunk] = stall, ttft
		}
		progress("%s: time to first token, %d-token prompt", size, o.Prompt)
		if err := serveTimings(ctx, r, m, tok, filepath.Join(o.Dir, size), o.Prompt); err != nil {
			return nil, err
		}
	}
	return engineTable(o, results), nil
}

// benchTokenizer is a small byte-level BPE; the benchmark's prompts are
// token ids, so only the server's need for a tokenizer matters.
func benchTokenizer(ctx context.Context) (*tokenizer.Tokenizer, error) {
	corpus := strings.Repeat("func main() { fmt.Println(\"hello, world\") }\nthe quick brown fox jumps over the lazy dog.\n", 8)
	return tokenizer.Train(ctx, strings.NewReader(corpus), 300, tokenizer.DefaultSpecial())
}

// decodeRate decodes steps tokens for batch sequences that each hold a
// 64-token prompt, and returns tokens/s with the step's time split.
func decodeRate(m *model.Model, batch, steps int) (float64, model.ProfileReport, error) {
	rng := rand.New(rand.NewPCG(uint64(batch), 3))
	seqs := make([]model.Seq, batch)
	for i := range seqs {
		prompt := make([]int32, 64)
		for j := range prompt {
			prompt[j] = int32(rng.IntN(m.Config.VocabSize))
		}
		c := m.NewKVCache()
		if _, err := m.Forward(c, prompt, 0); err != nil {
			return 0, model.ProfileReport{}, err
		}
		seqs[i] = model.Seq{Cache: c, Tokens: []int32{int32(rng.IntN(m.Config.VocabSize))}}
	}
	var prof model.Profile
	pm := *m
	pm.Profile = &prof
	step := func() error {
		for i := range seqs {
			seqs[i].Pos = seqs[i].Cache.Len()
		}
		_, err := pm.ForwardBatch(seqs)
		return err
	}
	if err := step(); err != nil { // warm-up
		return 0, model.ProfileReport{}, err
	}
	prof.Reset()
	start := time.Now()
	for range steps {
		if err := step(); err != nil {
			return 0, model.ProfileReport{}, err
		}
	}
	return float64(steps*batch) / time.Since(start).Seconds(), prof.Report(), nil
}

// prefillStall runs one stream decoding through a Batcher with the given
// prefill chunk (0: the whole prompt in one step), sends a prompt tokens
// long once the stream is under way, and returns the longest pause
// between the stream's tokens while that prompt was prefilled and the
// prompt's time to first token.
func prefillStall(ctx context.Context, m *model.Model, prompt, chunk int) (stall, ttft time.Duration, err error) {
	if chunk == 0 {
		chunk = prompt
	}
	b := generate.NewBatcher(generate.BatcherOptions{PrefillChunk: chunk})
	ctx, cancel := context.WithCancel(ctx)
	loop := make(chan error, 1)
	go func() { loop <- b.Run(ctx) }()
	defer func() { cancel(); <-loop }()
	rng := rand.New(rand.NewPCG(11, 11))
	ids := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(rng.IntN(m.Config.VocabSize))
		}
		return out
	}
	long, short := ids(prompt), ids(16)
	var mu sync.Mutex
	var stamps []time.Time
	started := make(chan struct{})
	streamDone := make(chan error, 1)
	streamCtx, stopStream := context.WithCancel(ctx)
	defer stopStream()
	go func() {
		_, err := b.Generate(streamCtx, m, nil, short, []generate.Params{{MaxTokens: m.Config.MaxPositionEmbeddings - 16}}, func(_ int, _ generate.Token) error {
			mu.Lock()
			stamps = append(stamps, time.Now())
			if len(stamps) == 4 {
				close(started)
			}
			mu.Unlock()
			return nil
		})
		streamDone <- err
	}()
	select {
	case <-started:
	case err := <-streamDone:
		return 0, 0, fmt.Errorf("decoding stream: %v", err)
	}
	start := time.Now()
	if _, err := b.Generate(ctx, m, nil, long, []generate.Params{{MaxTokens: 1}}, nil); err != nil {
		return 0, 0, err
	}
	end := time.Now()
	ttft = end.Sub(start)
	stopStream()
	<-streamDone
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(stamps); i++ {
		if stamps[i].After(start) && stamps[i-1].Before(end) {
			stall = max(stall, stamps[i].Sub(stamps[i-1]))
		}
	}
	return stall, ttft, nil
}

// sampleCost is the time to sample one token from a row of logits with
// temperature and top-p, in microseconds.
func sampleCost(vocab int) float64 {
	rng := rand.New(rand.NewPCG(5, 6))
	logits := make([]float32, vocab)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 3)
	}
	seed := uint64(1)
	s, err := generate.NewSampler(generate.Params{Temperature: 0.8, TopP: 0.95, Seed: &seed})
	if err != nil {
		return 0
	}
	const n = 200
	start := time.Now()
	for range n {
		s.Sample(logits)
	}
	return float64(time.Since(start).Microseconds()) / n
}

// serveTimings saves m as a bf16 checkpoint, serves it over HTTP on a
// loopback port, and measures time to first token for a prompt tokens
// long (with the prefill alone timed in-process beside it) and reload to
// first token.
func serveTimings(ctx context.Context, r *engineResult, m *model.Model, tok *tokenizer.Tokenizer, dir string, prompt int) error {
	save := func(d string, mm *model.Model) error {
		if err := mm.Save(d, safetensors.BF16); err != nil {
			return err
		}
		return tok.Save(filepath.Join(d, serve.TokenizerFile))
	}
	first, next := filepath.Join(dir, "v0"), filepath.Join(dir, "v1")
	if err := save(first, m); err != nil {
		return err
	}
	m2, err := model.Init(m.Config, 2)
	if err != nil {
		return err
	}
	if err := save(next, m2); err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	srv, err := serve.New(serve.Options{ModelDir: first, ModelName: "bench"})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	loopDone := make(chan error, 1)
	go func() { loopDone <- srv.Run(ctx) }()
	defer func() { cancel(); <-loopDone }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	base := "http://" + ln.Addr().String()

	rng := rand.New(rand.NewPCG(9, 9))
	ids := make([]int32, prompt)
	for i := range ids {
		ids[i] = int32(rng.IntN(tok.VocabSize()))
	}
	body, _ := json.Marshal(map[string]any{"prompt": ids, "max_tokens": 1, "temperature": 0})
	complete := func() (string, error) {
		resp, err := http.Post(base+"/v1/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("completion: %s: %s", resp.Status, b)
		}
		return resp.Header.Get(serve.WeightsVersionHeader), nil
	}
	if _, err := complete(); err != nil { // warm-up
		return err
	}
	start := time.Now()
	if _, err := complete(); err != nil {
		return err
	}
	r.ttft = time.Since(start)

	var prof model.Profile
	pm := *m
	pm.Profile = &prof
	start = time.Now()
	if _, err := pm.Forward(pm.NewKVCache(), ids, 0); err != nil {
		return err
	}
	r.prefill = time.Since(start)
	r.prefillProfile = prof.Report()

	short, _ := json.Marshal(map[string]any{"prompt": ids[:16], "max_tokens": 1, "temperature": 0})
	rb, _ := json.Marshal(map[string]string{"path": next, "version": "v1"})
	start = time.Now()
	resp, err := http.Post(base+"/admin/reload", "application/json", bytes.NewReader(rb))
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reload: %s: %s", resp.Status, b)
	}
	r.reloadLoad = time.Since(start)
	body = short
	v, err := complete()
	if err != nil {
		return err
	}
	r.reload = time.Since(start)
	r.servedVer = v
	return nil
}

func engineTable(o EngineOptions, results map[string]*engineResult) *Table {
	tab := &Table{Subjects: o.Sizes}
	row := func(name string, f func(r *engineResult) string) {
		cells := map[string]Cell{}
		for size, r := range results {
			cells[size] = Cell{Value: f(r)}
		}
		tab.Rows = append(tab.Rows, Row{Scenario: name, Cells: cells})
	}
	secs := func(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
	row("parameters", func(r *engineResult) string { return fmt.Sprintf("%.1fM", float64(r.params)/1e6) })
	for _, b := range []int{1, 32} {
		for _, w := range []string{"fp32", "bf16"} {
			row(fmt.Sprintf("decode tokens/s, batch %d, %s weights", b, w), func(r *engineResult) string { return fmt.Sprintf("%.1f", r.decode[w][b]) })
			row(fmt.Sprintf("  batch %d step, %s: matmul / attention / other", b, w), func(r *engineResult) string { return r.decodeProfile[w][b].Split() })
		}
	}
	row("  sampling per token (temperature + top-p)", func(r *engineResult) string { return fmt.Sprintf("%.0f µs", r.sampleMicros) })
	row(fmt.Sprintf("time to first token, %d-token prompt, HTTP", o.Prompt), func(r *engineResult) string { return secs(r.ttft) })
	row("  of which prefill (in-process)", func(r *engineResult) string { return secs(r.prefill) })
	row("  prefill: matmul / attention / other", func(r *engineResult) string { return r.prefillProfile.Split() })
	row("  HTTP, tokenizer check, sampling (the rest)", func(r *engineResult) string { return secs(max(0, r.ttft-r.prefill)) })
	for _, chunk := range []int{256, 0} {
		name := "chunks of 256"
		if chunk == 0 {
			name = "whole"
		}
		row(fmt.Sprintf("a %d-token prefill (%s) beside a decoding stream: stream's longest pause", o.Prompt, name), func(r *engineResult) string { return secs(r.stall[chunk]) })
		row("  … the prompt's time to first token", func(r *engineResult) string { return secs(r.promptTTFT[chunk]) })
	}
	row("reload → first token on new weights (bf16)", func(r *engineResult) string { return secs(r.reload) })
	row("  of which /admin/reload", func(r *engineResult) string { return secs(r.reloadLoad) })
	row("  version served after reload", func(r *engineResult) string { return r.servedVer })
	tab.Notes = append(tab.Notes,
		fmt.Sprintf("Arch %s, vocabulary %d, random weights; decode sequences hold a 64-token prompt; %d timed steps per batch size.", o.Arch, o.Vocab, o.Steps),
		"fp32 / bf16 weights: one bf16 checkpoint loaded widened to float32 and kept in bfloat16 (as verisim serve keeps it); compute is float32 and the logits are the same bits either way.",
		"matmul is the projections, the MLP (for MoE the router and experts) and the LM head; attention is Q·Kᵀ, softmax and P·V; other is norms, RoPE, embeddings and residuals.")
	return tab
}
