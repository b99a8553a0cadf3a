package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

var (
	// ErrUnavailable means the model server could not be reached, timed out,
	// or kept answering 429/5xx until the retries ran out. It is an
	// infrastructure failure, never the policy's.
	ErrUnavailable = errors.New("policy server unavailable")
	// ErrBadResponse means a 2xx answer that is not a usable chat completion.
	ErrBadResponse = errors.New("bad policy server response")
)

// StatusError is an HTTP answer outside 2xx. The server refused the request
// (or, wrapped in ErrUnavailable, kept failing with it).
type StatusError struct {
	Code int
	Body string // the start of the response body
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("policy server answered %d %s", e.Code, http.StatusText(e.Code))
	}
	return fmt.Sprintf("policy server answered %d %s: %s", e.Code, http.StatusText(e.Code), e.Body)
}

// Header names the client sends and reads.
const (
	HeaderSessionID      = "X-Session-ID"
	HeaderWeightsVersion = "X-Weights-Version"
)

const (
	defaultTimeout     = 10 * time.Minute
	defaultBackoffBase = 500 * time.Millisecond
	defaultBackoffMax  = 30 * time.Second
	maxRetryAfter      = 5 * time.Minute
	maxBodyBytes       = 256 << 20 // a long prompt's ids are a few MB of JSON
	maxErrorBody       = 4 << 10
)

// Options configure a Client. Only BaseURL and Model are required.
type Options struct {
	// BaseURL is the server's root, with or without the trailing /v1:
	// "http://host:8000" and "http://host:8000/v1/" are the same server.
	BaseURL string
	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>". The
	// caller reads it from wherever it is kept; this package reads no
	// environment.
	APIKey string
	Model  string
	// Timeout bounds each attempt, body included (default 10 minutes; a
	// negative value means none). The whole call is bounded by ctx.
	Timeout time.Duration
	// MaxRetries is how many times a transient failure is retried after the
	// first attempt; 0 means no retries.
	MaxRetries int
	// BackoffBase and BackoffMax shape the wait before retry n: a uniformly
	// random duration in [0, min(BackoffMax, BackoffBase·2ⁿ)) ("full
	// jitter"), or the server's Retry-After when that is longer (at most 5
	// minutes). Defaults 500ms and 30s.
	BackoffBase, BackoffMax time.Duration
	// HTTPClient sends the requests (default: a client with no timeout of
	// its own; Timeout applies per attempt).
	HTTPClient *http.Client
	// SessionID, when set, is sent as X-Session-ID on every request; see
	// Client.WithSession to share one Client among episodes.
	SessionID string
	// StandardOnly sends only standard OpenAI fields, for hosted APIs that
	// reject unknown ones; token ids are then whatever the server volunteers.
	StandardOnly bool
}

// Client calls one chat-completions endpoint. It is safe for concurrent use.
type Client struct {
	endpoint string
	opts     Options
	hc       *http.Client
}

// New returns a client for opts, or an error if BaseURL is not an http(s)
// URL or Model is empty.
func New(opts Options) (*Client, error) {
	endpoint, err := chatEndpoint(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	if opts.Model == "" {
		return nil, errors.New("policy client: no model name")
	}
	if opts.MaxRetries < 0 {
		return nil, fmt.Errorf("policy client: MaxRetries %d is negative", opts.MaxRetries)
	}
	if opts.Timeout == 0 {
		opts.Timeout = defaultTimeout
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = defaultBackoffBase
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = defaultBackoffMax
	}
	opts.BackoffMax = max(opts.BackoffMax, opts.BackoffBase)
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{endpoint: endpoint, opts: opts, hc: hc}, nil
}

// chatEndpoint turns a base URL, given with or without /v1, into the
// chat-completions URL.
func chatEndpoint(base string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		return "", fmt.Errorf("policy client: base URL %q: %w", base, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("policy client: base URL %q is not an http(s) URL with a host", base)
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/v1")
	u.Path = p + "/v1/chat/completions"
	u.RawPath = ""
	return u.String(), nil
}

// Endpoint is the URL requests are posted to.
func (c *Client) Endpoint() string { return c.endpoint }

// Model is the model name requests ask for.
func (c *Client) Model() string { return c.opts.Model }

// WithSession returns a client that shares c's connections and settings but
// sends id as its session-affinity header.
func (c *Client) WithSession(id string) *Client {
	d := *c
	d.opts.SessionID = id
	return &d
}

// Complete sends one chat-completion request, retrying transient failures,
// and returns the first choice. Errors are ErrUnavailable, ErrBadResponse,
// *StatusError, or ctx's error when ctx ends first.
func (c *Client) Complete(ctx context.Context, req Request) (*Response, error) {
	if len(req.Messages) == 0 {
		return nil, errors.New("chat completion: no messages")
	}
	body, err := json.Marshal(c.wireRequest(req))
	if err != nil {
		return nil, fmt.Errorf("chat completion: encode request: %w", err)
	}
	started := time.Now()
	for attempt := 0; ; attempt++ {
		resp, err := c.attempt(ctx, body)
		if err == nil {
			resp.Attempts = attempt + 1
			resp.Started = started
			resp.Duration = time.Since(started)
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("chat completion: %w", context.Cause(ctx))
		}
		var t *transient
		if !errors.As(err, &t) {
			return nil, fmt.Errorf("chat completion: %w", err)
		}
		if attempt >= c.opts.MaxRetries {
			return nil, fmt.Errorf("chat completion: %w after %d attempts: %w", ErrUnavailable, attempt+1, t.err)
		}
		wait := c.backoff(attempt, t.retryAfter)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("chat completion: %w (while waiting to retry after: %w)", context.Cause(ctx), t.err)
		case <-timer.C:
		}
	}
}

// transient marks a failure worth retrying.
type transient struct {
	err        error
	retryAfter time.Duration // the server's Retry-After, 0 if none
}

func (t *transient) Error() string { return t.err.Error() }
func (t *transient) Unwrap() error { return t.err }

// backoff is the full-jitter wait before retry number attempt+1, or the
// server's Retry-After when that is longer.
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	ceiling := c.opts.BackoffMax
	if attempt < 62 {
		if d := c.opts.BackoffBase << attempt; d > 0 && d < ceiling {
			ceiling = d
		}
	}
	wait := rand.N(ceiling)
	return max(wait, min(retryAfter, maxRetryAfter))
}

func (c *Client) attempt(ctx context.Context, body []byte) (*Response, error) {
	if c.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if c.opts.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	if c.opts.SessionID != "" {
		hreq.Header.Set(HeaderSessionID, c.opts.SessionID)
	}
	hresp, err := c.hc.Do(hreq)
	if err != nil {
		return nil, &transient{err: err}
	}
	defer hresp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(hresp.Body, maxBodyBytes+1))
	if err != nil {
		return nil, &transient{err: fmt.Errorf("read response body: %w", err)}
	}
	if code := hresp.StatusCode; code < 200 || code > 299 {
		serr := &StatusError{Code: code, Body: errorBody(data)}
		if code == http.StatusTooManyRequests || code >= 500 {
			return nil, &transient{err: serr, retryAfter: parseRetryAfter(hresp.Header.Get("Retry-After"), time.Now())}
		}
		return nil, serr
	}
	if len(data) > maxBodyBytes {
		return nil, fmt.Errorf("%w: body larger than %d bytes", ErrBadResponse, maxBodyBytes)
	}
	resp, err := parseResponse(data)
	if err != nil {
		return nil, err
	}
	if v := strings.TrimSpace(hresp.Header.Get(HeaderWeightsVersion)); v != "" {
		resp.WeightsVersion = v
	}
	return resp, nil
}

func errorBody(b []byte) string {
	if len(b) > maxErrorBody {
		b = b[:maxErrorBody]
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
}

// parseRetryAfter reads Retry-After as delay-seconds or an HTTP date; 0 if
// absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		if s > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
