package count

import (
	"reflect"
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
	if top[0] != (Word{"don't", 2}) || top[1] != (Word{"hello", 2}) {
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

func TestTiesAlphabetical(t *testing.T) {
	c := counter(t, "pear apple fig pear apple fig banana kiwi cherry")
	want := []Word{{"apple", 2}, {"fig", 2}, {"pear", 2}, {"banana", 1}, {"cherry", 1}, {"kiwi", 1}}
	if got := c.Top(0); !reflect.DeepEqual(got, want) {
		t.Fatalf("Top(0) = %+v, want %+v", got, want)
	}
	if got := c.Top(4); !reflect.DeepEqual(got, want[:4]) {
		t.Fatalf("Top(4) = %+v, want %+v", got, want[:4])
	}
}

func TestSameWordsSameReport(t *testing.T) {
	a := counter(t, "zeta alpha mu alpha zeta mu omega")
	b := counter(t, "mu omega alpha zeta zeta alpha mu")
	if !reflect.DeepEqual(a.Top(0), b.Top(0)) {
		t.Fatalf("reports differ:\n%+v\n%+v", a.Top(0), b.Top(0))
	}
	if got := a.Top(3); got[0].Text != "alpha" || got[1].Text != "mu" || got[2].Text != "zeta" {
		t.Fatalf("Top(3) = %+v", got)
	}
}
