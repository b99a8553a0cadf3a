package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/verisim/verisim/internal/engine/serve"
)

func (a *app) serveCmd() *cobra.Command {
	var (
		dir, addr, name, version string
		maxN, maxBatch, port     int
		prefillChunk             int
	)
	c := &cobra.Command{
		Use:   "serve --model DIR [--addr HOST:PORT | --port N]",
		Short: "Serve a built-in model over an OpenAI-compatible API",
		Long: `Serves the model in DIR (config.json, safetensors, tokenizer.json, as
"verisim model init" writes them) over the OpenAI chat-completions and
completions API, with verisim's extensions for RL: prompt and completion
token ids, per-token logprobs and the serving weights' version (also the
X-Weights-Version header). POST /admin/reload {"path", "version"} swaps in
new weights without dropping requests: a request finishes on the weights it
started with. GET /metrics is Prometheus, GET /health the liveness check.`,
		Example: `  verisim serve --model models/tiny
  verisim serve --model models/tiny --addr 127.0.0.1:8000 --name tiny
  verisim serve --model models/tiny --port 8001
  verisim agent --model http://127.0.0.1:8000 "explain main.go"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usageErr("--model DIR is required (see verisim model init)")
			}
			if maxBatch < 1 || prefillChunk < 1 {
				return usageErr("--max-batch %d, --prefill-chunk %d: both must be at least 1", maxBatch, prefillChunk)
			}
			if port != 0 {
				if port < 0 || port > 65535 {
					return usageErr("--port %d: want 1..65535", port)
				}
				host, _, err := net.SplitHostPort(addr)
				if err != nil {
					return usageErr("--addr %s: %v", addr, err)
				}
				addr = net.JoinHostPort(host, strconv.Itoa(port))
			}
			srv, err := serve.New(serve.Options{ModelDir: dir, ModelName: name, WeightsVersion: version, MaxN: maxN, MaxBatch: maxBatch, PrefillChunk: prefillChunk, Logger: a.log})
			if err != nil {
				return withCode(exitFailure, err)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return usageErr("--addr %s: %v", addr, err)
			}
			hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second}
			fmt.Fprintf(os.Stderr, "serving %s on http://%s\n", dir, ln.Addr())
			// The decode loop outlives the HTTP server's shutdown, so
			// requests in flight during it finish.
			loopCtx, stopLoop := context.WithCancel(context.WithoutCancel(cmd.Context()))
			loopDone := make(chan error, 1)
			go func() { loopDone <- srv.Run(loopCtx) }()
			defer func() { stopLoop(); <-loopDone }()
			return serveUntilDone(cmd.Context(), hs, ln)
		},
	}
	f := c.Flags()
	f.StringVar(&dir, "model", "", "model directory (config.json, safetensors, tokenizer.json)")
	f.StringVar(&addr, "addr", "127.0.0.1:8000", "address to listen on")
	f.IntVar(&port, "port", 0, "port to listen on, on --addr's host (overrides --addr's port)")
	f.StringVar(&name, "name", "", "model name the API reports (default: the directory's name)")
	f.StringVar(&version, "weights-version", "", "version of the weights being served (default: 0)")
	f.IntVar(&maxN, "max-n", 8, "most samples one request may ask for (n)")
	f.IntVar(&maxBatch, "max-batch", 32, "most sequences decoded together in one step")
	f.IntVar(&prefillChunk, "prefill-chunk", 256, "most prompt tokens one step prefills alongside the sequences it decodes")
	return c
}

// serveUntilDone serves hs on ln until ctx ends, then shuts it down
// gracefully (requests in flight get 30 s to finish).
func serveUntilDone(ctx context.Context, hs *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return withCode(exitFailure, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return withCode(exitFailure, err)
	}
	return nil
}
