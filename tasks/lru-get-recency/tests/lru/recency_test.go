package lru

import (
	"reflect"
	"testing"
)

func TestGetMarksUsed(t *testing.T) {
	var evicted []string
	c := New[string, int](2)
	c.OnEvict(func(k string, _ int) { evicted = append(evicted, k) })
	c.Add("a", 1)
	c.Add("b", 2)
	c.Get("a")
	c.Add("c", 3)
	if !reflect.DeepEqual(evicted, []string{"b"}) {
		t.Fatalf("evicted = %v, want [b]", evicted)
	}
	if _, ok := c.Peek("a"); !ok {
		t.Fatal("a was evicted although it was just read")
	}
}

func TestKeysOrderAfterGet(t *testing.T) {
	c := New[int, string](4)
	for i := 1; i <= 4; i++ {
		c.Add(i, "v")
	}
	c.Get(2)
	c.Get(4)
	c.Get(1)
	if got, want := c.Keys(), []int{1, 4, 2, 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Keys = %v, want %v", got, want)
	}
}

func TestPeekDoesNotMarkUsed(t *testing.T) {
	c := New[string, int](2)
	c.Add("a", 1)
	c.Add("b", 2)
	c.Peek("a")
	c.Add("c", 3)
	if _, ok := c.Peek("a"); ok {
		t.Fatal("Peek should not protect an entry from eviction")
	}
}

func TestGetMissDoesNotChangeOrder(t *testing.T) {
	c := New[string, int](3)
	c.Add("a", 1)
	c.Add("b", 2)
	c.Get("nope")
	if got, want := c.Keys(), []string{"b", "a"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Keys = %v, want %v", got, want)
	}
}
