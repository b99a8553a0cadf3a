// Package ini reads INI configuration files.
package ini

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// File is a parsed INI file: section -> key -> value. Keys before the first
// section header are in section "".
type File struct {
	sections map[string]map[string]string
	order    []string
}

// Parse reads an INI file.
func Parse(r io.Reader) (*File, error) {
	f := &File{sections: map[string]map[string]string{"": {}}, order: []string{""}}
	section := ""
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return nil, fmt.Errorf("ini: line %d: unterminated section header", n)
			}
			section = strings.ToLower(strings.TrimSpace(line[1:end]))
			if _, ok := f.sections[section]; !ok {
				f.sections[section] = map[string]string{}
				f.order = append(f.order, section)
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("ini: line %d: expected key = value", n)
		}
		key = strings.ToLower(strings.TrimSpace(key))
		if key == "" {
			return nil, fmt.Errorf("ini: line %d: empty key", n)
		}
		v, err := parseValue(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("ini: line %d: %v", n, err)
		}
		f.sections[section][key] = v
	}
	return f, sc.Err()
}

func parseValue(s string) (string, error) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s, nil
	}
	var b strings.Builder
	in := s[1 : len(s)-1]
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c == '\\' {
			if i+1 == len(in) || (in[i+1] != '"' && in[i+1] != '\\') {
				return "", fmt.Errorf("bad escape in %s", s)
			}
			i++
			c = in[i]
		} else if c == '"' {
			return "", fmt.Errorf("unescaped quote in %s", s)
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// Get returns the value of key in section.
func (f *File) Get(section, key string) (string, bool) {
	v, ok := f.sections[strings.ToLower(section)][strings.ToLower(key)]
	return v, ok
}

// String returns the value of key in section, or def.
func (f *File) String(section, key, def string) string {
	if v, ok := f.Get(section, key); ok {
		return v
	}
	return def
}

// Int returns the value of key in section as an int, or def when it is
// missing or not a number.
func (f *File) Int(section, key string, def int) int {
	v, ok := f.Get(section, key)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return def
	}
	return n
}

// Bool returns the value of key in section as a bool (true/false, yes/no,
// on/off, 1/0), or def.
func (f *File) Bool(section, key string, def bool) bool {
	v, ok := f.Get(section, key)
	if !ok {
		return def
	}
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true
	case "false", "no", "off", "0":
		return false
	}
	return def
}

// Sections lists the section names in the order they first appeared,
// starting with "".
func (f *File) Sections() []string { return append([]string(nil), f.order...) }
