package persona

import (
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/verisim/verisim/internal/sandbox"
)

// Persona is the developer who owns a sandbox machine. Field names follow
// the YAML keys of a persona file; see default.yaml for a complete example.
type Persona struct {
	// UserName is the login name ("maya").
	UserName string `yaml:"user"`
	// FullName goes into /etc/passwd's GECOS field and ~/.gitconfig.
	FullName string `yaml:"full_name"`
	Email    string `yaml:"email"`
	UID      uint32 `yaml:"uid"`
	GID      uint32 `yaml:"gid"`
	Home     string `yaml:"home"`
	// Shell is the login shell, an absolute path inside the image.
	Shell    string `yaml:"shell"`
	Hostname string `yaml:"hostname"`
	// Timezone is an IANA name; it lands in /etc/localtime, never in TZ.
	Timezone string `yaml:"timezone"`
	// Locale becomes LANG and /etc/default/locale.
	Locale string `yaml:"locale"`
	// EnvVars are extra login environment variables. A value may start
	// each colon-separated element with "~/" or use $HOME; both expand to
	// Home. Missing PATH, EDITOR, VISUAL, TERM and COLORTERM get defaults.
	EnvVars map[string]string `yaml:"env,omitempty"`
	// Dotfiles maps paths relative to Home to contents; they replace or
	// add to the generated ones.
	Dotfiles map[string]string `yaml:"dotfiles,omitempty"`
	// History is ~/.bash_history, oldest first; empty means generated.
	History []string `yaml:"history,omitempty"`
	// WorkspaceTemplate says where repositories live: "~/src/{repo}".
	WorkspaceTemplate string `yaml:"workspace"`
	// Seed drives everything randomised (history, timestamps, hashes, keys,
	// machine-id). A file without one gets a seed derived from the identity.
	Seed uint64 `yaml:"seed"`

	// Now is the moment the machine is "used"; generated timestamps lie
	// before it. The zero value means time.Now() at each call.
	Now time.Time `yaml:"-"`

	// groups are the supplementary gids WriteLayer found in the base image.
	groups []uint32
}

//go:embed default.yaml
var defaultYAML []byte

// Default returns a fresh copy of the built-in persona, a developer whose
// machine looks lived in.
func Default() *Persona {
	p, err := parse("default.yaml", defaultYAML, "")
	if err != nil {
		panic("persona: embedded default.yaml is invalid: " + err.Error())
	}
	return p
}

// Load reads and validates a persona file. Errors name the file, line and
// field, and say how to fix the value.
func Load(path string) (*Persona, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read persona: %w", err)
	}
	return Parse(path, data)
}

// Parse is Load for data already in memory; name is used in errors.
func Parse(name string, data []byte) (*Persona, error) {
	return parse(name, data, zoneinfoDir)
}

// Marshal encodes p as a persona file that Parse reads back to an equal
// Persona (Now excepted).
func (p *Persona) Marshal() ([]byte, error) {
	out, err := yaml.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("marshal persona %s: %w", p.UserName, err)
	}
	return out, nil
}

// User is the account commands run as. Groups starts with the primary gid,
// as after a real login; the supplementary groups (sudo, adm, ...) are known
// only once WriteLayer has read the base image's /etc/group.
func (p *Persona) User() sandbox.User {
	groups := append([]uint32{p.GID}, p.groups...)
	return sandbox.User{Name: p.UserName, UID: p.UID, GID: p.GID, Groups: groups, Home: p.Home}
}

// Env is the environment of a login shell of the persona, sorted by name.
// TZ is deliberately absent: real machines take the zone from /etc/localtime.
func (p *Persona) Env() []string {
	vars := map[string]string{
		"HOME":    p.Home,
		"USER":    p.UserName,
		"LOGNAME": p.UserName,
		"SHELL":   p.Shell,
		"LANG":    p.Locale,
	}
	for k, v := range p.EnvVars {
		vars[k] = p.expandHome(v)
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// Workspace is the absolute path, inside the sandbox, where repo is
// checked out.
func (p *Persona) Workspace(repo string) string {
	return p.expandHome(strings.ReplaceAll(p.WorkspaceTemplate, "{repo}", repo))
}

// workspaceRoot is the directory the persona clones repositories into:
// ~/src for ~/src/{repo}.
func (p *Persona) workspaceRoot() string {
	prefix, _, _ := strings.Cut(p.Workspace("\x00"), "\x00")
	return path.Dir(prefix + "x")
}

// OpaqueDirs lists the directories of a WriteLayer layer that must hide
// whatever the layers below hold there (overlayfs "opaque" directories):
// the parent of the home directory, so that the base image's own users'
// homes do not show through.
func (p *Persona) OpaqueDirs() []string {
	parent := filepath.Dir(p.Home)
	if parent == "/" {
		return []string{p.Home}
	}
	return []string{parent}
}

// expandHome replaces "~" at the start of each colon-separated element, and
// $HOME or ${HOME} anywhere, with the home directory.
func (p *Persona) expandHome(s string) string {
	s = strings.ReplaceAll(s, "${HOME}", p.Home)
	s = strings.ReplaceAll(s, "$HOME", p.Home)
	parts := strings.Split(s, ":")
	for i, part := range parts {
		if part == "~" {
			parts[i] = p.Home
		} else if strings.HasPrefix(part, "~/") {
			parts[i] = p.Home + part[1:]
		}
	}
	return strings.Join(parts, ":")
}

func (p *Persona) now() time.Time {
	if p.Now.IsZero() {
		return time.Now()
	}
	return p.Now
}

// rand returns a generator for one purpose. Each purpose has its own
// stream, so adding draws for one output never shifts another.
func (p *Persona) rand(purpose string) *rand.Rand {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], p.Seed)
	h.Write(b[:])
	h.Write([]byte(purpose))
	var seed [32]byte
	copy(seed[:], h.Sum(nil))
	return rand.New(rand.NewChaCha8(seed))
}

// location is the persona's time zone as the host knows it, UTC when the
// host lacks zone data.
func (p *Persona) location() *time.Location {
	loc, err := time.LoadLocation(p.Timezone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// accountCreated is when the persona's account was made: between three
// months and a year and a half before now. Every generated timestamp (home,
// /etc, repository) is consistent with it.
func (p *Persona) accountCreated(now time.Time) time.Time {
	r := p.rand("account-created")
	age := 90*24*time.Hour + time.Duration(r.Int64N(int64(450*24*time.Hour)))
	return now.Add(-age)
}
