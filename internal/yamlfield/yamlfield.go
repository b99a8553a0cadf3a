// Package yamlfield is what verisim's YAML file readers (personas, tasks)
// share to report every problem of a file at once, each naming the file,
// the line and the field, with a suggestion for a misspelt key.
package yamlfield

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/verisim/verisim/internal/lazyregexp"
)

// FieldError is one problem in a file.
type FieldError struct {
	File string
	Line int
	// Field is the dotted key, with "[i]" for a list entry ("grade.format",
	// "history[3]"); empty for the file as a whole.
	Field string
	// Problem says what is wrong and how to fix it.
	Problem string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Problem)
	}
	return fmt.Sprintf("%s:%d: field %q: %s", e.File, e.Line, e.Field, e.Problem)
}

// Errors collects the problems of one file.
type Errors struct {
	File string
	list []*FieldError
}

// Add records a problem at line in field.
func (e *Errors) Add(line int, field, format string, args ...any) {
	e.list = append(e.list, &FieldError{File: e.File, Line: line, Field: field, Problem: fmt.Sprintf(format, args...)})
}

// Failed reports whether field, or an entry of it, already has a problem.
func (e *Errors) Failed(field string) bool {
	for _, fe := range e.list {
		if fe.Field == field || strings.HasPrefix(fe.Field, field+".") || strings.HasPrefix(fe.Field, field+"[") {
			return true
		}
	}
	return false
}

// Err returns nil, the one problem, or all of them joined, in line order.
func (e *Errors) Err() error {
	if len(e.list) == 0 {
		return nil
	}
	sort.SliceStable(e.list, func(i, j int) bool { return e.list[i].Line < e.list[j].Line })
	if len(e.list) == 1 {
		return e.list[0]
	}
	errs := make([]error, len(e.list))
	for i, fe := range e.list {
		errs[i] = fe
	}
	return errors.Join(errs...)
}

var lineRE = lazyregexp.New(`^yaml: line (\d+): (.*)$`)

// Syntax turns a YAML parser error into a FieldError at its line.
func Syntax(file string, err error) *FieldError {
	if m := lineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &FieldError{File: file, Line: line, Problem: "invalid YAML: " + m[2]}
	}
	return &FieldError{File: file, Line: 1, Problem: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
}

// Deref follows aliases to the node they name.
func Deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// Kind names a node's kind for a message: "a mapping", "a list", "a single
// value", "nothing".
func Kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "nothing"
		}
		return "a single value"
	}
	return "something else"
}

// Describe is a scalar's value, quoted, or Kind for anything else.
func Describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
		return strconv.Quote(n.Value)
	}
	return Kind(n)
}

// Closest is the name within edit distance 2 of s, if any: the key the
// writer probably meant.
func Closest(s string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if d := editDistance(s, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
