// Package count tallies word frequencies.
package count

import (
	"bufio"
	"io"
	"sort"
	"strings"
	"unicode"
)

// Word is a word and how often it occurred.
type Word struct {
	Text  string
	Count int
}

// Counter accumulates counts over one or more inputs.
type Counter struct {
	MinLen int // words shorter than this (in runes) are ignored

	counts map[string]int
	order  []string // first appearance
	total  int
}

// Add reads r and counts its words.
func (c *Counter) Add(r io.Reader) error {
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	sc := bufio.NewScanner(r)
	sc.Split(bufio.ScanWords)
	for sc.Scan() {
		w := normalize(sc.Text())
		if w == "" || len([]rune(w)) < c.MinLen {
			continue
		}
		if _, seen := c.counts[w]; !seen {
			c.order = append(c.order, w)
		}
		c.counts[w]++
		c.total++
	}
	return sc.Err()
}

// Total is the number of words counted.
func (c *Counter) Total() int { return c.total }

// Distinct is the number of different words counted.
func (c *Counter) Distinct() int { return len(c.order) }

// Top returns the n most frequent words, most frequent first. n <= 0 means
// all of them.
func (c *Counter) Top(n int) []Word {
	words := make([]Word, 0, len(c.order))
	for _, w := range c.order {
		words = append(words, Word{w, c.counts[w]})
	}
	sort.SliceStable(words, func(i, j int) bool { return words[i].Count > words[j].Count })
	if n > 0 && n < len(words) {
		words = words[:n]
	}
	return words
}

func normalize(s string) string {
	s = strings.TrimFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	return strings.ToLower(s)
}
