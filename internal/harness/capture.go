package harness

import (
	"fmt"
	"sync"
)

// capture keeps the first headMax and the last tailMax bytes written to it
// and counts the rest, so that a command's output costs bounded memory
// however much it prints. It is safe for concurrent writes.
type capture struct {
	headMax, tailMax int

	mu    sync.Mutex
	head  []byte
	tail  []byte // ring buffer of tailMax bytes once full
	next  int    // where the ring's next byte goes
	total int64
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if c.tailMax == 0 || len(p) == 0 {
		return n, nil
	}
	if len(p) >= c.tailMax {
		c.tail = append(c.tail[:0], p[len(p)-c.tailMax:]...)
		c.next = 0
		return n, nil
	}
	if room := c.tailMax - len(c.tail); room > 0 {
		k := min(room, len(p))
		c.tail = append(c.tail, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(c.tail[c.next:], p)
		p = p[k:]
		c.next = (c.next + k) % c.tailMax
	}
	return n, nil
}

// truncated reports whether bytes were dropped.
func (c *capture) truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total > int64(len(c.head)+len(c.tail))
}

// String returns what was kept, with a note where bytes were dropped.
func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := append(append([]byte(nil), c.tail[c.next:]...), c.tail[:c.next]...)
	kept := int64(len(c.head) + len(tail))
	if c.total == kept {
		return string(c.head) + string(tail)
	}
	return fmt.Sprintf("%s\n[output truncated: showing first %d and last %d of %d bytes]\n%s",
		c.head, len(c.head), len(tail), c.total, tail)
}
