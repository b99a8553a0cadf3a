package data

import (
	"fmt"
	"math/rand/v2"
)

// Order is the order training sequences are read in: epoch after epoch,
// each a permutation of 0…n−1 drawn from a PCG seeded with (seed, epoch).
// The same n and seed always give the same order.
type Order struct {
	n     int
	seed  uint64
	state OrderState
	perm  []int // the permutation of state.Epoch
}

// OrderState is where an Order stands: the next index it returns is
// permutation(Epoch)[Index]. It is what a checkpoint saves.
type OrderState struct {
	Seed  uint64 `json:"seed"`
	N     int    `json:"n"`
	Epoch int    `json:"epoch"`
	Index int    `json:"index"`
}

// NewOrder returns the order of n sequences for seed, at its start.
func NewOrder(n int, seed uint64) *Order {
	o := &Order{n: n, seed: seed, state: OrderState{Seed: seed, N: n}}
	o.perm = permutation(n, seed, 0)
	return o
}

// Next returns the next sequence index, moving to a fresh permutation at
// the end of an epoch.
func (o *Order) Next() int {
	if o.state.Index == o.n {
		o.state.Epoch++
		o.state.Index = 0
		o.perm = permutation(o.n, o.seed, o.state.Epoch)
	}
	i := o.perm[o.state.Index]
	o.state.Index++
	return i
}

// State returns where o stands.
func (o *Order) State() OrderState { return o.state }

// Restore moves o to s, which must come from an Order of the same n and
// seed.
func (o *Order) Restore(s OrderState) error {
	if s.Seed != o.seed || s.N != o.n {
		return fmt.Errorf("data order state is for %d sequences with seed %d, not %d with seed %d", s.N, s.Seed, o.n, o.seed)
	}
	if s.Epoch < 0 || s.Index < 0 || s.Index > o.n {
		return fmt.Errorf("data order state epoch %d index %d is out of range for %d sequences", s.Epoch, s.Index, o.n)
	}
	o.state = s
	o.perm = permutation(o.n, o.seed, s.Epoch)
	return nil
}

// permutation is a Fisher–Yates shuffle driven by PCG's raw outputs. It
// takes nothing from math/rand's Perm or Shuffle, whose algorithms a Go
// release may change, so saved orders stay valid.
func permutation(n int, seed uint64, epoch int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	src := rand.NewPCG(seed, uint64(epoch))
	for i := n - 1; i > 0; i-- {
		j := int(src.Uint64() % uint64(i+1))
		p[i], p[j] = p[j], p[i]
	}
	return p
}
