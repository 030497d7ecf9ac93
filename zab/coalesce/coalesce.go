// Package coalesce lets concurrent callers of one idempotent round trip
// share it: a sync with the leader, a raft barrier. A caller needs a round
// started after it called; every caller that arrived before a round
// started waits for that round, and rounds run one at a time. A storm of
// thousands of syncs (100,000 sessions reattaching after a leader change)
// then costs a few rounds instead of one each.
package coalesce

import (
	"context"
	"sync"
)

// Calls runs its round trip for callers of Do, sharing rounds among them.
// The zero value is not usable: make one with New.
type Calls[T any] struct {
	round func() (T, error)

	mu      sync.Mutex
	next    *call[T] // the callers waiting for a round not yet started
	running bool     // a goroutine is running rounds
}

// call is the callers sharing one round, and its outcome.
type call[T any] struct {
	done chan struct{} // closed once val and err are set
	val  T
	err  error
}

// New returns Calls that run round for its callers.
func New[T any](round func() (T, error)) *Calls[T] {
	return &Calls[T]{round: round}
}

// Do returns the outcome of a round that started after Do was called,
// or ctx's error if ctx ends first. The round goes on for the callers
// still waiting.
func (c *Calls[T]) Do(ctx context.Context) (T, error) {
	c.mu.Lock()
	w := c.next
	if w == nil {
		w = &call[T]{done: make(chan struct{})}
		c.next = w
	}
	if !c.running {
		c.running = true
		go c.run()
	}
	c.mu.Unlock()
	select {
	case <-w.done:
		return w.val, w.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// run starts rounds, one at a time, while callers wait for one.
func (c *Calls[T]) run() {
	for {
		c.mu.Lock()
		w := c.next
		c.next = nil
		if w == nil {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		w.val, w.err = c.round()
		close(w.done)
	}
}
