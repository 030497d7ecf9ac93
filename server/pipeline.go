package server

import (
	"sync"
	"time"
)

// lingerFor is how long an idle completer or writer goroutine waits for
// more work before it ends. A client with requests in a loop sends its
// next one within a round trip, so under load a connection keeps the same
// two goroutines (and their grown stacks) instead of starting new ones for
// every request; an idle connection parks neither.
const lingerFor = handOffAfter

// slotQueue is a connection's pipeline: the requests read and not yet
// answered, in arrival order. It replaces a channel of capacity
// MaxPendingRequests, which cost 8 KB per connection whether or not it
// held anything: the queue grows with what it holds and lets go of its
// array once drained. It also records whether a completer goroutine owns
// the queue, and whether that completer is busy with a slot or waiting
// (lingering) for the next one.
type slotQueue struct {
	mu      sync.Mutex
	q       []*slot
	head    int
	running bool // a completer goroutine owns the queue
	busy    bool // the completer is finishing a slot it took
	// hooked: the goroutine that completed a parked write's future is
	// finishing it (see conn.push); nobody else takes slots meanwhile.
	hooked bool
	wake   chan struct{} // the lingering completer's wake-up (capacity 1), while running
}

// Ways add hands a slot on.
const (
	addQueued = iota // queued for the busy completer
	addStart         // queued: the caller must start a completer
	addWake          // queued: the caller must wake the lingering completer
	addInline        // not queued: nothing is ahead of it, finish it here
	addParked        // queued, first, with nobody woken: its future's completion finishes it
)

// Ways a slot is handed on, for add.
const (
	handQueue  = iota // queue it for a completer
	handInline        // finish it on the caller's goroutine if nothing is ahead
	handPark          // a write: if nothing is ahead, park it for its future's hook
)

// add appends sl, or with handInline leaves it to the caller when nothing
// is queued or being finished ahead of it. It reports what the caller must
// do, and how many slots the queue held before.
func (p *slotQueue) add(sl *slot, hand int) (how, held int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	held = len(p.q) - p.head
	first := held == 0 && !p.busy && !p.hooked
	if hand == handInline && first {
		return addInline, 0
	}
	if p.head > 0 && len(p.q) == cap(p.q) {
		// Reuse the consumed front instead of growing.
		n := copy(p.q, p.q[p.head:])
		clear(p.q[n:])
		p.q, p.head = p.q[:n], 0
	}
	p.q = append(p.q, sl)
	switch {
	case hand == handPark && first:
		return addParked, held
	case !p.running:
		// Behind a hook's slot, the completer waits until unhook wakes
		// it: only the connection's own goroutines start completers.
		p.running, p.busy = true, !p.hooked
		p.wake = make(chan struct{}, 1)
		return addStart, held
	case p.hooked:
		return addQueued, held // unhook wakes the completer
	case !p.busy:
		return addWake, held
	}
	return addQueued, held
}

// wakeUp wakes the lingering completer, if one still lingers.
func (p *slotQueue) wakeUp() {
	p.mu.Lock()
	w := p.wake
	p.mu.Unlock()
	if w != nil {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// wakeChan returns the wake-up of the completer that add just started.
func (p *slotQueue) wakeChan() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wake
}

// next removes the first slot for the completer. With none left it
// returns nil and the completer lingers: it calls next again when woken,
// or stop once it waited long enough.
func (p *slotQueue) next() *slot {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hooked {
		return nil // a hook finishes the first slot; unhook wakes us after
	}
	if p.head == len(p.q) {
		p.busy = false
		p.reset()
		return nil
	}
	p.busy = true
	sl := p.q[p.head]
	p.q[p.head] = nil
	p.head++
	if p.head == len(p.q) {
		p.reset()
	}
	return sl
}

// hook takes sl, a parked write whose future just completed, for the
// completing goroutine to finish: true if sl is still first and nobody
// finishes a slot, and then nobody else takes slots until unhook. False
// means a completer took sl meanwhile (or the connection dropped it).
func (p *slotQueue) hook(sl *slot) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy || p.hooked || p.head == len(p.q) || p.q[p.head] != sl {
		return false
	}
	p.hooked = true
	p.q[p.head] = nil
	p.head++
	if p.head == len(p.q) {
		p.reset()
	}
	return true
}

// unhook ends a hook's turn. The slots queued meanwhile have a completer
// (add started one if none ran): unhook wakes it.
func (p *slotQueue) unhook() {
	p.mu.Lock()
	p.hooked = false
	w := p.wake
	queued := p.head != len(p.q)
	p.mu.Unlock()
	if queued && w != nil {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// stop ends the lingering completer if nothing arrived meanwhile: true
// means it must return, and the next add starts another.
func (p *slotQueue) stop() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.head != len(p.q) {
		return false
	}
	p.running, p.busy, p.wake = false, false, nil
	return true
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

// lingerTimer returns a stopped timer for a goroutine's lingering waits.
func lingerTimer() *time.Timer {
	t := time.NewTimer(lingerFor)
	t.Stop()
	return t
}
