// Package remote carries the trainer API over HTTP: Handler serves any
// train.Trainer (the built-in one, so that a loop on another machine can
// drive it), and Client is a train.Trainer that calls such a server —
// verisim's own or a PyTorch trainer that implements docs/trainer-api.md.
//
// The wire format is JSON, one POST per operation, with the field names of
// the train package's types. Errors come back as {"error": {"message",
// "code"}}; the code "non_finite" maps to train.ErrNonFinite on the
// client, "invalid_request" to ErrInvalid. A Client is safe for concurrent
// use; the server passes calls through to its Trainer as they arrive (the
// built-in trainer runs one at a time).
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/verisim/verisim/internal/train"
)

// Paths of the operations.
const (
	PathForwardBackward = "/v1/forward_backward"
	PathOptimStep       = "/v1/optim_step"
	PathLogprobs        = "/v1/logprobs"
	PathSave            = "/v1/save"
	PathLoad            = "/v1/load"
	PathHealth          = "/health"
)

// Error codes on the wire.
const (
	CodeInvalid   = "invalid_request"
	CodeNonFinite = "non_finite"
	CodeInternal  = "internal_error"
)

// ErrInvalid is wrapped by a Client's error when the server refused a
// request as malformed (HTTP 400).
var ErrInvalid = errors.New("invalid trainer request")

// MaxBodyBytes bounds a request body: a batch of a few hundred thousand
// tokens with its per-token fields in JSON.
const MaxBodyBytes = 256 << 20

// LogprobsRequest is the body of PathLogprobs.
type LogprobsRequest struct {
	Data []train.Datum `json:"data"`
}

// LogprobsResponse is its answer.
type LogprobsResponse struct {
	Logprobs [][]float32 `json:"logprobs"`
}

// SaveRequest is the body of PathSave.
type SaveRequest struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

// LoadRequest is the body of PathLoad.
type LoadRequest struct {
	Path string `json:"path"`
}

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
}

// Handler serves t's operations. Errors from t are a 422 with code
// non_finite for train.ErrNonFinite, a 400 with invalid_request for
// errors t marks with train.ErrBadInput, and a 500 otherwise.
func Handler(t train.Trainer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathForwardBackward, func(w http.ResponseWriter, r *http.Request) {
		var b train.Batch
		if decode(w, r, &b) {
			m, err := t.ForwardBackward(r.Context(), b)
			reply(w, m, err)
		}
	})
	mux.HandleFunc("POST "+PathOptimStep, func(w http.ResponseWriter, r *http.Request) {
		var empty struct{}
		if decode(w, r, &empty) {
			s, err := t.OptimStep(r.Context())
			reply(w, s, err)
		}
	})
	mux.HandleFunc("POST "+PathLogprobs, func(w http.ResponseWriter, r *http.Request) {
		var req LogprobsRequest
		if decode(w, r, &req) {
			lp, err := t.Logprobs(r.Context(), req.Data)
			reply(w, LogprobsResponse{Logprobs: lp}, err)
		}
	})
	mux.HandleFunc("POST "+PathSave, func(w http.ResponseWriter, r *http.Request) {
		var req SaveRequest
		if !decode(w, r, &req) {
			return
		}
		if req.Path == "" {
			writeError(w, http.StatusBadRequest, CodeInvalid, "save: path is required")
			return
		}
		reply(w, req, t.Save(r.Context(), req.Path, req.Version))
	})
	mux.HandleFunc("POST "+PathLoad, func(w http.ResponseWriter, r *http.Request) {
		var req LoadRequest
		if !decode(w, r, &req) {
			return
		}
		if req.Path == "" {
			writeError(w, http.StatusBadRequest, CodeInvalid, "load: path is required")
			return
		}
		reply(w, req, t.Load(r.Context(), req.Path))
	})
	mux.HandleFunc("GET "+PathHealth, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	return mux
}

// decode reads r's body strictly into v; on failure it answers 400 and
// returns false. An empty body decodes as {}.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, CodeInvalid, fmt.Sprintf("request body: %v", err))
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalid, fmt.Sprintf("request body: %v", err))
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, CodeInvalid, "request body: more than one JSON value")
		return false
	}
	return true
}

func reply(w http.ResponseWriter, v any, err error) {
	switch {
	case err == nil:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	case errors.Is(err, train.ErrNonFinite):
		writeError(w, http.StatusUnprocessableEntity, CodeNonFinite, err.Error())
	case errors.Is(err, train.ErrBadInput):
		writeError(w, http.StatusBadRequest, CodeInvalid, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, CodeInternal, err.Error())
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var e ErrorBody
	e.Error.Message, e.Error.Code = msg, code
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(e)
}

// Client is a train.Trainer served by a remote trainer.
type Client struct {
	base string
	hc   *http.Client
}

var _ train.Trainer = (*Client)(nil)

// Dial returns a client for the trainer at base (http://host:port); hc nil
// uses http.DefaultClient. It checks GET /health first.
func Dial(ctx context.Context, base string, hc *http.Client) (*Client, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	c := &Client{base: strings.TrimRight(base, "/"), hc: hc}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+PathHealth, nil)
	if err != nil {
		return nil, fmt.Errorf("trainer %s: %w", base, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("trainer %s: %w", base, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("trainer %s: health check: %s", base, resp.Status)
	}
	return c, nil
}

// call posts in to path and decodes the answer into out.
func (c *Client) call(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("trainer %s: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("trainer %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("trainer %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("trainer %s: read answer: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e ErrorBody
		if json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
			return fmt.Errorf("trainer %s: %s: %.200s", path, resp.Status, b)
		}
		switch e.Error.Code {
		case CodeNonFinite:
			return fmt.Errorf("trainer %s: %w (%s)", path, train.ErrNonFinite, e.Error.Message)
		case CodeInvalid:
			return fmt.Errorf("trainer %s: %w: %s", path, ErrInvalid, e.Error.Message)
		}
		return fmt.Errorf("trainer %s: %s: %s", path, resp.Status, e.Error.Message)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("trainer %s: decode answer: %w", path, err)
	}
	return nil
}

// ForwardBackward implements train.Trainer.
func (c *Client) ForwardBackward(ctx context.Context, b train.Batch) (train.Metrics, error) {
	var m train.Metrics
	err := c.call(ctx, PathForwardBackward, b, &m)
	return m, err
}

// OptimStep implements train.Trainer.
func (c *Client) OptimStep(ctx context.Context) (train.StepResult, error) {
	var s train.StepResult
	err := c.call(ctx, PathOptimStep, struct{}{}, &s)
	return s, err
}

// Logprobs implements train.Trainer.
func (c *Client) Logprobs(ctx context.Context, data []train.Datum) ([][]float32, error) {
	var r LogprobsResponse
	if err := c.call(ctx, PathLogprobs, LogprobsRequest{Data: data}, &r); err != nil {
		return nil, err
	}
	if len(r.Logprobs) != len(data) {
		return nil, fmt.Errorf("trainer %s: %d rows of logprobs for %d data", PathLogprobs, len(r.Logprobs), len(data))
	}
	return r.Logprobs, nil
}

// Save implements train.Trainer; dir is a path on the trainer's machine.
func (c *Client) Save(ctx context.Context, dir, version string) error {
	var r SaveRequest
	return c.call(ctx, PathSave, SaveRequest{Path: dir, Version: version}, &r)
}

// Load implements train.Trainer; dir is a path on the trainer's machine.
func (c *Client) Load(ctx context.Context, dir string) error {
	var r LoadRequest
	return c.call(ctx, PathLoad, LoadRequest{Path: dir}, &r)
}
