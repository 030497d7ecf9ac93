package quorum_test

import (
	"testing"
	"time"

	"github.com/zkd/zkd/quorum"
	"github.com/zkd/zkd/quorum/quorumtest"
)

// TestRestartedFollowerServesOnceCaughtUp: a follower that restarts hears
// from the leader before it knows how far the leader committed, and before
// it applied its own log again. It must not serve clients (Serving, and
// the readiness WaitReady gives) until it synced with the leader and
// applied that far (syncAtJoin), as a ZooKeeper follower serves only once
// it synced. The restarted member's sync is held here while it is already
// in touch with the leader.
func TestRestartedFollowerServesOnceCaughtUp(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{})
	l := c.WaitLeader(5 * time.Second)
	c.Ready(5 * time.Second)
	i := follower(c, l)
	c.Stop(i)

	release := make(chan struct{})
	quorum.HoldSyncAtJoin(int64(i+1), release)
	defer quorum.HoldSyncAtJoin(0, nil)
	c.Start(i)
	m := c.Member(i)
	c.WaitFor("the restarted follower in touch with the leader", 10*time.Second, func() bool { return quorum.InTouch(m) })
	if m.Serving() {
		t.Fatal("the restarted follower serves before it synced with the leader")
	}
	close(release)
	c.WaitFor("the restarted follower serving once synced", 10*time.Second, m.Serving)
}
