package image

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// aptSource is one repository from apt's configuration.
type aptSource struct {
	types      []string
	uris       []string
	suites     []string
	components []string
	enabled    bool
}

// debianMirror returns the first Debian archive URI that apt, configured
// under aptDir (normally /etc/apt), uses for binary packages from "main".
// Security, ports and debug archives are not mirrors of the main archive
// and are passed over.
func debianMirror(aptDir string) (string, error) {
	files := []string{filepath.Join(aptDir, "sources.list")}
	entries, err := os.ReadDir(filepath.Join(aptDir, "sources.list.d"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	// apt reads the directory in name order, both formats mixed.
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".list") || strings.HasSuffix(e.Name(), ".sources") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		files = append(files, filepath.Join(aptDir, "sources.list.d", n))
	}
	var seen []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		var srcs []aptSource
		if strings.HasSuffix(file, ".sources") {
			srcs = parseDeb822Sources(string(data))
		} else {
			srcs = parseOneLineSources(string(data))
		}
		for _, src := range srcs {
			if !src.enabled || !slices.Contains(src.types, "deb") || !slices.Contains(src.components, "main") {
				continue
			}
			for _, u := range src.uris {
				seen = append(seen, u)
				if isDebianArchive(u) {
					return strings.TrimSuffix(u, "/"), nil
				}
			}
		}
	}
	if len(seen) > 0 {
		return "", fmt.Errorf("no Debian archive among apt's sources in %s (found %s)", aptDir, strings.Join(seen, ", "))
	}
	return "", fmt.Errorf("no apt sources with a main component in %s", aptDir)
}

// isDebianArchive reports whether u looks like the Debian archive or a
// mirror or snapshot of it: one of its path elements is "debian".
func isDebianArchive(u string) bool {
	parsed, err := url.Parse(u)
	if err != nil {
		return false
	}
	switch parsed.Scheme {
	case "http", "https", "file":
	default:
		return false // mirror+file:, cdrom:, tor+http: and the like
	}
	return slices.Contains(strings.Split(parsed.Path, "/"), "debian")
}

// parseOneLineSources reads the classic format:
//
//	deb [ option=value ... ] uri suite [component ...]
func parseOneLineSources(text string) []aptSource {
	var out []aptSource
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			continue
		}
		src := aptSource{types: fields[:1], enabled: true}
		rest := fields[1:]
		if strings.HasPrefix(rest[0], "[") {
			// Options run to the field that closes the bracket.
			var opts []string
			for len(rest) > 0 {
				f := rest[0]
				rest = rest[1:]
				opts = append(opts, f)
				if strings.HasSuffix(f, "]") {
					break
				}
			}
			opt := strings.Trim(strings.Join(opts, " "), "[] ")
			for _, kv := range strings.Fields(opt) {
				if k, v, ok := strings.Cut(kv, "="); ok && k == "enabled" {
					src.enabled = isYes(v)
				}
			}
		}
		if len(rest) < 2 {
			continue
		}
		src.uris = rest[:1]
		src.suites = rest[1:2]
		src.components = rest[2:]
		out = append(out, src)
	}
	return out
}

// parseDeb822Sources reads the deb822 format of *.sources files:
// paragraphs of "Field: value" lines separated by blank lines.
func parseDeb822Sources(text string) []aptSource {
	var out []aptSource
	fields := map[string]string{}
	last := ""
	flush := func() {
		if len(fields) > 0 {
			src := aptSource{
				types:      strings.Fields(fields["types"]),
				uris:       strings.Fields(fields["uris"]),
				suites:     strings.Fields(fields["suites"]),
				components: strings.Fields(fields["components"]),
				enabled:    true,
			}
			if v, ok := fields["enabled"]; ok {
				src.enabled = isYes(strings.TrimSpace(v))
			}
			out = append(out, src)
		}
		fields = map[string]string{}
		last = ""
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			continue
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				fields[last] += " " + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
	}
	flush()
	return out
}

func isYes(v string) bool {
	switch strings.ToLower(v) {
	case "no", "false", "0":
		return false
	}
	return true
}
