package wal

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// gate blocks the log's fdatasyncs while closed: tests hold the syncer.
type gate struct {
	mu      sync.Mutex
	open    chan struct{}
	waiting atomic.Int32
}

func newGate() *gate { g := &gate{open: make(chan struct{})}; close(g.open); return g }

// shut makes the next fdatasyncs wait until release.
func (g *gate) shut() {
	g.mu.Lock()
	g.open = make(chan struct{})
	g.mu.Unlock()
}

func (g *gate) release() {
	g.mu.Lock()
	close(g.open)
	g.mu.Unlock()
}

func (g *gate) beforeSync(string) {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	g.waiting.Add(1)
	<-ch
	g.waiting.Add(-1)
}

// awaitWaiting waits until n fdatasyncs wait at the gate.
func (g *gate) awaitWaiting(t *testing.T, n int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); g.waiting.Load() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d fdatasyncs wait, want %d", g.waiting.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// deferredLog opens a log whose command appends are deferred while defer_
// is set, with its fdatasyncs behind g.
func deferredLog(t *testing.T, dir string, g *gate, defer_ *atomic.Bool, maxBatch int) (*Log, Options) {
	opts := Options{Dir: dir, MaxBatch: maxBatch, BeforeSync: g.beforeSync, Defer: defer_.Load}
	return openLog(t, opts), opts
}

// TestDeferredStoreLogs: a deferred append returns before its fdatasync;
// Durable stays behind until the syncer's fdatasync ends, and
// WaitDurable waits for it.
func TestDeferredStoreLogs(t *testing.T) {
	g := newGate()
	var on atomic.Bool
	on.Store(true)
	l, _ := deferredLog(t, t.TempDir(), g, &on, 0)
	store(t, l, 1, 3, 1, 3) // the first segment's header is synced in line; the records are not
	g.awaitWaiting(t, 0)
	if err := l.WaitDurable(3); err != nil {
		t.Fatal(err)
	}

	g.shut()
	store(t, l, 4, 5, 1, 2)
	g.awaitWaiting(t, 1) // the syncer's
	checkBounds(t, l, 1, 5)
	checkEntries(t, l, 4, 5, 1)
	if d := l.Durable(); d != 3 {
		t.Fatalf("Durable = %d while the sync of 4-5 is held, want 3", d)
	}
	done := make(chan error, 1)
	go func() { done <- l.WaitDurable(5) }()
	select {
	case err := <-done:
		t.Fatalf("WaitDurable(5) returned %v while the sync is held", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := l.Durable(); d != 5 {
		t.Fatalf("Durable = %d after the sync, want 5", d)
	}
}

// TestDeferredWindow: no more than MaxBatch entries are written and not
// synced: an append beyond waits for the syncer.
func TestDeferredWindow(t *testing.T) {
	g := newGate()
	var on atomic.Bool
	on.Store(true)
	l, _ := deferredLog(t, t.TempDir(), g, &on, 4)
	store(t, l, 1, 1, 1, 1)
	if err := l.WaitDurable(1); err != nil {
		t.Fatal(err)
	}
	g.shut()
	store(t, l, 2, 5, 1, 2) // 4 unsynced: the window's worth
	g.awaitWaiting(t, 1)
	done := make(chan error, 1)
	go func() { done <- l.StoreLogs(logRange(6, 6, 1)) }()
	select {
	case err := <-done:
		t.Fatalf("a fifth unsynced entry was stored (%v) while the window is full", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := l.WaitDurable(6); err != nil {
		t.Fatal(err)
	}
}

// TestDeferredOnlyCommands: an append holding anything but commands (a
// configuration change) is synced before it returns, and so are the
// deferred records before it; so is every append while Defer says no.
func TestDeferredOnlyCommands(t *testing.T) {
	g := newGate()
	var on atomic.Bool
	on.Store(true)
	l, _ := deferredLog(t, t.TempDir(), g, &on, 0)
	store(t, l, 1, 2, 1, 2)
	conf := &raft.Log{Index: 3, Term: 1, Type: raft.LogConfiguration, Data: entryData(3, 1)}
	if err := l.StoreLogs([]*raft.Log{conf}); err != nil {
		t.Fatal(err)
	}
	if d := l.Durable(); d != 3 {
		t.Fatalf("Durable = %d after a configuration entry, want 3", d)
	}
	on.Store(false)
	g.shut()
	done := make(chan error, 1)
	go func() { done <- l.StoreLogs(logRange(4, 4, 1)) }()
	g.awaitWaiting(t, 1)
	select {
	case err := <-done:
		t.Fatalf("an append with Defer off returned (%v) before its fdatasync", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := l.Durable(); d != 4 {
		t.Fatalf("Durable = %d, want 4", d)
	}
}

// TestDeferredTruncateAndReopen: a follower's truncation while the sync of
// deferred records is held leaves Durable at the new end, not at the
// records it dropped; a log closed with deferred records reopens with
// them, durable.
func TestDeferredTruncateAndReopen(t *testing.T) {
	g := newGate()
	var on atomic.Bool
	on.Store(true)
	dir := t.TempDir()
	l, opts := deferredLog(t, dir, g, &on, 0)
	store(t, l, 1, 4, 1, 4)
	if err := l.WaitDurable(4); err != nil {
		t.Fatal(err)
	}
	g.shut()
	store(t, l, 5, 8, 1, 2)
	g.awaitWaiting(t, 1)
	on.Store(false)
	go func() {
		time.Sleep(20 * time.Millisecond)
		g.release()
	}()
	if err := l.DeleteRange(6, 8); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, l, 1, 5)
	if d := l.Durable(); d > 5 {
		t.Fatalf("Durable = %d after truncating to 5", d)
	}
	store(t, l, 6, 7, 2, 2)
	if d := l.Durable(); d != 7 {
		t.Fatalf("Durable = %d after a synced append to 7", d)
	}

	on.Store(true)
	g.shut()
	store(t, l, 8, 9, 2, 2)
	g.awaitWaiting(t, 1)
	go func() {
		time.Sleep(20 * time.Millisecond)
		g.release()
	}()
	l = reopen(t, l, opts)
	checkBounds(t, l, 1, 9)
	checkEntries(t, l, 8, 9, 2)
	if d := l.Durable(); d != 9 {
		t.Fatalf("Durable = %d after reopening, want 9", d)
	}
}
