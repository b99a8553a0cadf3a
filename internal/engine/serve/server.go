package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/verisim/verisim/internal/engine/generate"
	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/tokenizer"
)

// TokenizerFile is the tokenizer's file name in a checkpoint directory.
const TokenizerFile = "tokenizer.json"

// WeightsVersionHeader carries the version of the weights that served a
// response.
const WeightsVersionHeader = "X-Weights-Version"

// maxBodyBytes bounds a request body.
const maxBodyBytes = 16 << 20

// Options configures a Server.
type Options struct {
	// ModelDir is the checkpoint directory: config.json, the safetensors
	// weights and tokenizer.json.
	ModelDir string
	// ModelName is the id /v1/models lists and requests must name (or
	// leave empty); default the base name of ModelDir.
	ModelName string
	// WeightsVersion names the weights loaded from ModelDir; default "0".
	WeightsVersion string
	// MaxN is the largest n a request may ask for; default 8.
	MaxN int
	// MaxBatch is the most sequences one decode step runs together;
	// default 32.
	MaxBatch int
	// PrefillChunk is the most prompt tokens one decode step prefills
	// alongside its sequences (generate.BatcherOptions); default 256.
	PrefillChunk int
	// Logger receives one line per failed request and per reload; default
	// discards.
	Logger *slog.Logger
}

// Server serves one model over HTTP. Create it with New.
type Server struct {
	name   string
	maxN   int
	log    *slog.Logger
	tok    *tokenizer.Tokenizer
	cur    atomic.Pointer[weights]
	reload sync.Mutex // serialises reloads
	met    *metrics
	batch  *generate.Batcher

	// onToken, when set (by tests), runs after each streamed token is
	// written.
	onToken func()
}

// weights is what a request takes once at its start: the model and the
// version it is served as.
type weights struct {
	m       *model.Model
	version string
}

// New loads the checkpoint in opts.ModelDir and returns a Server for it.
func New(opts Options) (*Server, error) {
	if opts.ModelDir == "" {
		return nil, errors.New("serve: no model directory")
	}
	if opts.ModelName == "" {
		opts.ModelName = filepath.Base(filepath.Clean(opts.ModelDir))
	}
	if opts.WeightsVersion == "" {
		opts.WeightsVersion = "0"
	}
	if opts.MaxN == 0 {
		opts.MaxN = 8
	}
	if opts.MaxN < 0 {
		return nil, fmt.Errorf("serve: MaxN %d, want > 0", opts.MaxN)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	tokPath := filepath.Join(opts.ModelDir, TokenizerFile)
	if _, err := os.Stat(tokPath); err != nil {
		return nil, fmt.Errorf("serve: tokenizer %s: %w", tokPath, err)
	}
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		return nil, fmt.Errorf("serve: load tokenizer %s: %w", tokPath, err)
	}
	m, err := model.LoadWith(opts.ModelDir, loadOptions)
	if err != nil {
		return nil, fmt.Errorf("serve: load model %s: %w", opts.ModelDir, err)
	}
	if tok.VocabSize() > m.Config.VocabSize {
		return nil, fmt.Errorf("serve: tokenizer has %d ids, model vocab_size is %d", tok.VocabSize(), m.Config.VocabSize)
	}
	s := &Server{
		name: opts.ModelName,
		maxN: opts.MaxN,
		log:  opts.Logger.With("model", opts.ModelName),
		tok:  tok,
		met:  newMetrics(),
	}
	s.batch = generate.NewBatcher(generate.BatcherOptions{MaxBatch: opts.MaxBatch, PrefillChunk: opts.PrefillChunk, Observe: func(batch, active int) {
		if batch > 0 {
			s.met.batchSize.Observe(float64(batch))
		}
		s.met.active.Set(float64(active))
	}})
	s.cur.Store(&weights{m: m, version: opts.WeightsVersion})
	return s, nil
}

// Run decodes the requests the handler receives, batching concurrent
// ones, until ctx ends; requests still generating then fail. Run must be
// running while the handler serves.
func (s *Server) Run(ctx context.Context) error {
	defer s.met.active.Set(0)
	return s.batch.Run(ctx)
}

// WeightsVersion is the version of the weights new requests are served by.
func (s *Server) WeightsVersion() string { return s.cur.Load().version }

// Handler returns the HTTP handler serving every endpoint.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern, endpoint string, h http.HandlerFunc) {
		mux.Handle(pattern, s.instrument(endpoint, h))
	}
	route("POST /v1/chat/completions", "chat_completions", s.handleChat)
	route("POST /v1/completions", "completions", s.handleCompletions)
	route("GET /v1/models", "models", s.handleModels)
	route("POST /tokenize", "tokenize", s.handleTokenize)
	route("POST /detokenize", "detokenize", s.handleDetokenize)
	route("GET /health", "health", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	route("POST /admin/reload", "reload", s.handleReload)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{}))
	return mux
}

// metrics are a Server's Prometheus collectors, in a registry of its own.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	inFlight  prometheus.Gauge
	generated prometheus.Counter
	prompt    prometheus.Counter
	reloads   *prometheus.CounterVec
	malformed prometheus.Counter
	batchSize prometheus.Histogram
	active    prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "verisim_serve_requests_total",
			Help: "HTTP requests served, by endpoint and status code.",
		}, []string{"endpoint", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "verisim_serve_request_duration_seconds",
			Help: "Request durations; divide verisim_serve_generated_tokens_total's rate by this sum's rate for tokens/s.",
			// 5 ms to about 10 min.
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 18),
		}, []string{"endpoint"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "verisim_serve_in_flight_requests",
			Help: "Requests being served now.",
		}),
		generated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "verisim_serve_generated_tokens_total",
			Help: "Completion tokens generated, over all choices.",
		}),
		prompt: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "verisim_serve_prompt_tokens_total",
			Help: "Prompt tokens prefilled, once per choice.",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "verisim_serve_reloads_total",
			Help: "Weight reloads, by result (ok, refused, failed).",
		}, []string{"result"}),
		malformed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "verisim_serve_malformed_tool_calls_total",
			Help: "<tool_call> blocks that did not parse and were left in the content.",
		}),
	}
	m.batchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "verisim_serve_batch_size",
		Help:    "Sequences decoded together per decode step.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
	})
	m.active = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "verisim_serve_active_sequences",
		Help: "Sequences being decoded or waiting for their turn in a decode step (the queue depth).",
	})
	m.reg.MustRegister(m.requests, m.duration, m.inFlight, m.generated, m.prompt, m.reloads, m.malformed, m.batchSize, m.active)
	return m
}

// statusWriter records the status code a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) instrument(endpoint string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.met.inFlight.Inc()
		defer s.met.inFlight.Dec()
		sw := &statusWriter{ResponseWriter: w}
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		h(sw, r)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		if r.Context().Err() != nil && status == http.StatusOK {
			status = 499 // client closed the request, as nginx counts it
		}
		s.met.requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
		s.met.duration.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
	})
}

// apiError is an error in OpenAI's wire shape.
type apiError struct {
	status  int
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func badRequest(param, format string, args ...any) *apiError {
	e := &apiError{status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...), Type: "invalid_request_error"}
	if param != "" {
		e.Param = &param
	}
	return e
}

func withCode(e *apiError, status int, code string) *apiError {
	e.status, e.Code = status, &code
	return e
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		s.log.Error("request failed", "path", r.URL.Path, "err", err)
		e = &apiError{status: http.StatusInternalServerError, Message: err.Error(), Type: "server_error"}
	}
	writeJSON(w, e.status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decodeStrict decodes exactly one JSON value from r into v, refusing
// unknown fields and trailing data.
func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var maxErr *http.MaxBytesError
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &maxErr):
			return withCode(badRequest("", "request body larger than %d bytes", maxErr.Limit), http.StatusRequestEntityTooLarge, "body_too_large")
		case errors.As(err, &typeErr) && typeErr.Field != "":
			// Fields of embedded structs are reported with the struct's name.
			field := strings.TrimPrefix(typeErr.Field, "sampling.")
			return badRequest(field, "invalid JSON: field %q must be %s, got %s", field, typeErr.Type, typeErr.Value)
		case errors.Is(err, io.EOF):
			return badRequest("", "invalid JSON: empty body")
		}
		var apiErr *apiError
		if errors.As(err, &apiErr) {
			return apiErr
		}
		return badRequest("", "invalid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("", "invalid JSON: data after the request object")
	}
	return nil
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (s *Server) checkModel(name string) error {
	if name != "" && name != s.name {
		return withCode(badRequest("model", "model %q does not exist; this server serves %q", name, s.name), http.StatusNotFound, "model_not_found")
	}
	return nil
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	cur := s.cur.Load()
	w.Header().Set(WeightsVersionHeader, cur.version)
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id":              s.name,
			"object":          "model",
			"created":         0,
			"owned_by":        "verisim",
			"max_model_len":   cur.m.Config.MaxPositionEmbeddings,
			"weights_version": cur.version,
		}},
	})
}

type reloadRequest struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

func (s *Server) handleReload(w http.ResponseWriter, r *http.Request) {
	var req reloadRequest
	if err := decodeStrict(r.Body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Path == "" {
		s.writeError(w, r, badRequest("path", "path is required"))
		return
	}
	if req.Version == "" {
		s.writeError(w, r, badRequest("version", "version is required"))
		return
	}
	s.reload.Lock()
	defer s.reload.Unlock()
	m, err := model.LoadWith(req.Path, loadOptions)
	if err != nil {
		s.met.reloads.WithLabelValues("failed").Inc()
		s.log.Warn("reload failed", "path", req.Path, "err", err)
		s.writeError(w, r, badRequest("path", "load %s: %v", req.Path, err))
		return
	}
	old := s.cur.Load()
	if field, was, now, ok := configDiff(old.m.Config, m.Config); !ok {
		s.met.reloads.WithLabelValues("refused").Inc()
		s.writeError(w, r, withCode(badRequest("path", "checkpoint %s does not match the serving model: %s is %s, serving %s; still serving version %q", req.Path, field, now, was, old.version), http.StatusConflict, "config_mismatch"))
		return
	}
	s.cur.Store(&weights{m: m, version: req.Version})
	s.met.reloads.WithLabelValues("ok").Inc()
	s.log.Info("reloaded weights", "path", req.Path, "from", old.version, "to", req.Version)
	w.Header().Set(WeightsVersionHeader, req.Version)
	writeJSON(w, http.StatusOK, map[string]any{"weights_version": req.Version, "previous_version": old.version})
}

// loadOptions keep a bf16 checkpoint's matrices in bfloat16: half the
// memory and half the bytes a batch-1 decode step reads, with the same
// logits bit for bit as widened weights (model.LoadOptions).
var loadOptions = model.LoadOptions{KeepBF16: true}

// configDiff compares two configs field by field as config.json spells
// them, ignoring torch_dtype (compute is float32 whatever the storage), and
// returns the first field that differs.
func configDiff(a, b model.Config) (field, av, bv string, same bool) {
	a.TorchDType, b.TorchDType = "", ""
	ma, mb := configFields(a), configFields(b)
	keys := make([]string, 0, len(ma)+len(mb))
	for k := range ma {
		keys = append(keys, k)
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if string(ma[k]) != string(mb[k]) {
			return k, string(ma[k]), string(mb[k]), false
		}
	}
	return "", "", "", true
}

func configFields(c model.Config) map[string]json.RawMessage {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("marshal config: %v", err)) // a plain struct always marshals
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		panic(fmt.Sprintf("unmarshal config: %v", err))
	}
	return m
}
