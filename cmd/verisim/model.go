package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/verisim/verisim/internal/policy"
)

// modelFlags are the flags that name a chat-completions server.
type modelFlags struct {
	url       string
	name      string
	apiKeyEnv string
	retries   int
}

func (m *modelFlags) register(f *pflag.FlagSet) {
	f.StringVar(&m.url, "model", "", "base URL of an OpenAI-compatible chat-completions server (with or without /v1)")
	f.StringVar(&m.name, "model-name", "", "model to ask for (default: the first the server lists at /v1/models)")
	f.StringVar(&m.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the API key (unset: no key)")
	f.IntVar(&m.retries, "retries", 3, "retries of a model request after a connection error, 429 or 5xx")
}

func (m *modelFlags) check() error {
	if m.url == "" {
		return usageErr("--model URL is required: the chat-completions server, e.g. http://localhost:8000")
	}
	if m.retries < 0 {
		return usageErr("--retries cannot be negative")
	}
	return nil
}

// client reads the API key, keeping it out of the environment the agent's
// commands inherit, asks the server for its model when --model-name is
// not given, and returns the client.
func (m *modelFlags) client(ctx context.Context) (*policy.Client, error) {
	apiKey := os.Getenv(m.apiKeyEnv)
	os.Unsetenv(m.apiKeyEnv)
	if m.name == "" {
		name, err := servedModel(ctx, m.url, apiKey)
		if err != nil {
			return nil, withCode(exitFailure, fmt.Errorf("cannot reach the model at %s: %s; check --model, or pass --model-name", m.url, oneLine(err)))
		}
		m.name = name
	}
	c, err := policy.New(policy.Options{BaseURL: m.url, APIKey: apiKey, Model: m.name, MaxRetries: m.retries})
	if err != nil {
		return nil, usageErr("--model: %v", err)
	}
	return c, nil
}
