package task

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// IDFrom turns a name from elsewhere (an instance id, a directory, a Go
// identifier) into task id material: lower case, [a-z0-9._-], runs of
// anything else as one '-', no leading punctuation. It returns "" when
// nothing is left.
func IDFrom(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimLeft(strings.TrimRight(b.String(), "-"), "-._")
}

// WriteFile writes t as dir/task.yaml after checking that it parses back:
// a tool that writes tasks must never produce one the loader rejects.
func WriteFile(dir string, t *Task) error {
	data, err := Encode(t)
	if err != nil {
		return fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	file := filepath.Join(dir, FileName)
	if _, err := Parse(file, data); err != nil {
		return fmt.Errorf("task %s would not load: %w", t.ID, err)
	}
	return os.WriteFile(file, data, 0o644)
}

// ShellQuote quotes s for bash when it holds anything but plain word
// characters, for the scripts (solve.sh, grade commands) tools write.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
