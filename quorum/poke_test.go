package quorum_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkd/zkd/quorum/quorumtest"
	"github.com/zkd/zkd/zab"
)

// TestFollowerLearnsCommitWithoutWaiting writes one at a time through a
// follower, with nothing else going on, on an ensemble whose leader tells
// followers its commit index in raft's own messages only every 30 s
// (raft's CommitTimeout, 1 ms in zkd). A forwarded write applies on the
// follower, and is answered, only once the follower learns that it
// committed: the leader's commit notice after each batch with nothing
// behind it (commitnotice.go) brings that at once, so each write completes
// within seconds rather than after 30, and without a raft barrier: the
// log grows by about one entry per write, not two.
func TestFollowerLearnsCommitWithoutWaiting(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{NodeConfig: func(_ int, nc *zab.Config) {
		nc.CommitTimeout = 30 * time.Second
	}})
	l := c.WaitLeader(5 * time.Second)
	c.Ready(5 * time.Second)
	f := c.Member(follower(c, l))
	s := newSession(t, f, 30000)
	const writes = 5
	before := c.Member(l).Node().Raft().LastIndex()
	for i := range writes {
		fut := create(f, s, fmt.Sprintf("/poke%d", i), "x")
		select {
		case <-fut.Done():
			if err := fut.Result().Err; err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("write %d through a follower not answered within 10 s: the follower did not learn the commit", i)
		}
	}
	if n := f.Node().Stats().CommitNotices; n < writes {
		t.Errorf("the follower handed raft %d commit notices for %d writes, want one each", n, writes)
	}
	// A barrier per write would make it 2×writes; one stray entry of the
	// leader's own (an idle digest mark) is allowed.
	if grew := c.Member(l).Node().Raft().LastIndex() - before; grew > writes+1 {
		t.Errorf("the leader's log grew by %d entries for %d writes: entries besides the writes were appended", grew, writes)
	}
}
