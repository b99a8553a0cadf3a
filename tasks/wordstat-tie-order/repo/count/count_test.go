package count

import (
	"strings"
	"testing"
)

func counter(t *testing.T, text string) *Counter {
	t.Helper()
	c := &Counter{}
	if err := c.Add(strings.NewReader(text)); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTop(t *testing.T) {
	c := counter(t, "the cat saw the other cat. The end")
	top := c.Top(2)
	if len(top) != 2 || top[0] != (Word{"the", 3}) || top[1] != (Word{"cat", 2}) {
		t.Fatalf("Top(2) = %+v", top)
	}
	if c.Total() != 8 || c.Distinct() != 5 {
		t.Errorf("Total=%d Distinct=%d", c.Total(), c.Distinct())
	}
}

func TestNormalize(t *testing.T) {
	c := counter(t, `"Hello," she said. HELLO! don't -- don't`)
	top := c.Top(0)
	if top[0] != (Word{"hello", 2}) || top[1] != (Word{"don't", 2}) {
		t.Fatalf("Top = %+v", top)
	}
	for _, w := range top {
		if w.Text == "" || w.Text == "--" {
			t.Errorf("punctuation counted as a word: %+v", top)
		}
	}
}

func TestMinLen(t *testing.T) {
	c := &Counter{MinLen: 4}
	c.Add(strings.NewReader("a an the word words"))
	if c.Distinct() != 2 {
		t.Fatalf("Distinct = %d, want 2", c.Distinct())
	}
}

func TestAddAccumulates(t *testing.T) {
	c := counter(t, "alpha beta")
	c.Add(strings.NewReader("beta gamma"))
	if top := c.Top(1); top[0] != (Word{"beta", 2}) {
		t.Fatalf("Top(1) = %+v", top)
	}
}
