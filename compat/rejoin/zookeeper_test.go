package rejoin

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// TestIntegration_RestoredBackupZooKeeper runs the cold case of
// TestIntegration_RestoredBackupRejoin on ZooKeeper 3.8, the comparison
// in docs/disk-faults.md: member B restored from a copy of its version-2
// folder, A killed, B and C started. ZooKeeper, like raft, trusts a
// member's disk: B and C elect a leader and the writes acknowledged while
// C was down are gone. If this ever stops failing that way, the document
// is out of date.
func TestIntegration_RestoredBackupZooKeeper(t *testing.T) {
	servers := zkproc.StartZooKeeperEnsemble(t, 3, zkproc.Options{TickTime: tickTime})
	ai := zkproc.LeaderOf(t, servers, 30*time.Second)
	a, b, c := servers[ai], servers[(ai+1)%3], servers[(ai+2)%3]
	w := &writer{c: zkproc.Connect(t, a.Addr)}
	w.writeN(t, 20)
	v2 := filepath.Join(b.DataDir, "version-2")
	backup := filepath.Join(t.TempDir(), "backup")
	b.Stop()
	copyTree(t, v2, backup)
	b.Restart(t)
	c.Stop()
	w.writeN(t, 20) // on A and B only
	b.Kill()
	restoreDir(t, backup, v2)
	a.Kill()
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	zkproc.LeaderOf(t, []*zkproc.Server{b, c}, 60*time.Second)
	conn := zkproc.Connect(t, b.Addr, c.Addr)
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, p := range w.acked {
		if _, _, err := conn.Get(p); err == zk.ErrNoNode {
			lost++
		}
	}
	t.Logf("ZooKeeper 3.8: B and C elected a leader; %d of %d acknowledged writes lost", lost, len(w.acked))
	if lost == 0 {
		t.Fatal("ZooKeeper 3.8 lost no acknowledged write: docs/disk-faults.md says it loses those made while C was down")
	}
}
