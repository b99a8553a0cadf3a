// Package config loads pingsvc's configuration.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that reads from JSON strings like "5s".
type Duration time.Duration

// UnmarshalJSON parses a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"5s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Config is pingsvc's configuration.
type Config struct {
	Addr     string   `json:"addr"`
	LogLevel string   `json:"log_level"`
	Timeout  Duration `json:"timeout"`
	MaxConns int      `json:"max_conns"`
	Targets  []string `json:"targets"`
}

// Default returns the configuration used for fields the file leaves out.
func Default() Config {
	return Config{Addr: ":9100", LogLevel: "info", Timeout: Duration(5 * time.Second), MaxConns: 16}
}

var levels = map[string]bool{"debug": true, "info": true, "warn": true, "error": true}

// Load reads the JSON file at path over the defaults, applies the
// PINGSVC_* environment overrides and validates the result.
func Load(path string) (Config, error) {
	c := Default()
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.applyEnv(os.Getenv); err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// applyEnv overrides fields from PINGSVC_* variables that are set and
// non-empty.
func (c *Config) applyEnv(getenv func(string) string) error {
	if v := getenv("PINGSVC_ADDR"); v != "" {
		c.Addr = v
	}
	if v := getenv("PINGSVC_LOG_LEVEL"); v != "" {
		if !levels[v] {
			return fmt.Errorf("PINGSVC_LOG_LEVEL: %q is not debug, info, warn or error", v)
		}
		c.LogLevel = v
	}
	if v := getenv("PINGSVC_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("PINGSVC_TIMEOUT: %w", err)
		}
		c.Timeout = Duration(d)
	}
	if v := getenv("PINGSVC_MAX_CONNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("PINGSVC_MAX_CONNS: %q is not a number", v)
		}
		c.MaxConns = n
	}
	if v := getenv("PINGSVC_TARGETS"); v != "" {
		var targets []string
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				targets = append(targets, t)
			}
		}
		c.Targets = targets
	}
	return nil
}

// Validate checks the values.
func (c Config) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("addr is empty"))
	}
	if !levels[c.LogLevel] {
		errs = append(errs, fmt.Errorf("log_level %q is not debug, info, warn or error", c.LogLevel))
	}
	if c.Timeout <= 0 {
		errs = append(errs, errors.New("timeout must be positive"))
	}
	if c.MaxConns < 1 {
		errs = append(errs, errors.New("max_conns must be at least 1"))
	}
	if len(c.Targets) == 0 {
		errs = append(errs, errors.New("no targets"))
	}
	return errors.Join(errs...)
}
