package zab

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
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
