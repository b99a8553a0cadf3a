package fidelity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

// ProfileVersion is the version of the profile format this package writes
// and reads.
const ProfileVersion = 1

// ErrProfileVersion is returned for a profile of another format version.
var ErrProfileVersion = errors.New("unsupported fidelity profile version")

// Profile is what every probe observed on a real machine: the reference an
// audit compares a sandbox against. It records process command lines, mount
// points, /etc/passwd, account and tool names and environment variable
// names, but environment values only for PATH, TERM, locale and TZ or when
// they match a marker word, and no machine id; review it before sharing it.
type Profile struct {
	Version    int       `json:"version"`
	CapturedAt time.Time `json:"captured_at"`
	Host       HostInfo  `json:"host"`
	// Observations are keyed by probe name.
	Observations map[string]Observation `json:"observations"`
}

// HostInfo describes the machine a profile was captured on.
type HostInfo struct {
	Kernel string `json:"kernel"`
	Arch   string `json:"arch"`
	Distro string `json:"distro"`
}

// Observation is one probe's facts, or why they could not be gathered.
type Observation struct {
	Facts Facts  `json:"facts,omitempty"`
	Error string `json:"error,omitempty"`
}

// Capture runs every probe's observation on sb, which should be a real
// machine (a sandbox-like object that runs commands on the host directly, as
// its everyday user), and returns the observations as a reference profile.
// A probe that cannot observe is recorded with its error; Capture fails only
// when ctx ends or no probe could observe anything.
func Capture(ctx context.Context, sb sandbox.Sandbox) (*Profile, error) {
	host, err := hostInfo(ctx, sb)
	if err != nil {
		return nil, fmt.Errorf("capture profile on %s: %w", sb.ID(), err)
	}
	probes := Probes()
	obs := make([]Observation, len(probes))
	forEach(ctx, len(probes), defaultConcurrency, func(ctx context.Context, i int) {
		facts, err := probes[i].gather(ctx, sb)
		if err != nil {
			obs[i] = Observation{Error: err.Error()}
			return
		}
		obs[i] = Observation{Facts: facts}
	})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("capture profile on %s: %w", sb.ID(), err)
	}
	p := &Profile{
		Version:      ProfileVersion,
		CapturedAt:   time.Now().UTC(),
		Host:         host,
		Observations: make(map[string]Observation, len(probes)),
	}
	observed := 0
	for i, pr := range probes {
		p.Observations[pr.Name] = obs[i]
		if obs[i].Error == "" {
			observed++
		}
	}
	if observed == 0 {
		return nil, fmt.Errorf("capture profile on %s: no probe could observe (first: %s)", sb.ID(), obs[0].Error)
	}
	return p, nil
}

func hostInfo(ctx context.Context, sb sandbox.Sandbox) (HostInfo, error) {
	f, err := machine{sb: sb, timeout: defaultProbeTimeout}.sh(ctx, `
fact kernel
uname -r
fact arch
uname -m
fact distro
( . /etc/os-release 2>/dev/null && printf '%s\n' "${PRETTY_NAME:-$NAME}" )`)
	if err != nil {
		return HostInfo{}, fmt.Errorf("host facts: %w", err)
	}
	return HostInfo{Kernel: f.get("kernel"), Arch: f.get("arch"), Distro: f.get("distro")}, nil
}

// reference returns the facts a profile holds for pr, or nil when there is
// no profile, the probe failed there, or the profile predates its facts.
func (p *Profile) reference(pr Probe) Facts {
	if p == nil {
		return nil
	}
	o, found := p.Observations[pr.Name]
	if !found || o.Error != "" || !pr.usable(o.Facts) {
		return nil
	}
	return o.Facts
}

// WriteJSON writes the profile as indented JSON.
func (p *Profile) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return fmt.Errorf("write profile: %w", err)
	}
	return nil
}

// ReadProfile decodes a profile written by WriteJSON.
func ReadProfile(r io.Reader) (*Profile, error) {
	var p Profile
	if err := json.NewDecoder(r).Decode(&p); err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	if p.Version != ProfileVersion {
		return nil, fmt.Errorf("read profile: version %d, want %d: %w", p.Version, ProfileVersion, ErrProfileVersion)
	}
	return &p, nil
}

// defaultConcurrency bounds how many probes run at once.
const defaultConcurrency = 8

// forEach calls fn for 0..n-1 with at most limit calls in flight and waits
// for all of them. Once ctx ends, calls not yet started are skipped.
func forEach(ctx context.Context, n, limit int, fn func(ctx context.Context, i int)) {
	if limit <= 0 {
		limit = defaultConcurrency
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(ctx, i)
		})
	}
	wg.Wait()
}
