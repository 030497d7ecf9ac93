package zab

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkd/zkd/jute"
)

// TestSyncIndexTellsFollowers: the leader's answer to a follower's sync
// is the index the follower must apply, and the leader tells the
// followers at once that it committed (Config.OnCommitted), with the term
// of the entry there, which it leads, so the follower does not wait for
// raft's CommitTimeout. An entry of an earlier term is not spoken for.
func TestSyncIndexTellsFollowers(t *testing.T) {
	var mu sync.Mutex
	type told struct{ term, index uint64 }
	var got []told
	n := openNode(t, t.TempDir(), func(c *Config) {
		c.OnCommitted = func(term, index uint64) {
			mu.Lock()
			got = append(got, told{term, index})
			mu.Unlock()
		}
	})
	defer n.Close()
	openSession(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	idx, err := n.SyncIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := n.logs.GetLog(idx, &l); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	last := got[len(got)-1]
	mu.Unlock()
	if last != (told{l.Term, idx}) {
		t.Fatalf("after SyncIndex %d (term %d) the last notice was %+v", idx, l.Term, last)
	}

	// Restarted, the member leads a later term: the entry of the earlier
	// one is not its to speak for.
	dir := n.cfg.Dir
	n.Close()
	mu.Lock()
	got = nil
	mu.Unlock()
	n = openNode(t, dir, func(c *Config) {
		c.OnCommitted = func(term, index uint64) {
			mu.Lock()
			got = append(got, told{term, index})
			mu.Unlock()
		}
	})
	defer n.Close()
	if term := n.raft.CurrentTerm(); term <= l.Term {
		t.Fatalf("term %d after a restart, want above %d", term, l.Term)
	}
	n.noticeApplied(idx)
	mu.Lock()
	defer mu.Unlock()
	for _, g := range got {
		if g.index == idx {
			t.Errorf("entry %d of term %d told by the leader of term %d: %+v", idx, l.Term, n.raft.CurrentTerm(), got)
		}
	}
}

// TestDeferredLeaderWrite: with commit notices (an ensemble), the leader's
// log append does not wait for its fdatasync, so the followers store a
// write while the leader's disk still holds it, and raft commits it; but
// nothing applies it, here or on a follower, and its caller hears
// nothing, until it is on the leader's disk too (wal's deferred.go).
func TestDeferredLeaderWrite(t *testing.T) {
	held := make([]atomic.Bool, 3)
	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	var tr *trio
	tr = openTrio(t, 0, time.Minute, func(i int, c *Config) {
		c.OnCommitted = func(term, index uint64) {
			for _, n := range tr.nodes {
				if n != tr.nodes[i] {
					n.LeaderCommitted(raft.ServerID(fmt.Sprint(i+1)), term, index)
				}
			}
		}
		c.beforeSync = func(string) {
			if held[i].Load() {
				<-release
			}
		}
	})
	t.Cleanup(open) // before the nodes close, whatever failed: the held sync ends
	l := tr.leader(t, -1, 10*time.Second)
	lead := tr.nodes[l]
	s := openSession(t, lead)
	if r := lead.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: createBody("/before")}).Wait(); r.Err != nil {
		t.Fatal(r.Err)
	}
	base := lead.raft.LastIndex()
	held[l].Store(true)
	f := lead.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: createBody("/held")})
	waitUntil(t, 10*time.Second, "the leader stores the write (its fdatasync held)", func() bool { return lead.raft.LastIndex() > base })
	idx := lead.raft.LastIndex()
	for i, n := range tr.nodes {
		if i != l {
			waitUntil(t, 10*time.Second, fmt.Sprintf("follower %d stores the write while the leader's fdatasync is held", i+1), func() bool { return n.raft.LastIndex() >= idx })
		}
	}
	waitUntil(t, 10*time.Second, "raft commits the write, counting the leader's write before its sync", func() bool { return lead.raft.CommitIndex() >= idx })
	// Raft would tell the followers now, in its next append (CommitTimeout,
	// 5 ms here): give it many.
	time.Sleep(200 * time.Millisecond)
	select {
	case <-f.Done():
		t.Fatalf("the write was answered (%v) before it was on the leader's disk", f.Result().Err)
	default:
	}
	for i, n := range tr.nodes {
		if _, err := n.Tree().Exists("/held", nil); err == nil {
			t.Errorf("member %d applied /held before it was on the leader's disk", i+1)
		}
		if i != l && n.raft.CommitIndex() >= idx {
			t.Errorf("follower %d learned commit index %d before the write was on the leader's disk", i+1, n.raft.CommitIndex())
		}
	}
	held[l].Store(false)
	open()
	if r := f.Wait(); r.Err != nil {
		t.Fatal(r.Err)
	}
	for i, n := range tr.nodes {
		waitUntil(t, 10*time.Second, fmt.Sprintf("member %d applies /held", i+1), func() bool { _, err := n.Tree().Exists("/held", nil); return err == nil })
	}
}

// TestNoticeNeedsRecentContact: a commit notice reaches raft only while
// the follower has heard from the leader within half its heartbeat
// timeout. Raft takes any AppendEntries of its term as the leader's
// word, stepping a candidate down and restarting its heartbeat timer, so
// a notice arriving as the timer runs out would put off the election
// that a paused leader calls for (compat/soak's pause nemesis saw a
// candidate sent back to following its paused leader).
func TestNoticeNeedsRecentContact(t *testing.T) {
	transports := make([]*raft.InmemTransport, 3)
	tr := openTrio(t, 0, time.Minute, func(i int, c *Config) {
		// Notices on (nobody sends them but the test), raft's own
		// commit messages rare, elections slow enough to act between
		// half a heartbeat timeout and a whole one.
		c.OnCommitted = func(term, index uint64) {}
		c.CommitTimeout = 30 * time.Second
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 4*time.Second, 4*time.Second, time.Second
		transports[i] = c.Transport.(*raft.InmemTransport)
	})
	l := tr.leader(t, -1, 20*time.Second)
	f := (l + 1) % 3
	lead, fol := tr.nodes[l], tr.nodes[f]
	leaderID := raft.ServerID(fmt.Sprint(l + 1))
	s := openSession(t, lead)
	write := func(path string) uint64 {
		t.Helper()
		if r := lead.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: createBody(path)}).Wait(); r.Err != nil {
			t.Fatal(r.Err)
		}
		idx := lead.raft.LastIndex()
		waitUntil(t, 10*time.Second, "the follower stores the write", func() bool { return fol.raft.LastIndex() >= idx })
		return idx
	}

	// In touch: the notice goes to raft, which commits.
	idx := write("/fresh")
	if fol.raft.CommitIndex() >= idx {
		t.Fatalf("the follower knew of commit %d before any notice; the test needs it not to", idx)
	}
	before := fol.notices.injected.Load()
	fol.LeaderCommitted(leaderID, lead.raft.CurrentTerm(), idx)
	if fol.notices.injected.Load() != before+1 {
		t.Fatal("a notice from a leader heard from lately did not reach raft")
	}
	waitUntil(t, 10*time.Second, "the follower commits the notice's entry", func() bool { return fol.raft.CommitIndex() >= idx })

	// Cut off from the leader for over half a heartbeat timeout, still
	// following it: the notice stays out of raft.
	idx = write("/stale")
	transports[l].Disconnect(fol.addr)
	transports[f].Disconnect(lead.addr)
	waitUntil(t, 10*time.Second, "half a heartbeat timeout without the leader", func() bool { return time.Since(fol.raft.LastContact()) > 2500*time.Millisecond })
	before = fol.notices.injected.Load()
	fol.LeaderCommitted(leaderID, lead.raft.CurrentTerm(), idx)
	if _, id := fol.raft.LeaderWithID(); id != leaderID || fol.raft.State() != raft.Follower {
		t.Fatalf("the follower no longer follows member %s (%v, leader %q): the check came too late to mean anything", leaderID, fol.raft.State(), id)
	}
	if got := fol.notices.injected.Load(); got != before {
		t.Fatalf("a notice reached raft %v after the follower last heard from the leader", time.Since(fol.raft.LastContact()).Round(time.Millisecond))
	}
}
