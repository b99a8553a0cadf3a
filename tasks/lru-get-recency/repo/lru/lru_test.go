package lru

import (
	"fmt"
	"sync"
	"testing"
)

func TestAddGet(t *testing.T) {
	c := New[string, int](2)
	c.Add("a", 1)
	c.Add("b", 2)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("Get(a) = %v, %v", v, ok)
	}
	if _, ok := c.Get("zzz"); ok {
		t.Fatal("Get of a missing key reported ok")
	}
	c.Add("a", 10)
	if v, _ := c.Peek("a"); v != 10 {
		t.Fatalf("after update Peek(a) = %v", v)
	}
}

func TestEvictsOldestAdded(t *testing.T) {
	var evicted []string
	c := New[string, int](2)
	c.OnEvict(func(k string, _ int) { evicted = append(evicted, k) })
	c.Add("a", 1)
	c.Add("b", 2)
	if c.Add("c", 3) != true {
		t.Fatal("Add over capacity did not report an eviction")
	}
	if len(evicted) != 1 || evicted[0] != "a" {
		t.Fatalf("evicted = %v, want [a]", evicted)
	}
	if c.Len() != 2 {
		t.Fatalf("Len = %d", c.Len())
	}
}

func TestRemove(t *testing.T) {
	c := New[int, int](3)
	c.Add(1, 1)
	if !c.Remove(1) || c.Remove(1) {
		t.Fatal("Remove reported wrong presence")
	}
	if c.Len() != 0 {
		t.Fatal("entry still present")
	}
}

func TestConcurrent(t *testing.T) {
	c := New[string, int](50)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				k := fmt.Sprint(i % 70)
				c.Add(k, i)
				c.Get(k)
			}
		}(g)
	}
	wg.Wait()
	if c.Len() > 50 {
		t.Fatalf("Len = %d exceeds size", c.Len())
	}
}
