// Package lru implements a fixed-size least-recently-used cache.
package lru

import (
	"container/list"
	"sync"
)

type entry[K comparable, V any] struct {
	key   K
	value V
}

// Cache is an LRU cache. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	mu      sync.Mutex
	size    int
	ll      *list.List // front is most recently used
	items   map[K]*list.Element
	onEvict func(K, V)
}

// New returns a cache holding at most size entries. size must be positive.
func New[K comparable, V any](size int) *Cache[K, V] {
	if size <= 0 {
		panic("lru: size must be positive")
	}
	return &Cache[K, V]{size: size, ll: list.New(), items: make(map[K]*list.Element)}
}

// OnEvict sets a function called with each entry evicted to make room.
func (c *Cache[K, V]) OnEvict(f func(K, V)) {
	c.mu.Lock()
	c.onEvict = f
	c.mu.Unlock()
}

// Add inserts or updates key and marks it most recently used. It reports
// whether an entry was evicted to make room.
func (c *Cache[K, V]) Add(key K, value V) (evicted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value.(*entry[K, V]).value = value
		c.ll.MoveToFront(el)
		return false
	}
	c.items[key] = c.ll.PushFront(&entry[K, V]{key, value})
	if c.ll.Len() > c.size {
		c.removeOldest()
		return true
	}
	return false
}

// Get returns the value stored under key.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		return el.Value.(*entry[K, V]).value, true
	}
	var zero V
	return zero, false
}

// Peek returns the value stored under key without marking it used.
func (c *Cache[K, V]) Peek(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		return el.Value.(*entry[K, V]).value, true
	}
	var zero V
	return zero, false
}

// Remove deletes key, reporting whether it was present.
func (c *Cache[K, V]) Remove(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if ok {
		c.ll.Remove(el)
		delete(c.items, key)
	}
	return ok
}

// Len returns the number of entries.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// Keys returns the keys from most to least recently used.
func (c *Cache[K, V]) Keys() []K {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]K, 0, c.ll.Len())
	for el := c.ll.Front(); el != nil; el = el.Next() {
		keys = append(keys, el.Value.(*entry[K, V]).key)
	}
	return keys
}

func (c *Cache[K, V]) removeOldest() {
	el := c.ll.Back()
	if el == nil {
		return
	}
	e := c.ll.Remove(el).(*entry[K, V])
	delete(c.items, e.key)
	if c.onEvict != nil {
		c.onEvict(e.key, e.value)
	}
}
