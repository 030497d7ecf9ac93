package session

import (
	"container/heap"
	"slices"
	"sync"
	"time"
)

// Tracker keeps each live session's expiry deadline, as ZooKeeper's
// ExpiryQueue does for its SessionTracker: a deadline is the session's last
// touch plus its timeout, rounded up to the next multiple of the tick, and
// sessions sharing a deadline share a bucket. The leader calls Expired once
// per tick (at NextExpiry) and gets whole buckets at once.
//
// All methods are safe for concurrent use: connection goroutines call
// Touch, one expirer loop calls Expired and NextExpiry. Every method takes
// one mutex for a short, allocation-free (amortised) critical section.
//
// Times are measured in milliseconds since the Tracker was created, using
// Clock differences, so a real clock's monotonic reading protects expiry
// from wall-clock jumps (ZooKeeper uses its elapsed-time clock likewise).
type Tracker struct {
	tick int64 // ms
	clk  Clock
	base time.Time

	mu struct {
		sync.Mutex
		sessions map[int64]*entry
		buckets  map[int64]map[int64]struct{} // deadline -> ids
		times    deadlineHeap                 // bucket deadlines; may hold stale ones
	}
}

// entry is one tracked session.
type entry struct {
	timeoutMs int32
	deadline  int64 // ms since base, a multiple of tick
}

// NewTracker returns an empty Tracker with the given tick (ms; values
// below 1 count as 1) reading time from clk.
func NewTracker(tickMs int64, clk Clock) *Tracker {
	if tickMs < 1 {
		tickMs = 1
	}
	t := &Tracker{tick: tickMs, clk: clk, base: clk.Now()}
	t.mu.sessions = make(map[int64]*entry)
	t.mu.buckets = make(map[int64]map[int64]struct{})
	return t
}

// nowMs returns the milliseconds elapsed since the Tracker was created.
func (t *Tracker) nowMs() int64 { return t.clk.Now().Sub(t.base).Milliseconds() }

// roundUp returns the first tick boundary strictly after ms, as
// ExpiryQueue.roundToNextInterval.
func (t *Tracker) roundUp(ms int64) int64 {
	q := ms / t.tick
	if ms < 0 && ms%t.tick != 0 {
		q-- // floor division
	}
	return (q + 1) * t.tick
}

// Add starts tracking session id with the given timeout (ms), or, if it is
// already tracked, replaces its timeout; either way its deadline is
// computed afresh from now.
func (t *Tracker) Add(id int64, timeoutMs int32) {
	now := t.nowMs()
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.mu.sessions[id]
	if !ok {
		e = &entry{}
		t.mu.sessions[id] = e
	}
	e.timeoutMs = timeoutMs
	t.moveLocked(id, e, ok, t.roundUp(now+int64(timeoutMs)))
}

// Touch records activity on session id, pushing its deadline to now plus
// its timeout (rounded up to a tick). It returns false if the session is not
// tracked: never added, removed, or already expired.
func (t *Tracker) Touch(id int64) bool {
	now := t.nowMs()
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.mu.sessions[id]
	if !ok {
		return false
	}
	t.moveLocked(id, e, true, t.roundUp(now+int64(e.timeoutMs)))
	return true
}

// moveLocked puts id into the bucket of deadline, taking it out of its
// previous bucket if tracked. t.mu is held.
func (t *Tracker) moveLocked(id int64, e *entry, tracked bool, deadline int64) {
	if tracked {
		if e.deadline == deadline {
			return // the common case: touched again within the same tick
		}
		t.leaveBucketLocked(id, e.deadline)
	}
	e.deadline = deadline
	b, ok := t.mu.buckets[deadline]
	if !ok {
		b = make(map[int64]struct{})
		t.mu.buckets[deadline] = b
		heap.Push(&t.mu.times, deadline)
	}
	b[id] = struct{}{}
}

// leaveBucketLocked removes id from the bucket of deadline, dropping the
// bucket when it empties (its heap entry goes stale and is skipped later).
func (t *Tracker) leaveBucketLocked(id int64, deadline int64) {
	if b, ok := t.mu.buckets[deadline]; ok {
		delete(b, id)
		if len(b) == 0 {
			delete(t.mu.buckets, deadline)
		}
	}
}

// Remove stops tracking session id (closed by its client). Unknown ids are
// ignored.
func (t *Tracker) Remove(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.mu.sessions[id]; ok {
		t.leaveBucketLocked(id, e.deadline)
		delete(t.mu.sessions, id)
	}
}

// Expired returns, in ascending order, the ids of every session whose
// deadline is at or before the clock's current time, and stops tracking
// them. A deadline equal to now has expired, as in ZooKeeper's
// ExpiryQueue.poll. Only the leader's expirer calls it; each id returned
// must then be committed as a closeSession entry.
func (t *Tracker) Expired() []int64 {
	now := t.nowMs()
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []int64
	for len(t.mu.times) > 0 && t.mu.times[0] <= now {
		d := heap.Pop(&t.mu.times).(int64)
		b, ok := t.mu.buckets[d]
		if !ok {
			continue // stale: the bucket emptied or was already expired
		}
		for id := range b {
			ids = append(ids, id)
			delete(t.mu.sessions, id)
		}
		delete(t.mu.buckets, d)
	}
	slices.Sort(ids)
	return ids
}

// NextExpiry returns when Expired should next be called: the earliest
// deadline of any tracked session, or, with no sessions, the next tick
// boundary after now.
func (t *Tracker) NextExpiry() time.Time {
	t.mu.Lock()
	for len(t.mu.times) > 0 {
		d := t.mu.times[0]
		if _, ok := t.mu.buckets[d]; ok {
			t.mu.Unlock()
			return t.base.Add(time.Duration(d) * time.Millisecond)
		}
		heap.Pop(&t.mu.times)
	}
	t.mu.Unlock()
	return t.base.Add(time.Duration(t.roundUp(t.nowMs())) * time.Millisecond)
}

// ResetAll restarts every session's clock from now, as a new leader does
// at election so that the time it took to elect one expires no healthy
// session.
func (t *Tracker) ResetAll() {
	now := t.nowMs()
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.mu.buckets)
	t.mu.times = t.mu.times[:0]
	for id, e := range t.mu.sessions {
		d := t.roundUp(now + int64(e.timeoutMs))
		e.deadline = d
		b, ok := t.mu.buckets[d]
		if !ok {
			b = make(map[int64]struct{})
			t.mu.buckets[d] = b
			t.mu.times = append(t.mu.times, d)
		}
		b[id] = struct{}{}
	}
	heap.Init(&t.mu.times)
}

// Len returns the number of tracked sessions.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.mu.sessions)
}

// Timeout returns session id's timeout in ms and whether it is tracked.
func (t *Tracker) Timeout(id int64) (int32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.mu.sessions[id]
	if !ok {
		return 0, false
	}
	return e.timeoutMs, true
}

// Deadline returns when session id expires unless touched, and whether it
// is tracked.
func (t *Tracker) Deadline(id int64) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.mu.sessions[id]
	if !ok {
		return time.Time{}, false
	}
	return t.base.Add(time.Duration(e.deadline) * time.Millisecond), true
}

// deadlineHeap is a min-heap of bucket deadlines.
type deadlineHeap []int64

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
