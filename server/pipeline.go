package server

import "sync"

// slotQueue is a connection's pipeline: the requests read and not yet
// answered, in arrival order. It replaces a channel of capacity
// MaxPendingRequests, which cost 8 KB per connection whether or not it
// held anything: the queue grows with what it holds and lets go of its
// array once drained. It also records whether a completer goroutine is
// draining it, so a connection runs one only while it has requests.
type slotQueue struct {
	mu      sync.Mutex
	q       []*slot
	head    int
	running bool // a completer goroutine owns the queue
}

// add appends sl. It reports whether the caller must start a completer,
// and how many slots the queue held before.
func (p *slotQueue) add(sl *slot) (start bool, held int) {
	p.mu.Lock()
	held = len(p.q) - p.head
	if p.head > 0 && len(p.q) == cap(p.q) {
		// Reuse the consumed front instead of growing.
		n := copy(p.q, p.q[p.head:])
		clear(p.q[n:])
		p.q, p.head = p.q[:n], 0
	}
	p.q = append(p.q, sl)
	if !p.running {
		p.running, start = true, true
	}
	p.mu.Unlock()
	return start, held
}

// next removes the first slot. With none left it returns nil and the
// completer must stop: the next add starts another.
func (p *slotQueue) next() *slot {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.head == len(p.q) {
		p.running = false
		p.reset()
		return nil
	}
	sl := p.q[p.head]
	p.q[p.head] = nil
	p.head++
	if p.head == len(p.q) {
		p.reset()
	}
	return sl
}

// reset empties the drained queue, dropping an array grown by a burst.
func (p *slotQueue) reset() {
	p.head = 0
	if cap(p.q) > 16 {
		p.q = nil
	} else {
		p.q = p.q[:0]
	}
}

// len is how many slots wait.
func (p *slotQueue) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.q) - p.head
}

// drain removes and returns every slot, for a connection that ended.
func (p *slotQueue) drain() []*slot {
	p.mu.Lock()
	defer p.mu.Unlock()
	rest := p.q[p.head:]
	p.q, p.head = nil, 0
	return rest
}
