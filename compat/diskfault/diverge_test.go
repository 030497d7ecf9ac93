package diskfault

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/zab/zabtest"
)

// divergedLine opens the one line a member logs when its tree digest
// differs from its leader's.
const divergedLine = "DIVERGED: this member's tree differs from the leader's at zxid 0x"

// TestIntegration_Divergence: a stopped follower's persisted tree is
// changed (one node's data in its snapshot, every checksum recomputed, so
// no corruption check can tell). Started again, it rejoins, and the first
// write whose digest it checks stops it: one DIVERGED line naming the
// zxid, both digests and what to do, status 70; it then refuses to start
// on that data. The two others keep serving throughout, and once its
// state directory is moved aside the member is rebuilt from its peers
// with the original data.
func TestIntegration_Divergence(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{Binary: zkdBin(t)})
	l := leader(t, servers)
	f, other := servers[(l+1)%3], servers[(l+2)%3]
	w := &writer{c: connect(t, servers[l].Addr, other.Addr)}
	const canary, orig, changed = "/canary", "canary-data-0123456789", "canary-data-9876543210"
	if _, err := w.c.Create(canary, []byte(orig), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	w.writeN(t, 20)
	fc := connect(t, f.Addr)
	if _, err := fc.Sync(canary); err != nil {
		t.Fatal(err)
	}
	if data, _, err := fc.Get(canary); err != nil || string(data) != orig {
		t.Fatalf("%s on the follower before the change: %q, %v", canary, data, err)
	}
	fc.Close()

	f.Stop() // a clean stop snapshots the tree
	stateDir := filepath.Join(f.DataDir, "zkd")
	if err := zabtest.ReplaceInSnapshot(stateDir, []byte(orig), []byte(changed)); err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	for f.Running() {
		if time.Now().After(deadline) {
			t.Fatalf("the diverged member still runs 60s after its restart; tail:\n%s", tail(f.Log(), 3000))
		}
		if err := w.write(); err != nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("the diverged member stopped %v after its restart", time.Since(start).Round(time.Millisecond))
	line := checkExitLine(t, f, 70, divergedLine)
	if !strings.Contains(line, fmt.Sprintf("the leader's (member %d) ", l+1)) || !strings.Contains(line, "zkd rebuild ") {
		t.Fatalf("the line names not the leader (member %d) and both digests, or not %s: %s", l+1, stateDir, line)
	}

	// The two others keep serving.
	w.writeUntil(t, 20, 30*time.Second)
	w.checkAcked(t, connect(t, other.Addr))

	// Restarted by a supervisor, it refuses the same data.
	startFails(t, f, 70, "DIVERGED: ", filepath.Join(stateDir, "DIVERGED"), "zkd rebuild ")

	// Moved aside, it is rebuilt from its peers with the original data.
	if err := os.Rename(stateDir, stateDir+".diverged"); err != nil {
		t.Fatal(err)
	}
	f.Restart(t)
	fc = connect(t, f.Addr)
	if _, err := fc.Sync(canary); err != nil {
		t.Fatal(err)
	}
	if data, _, err := fc.Get(canary); err != nil || string(data) != orig {
		t.Fatalf("%s on the rebuilt member: %q, %v; want %q", canary, data, err, orig)
	}
	w.checkAcked(t, fc)
}

// TestIntegration_DivergenceReplay: standalone, a snapshot changed at rest
// (checksums valid) under a log tail is caught while the tail replays at
// start: the digests the member recorded in its log before the crash do
// not match the tree it rebuilds. It stops with the DIVERGED line (telling
// to restore a backup: there are no peers) and status 70 before serving,
// and refuses to start again.
func TestIntegration_DivergenceReplay(t *testing.T) {
	s := zkproc.StartZkd(t, zkproc.Options{Binary: zkdBin(t), ExtraCfg: map[string]string{"snapCount": "40"}})
	w := &writer{c: connect(t, s.Addr)}
	const canary, orig, changed = "/canary", "canary-data-0123456789", "canary-data-9876543210"
	if _, err := w.c.Create(canary, []byte(orig), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	w.writeN(t, 40)
	waitLog(t, s, "snapshot taken after snapCount writes", 20*time.Second)
	w.writeN(t, 10) // the log tail after the snapshot
	s.Kill()        // no snapshot at shutdown: the tail replays at the next start
	if err := zabtest.ReplaceInSnapshot(filepath.Join(s.DataDir, "zkd"), []byte(orig), []byte(changed)); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	line := checkExitLine(t, s, 70, divergedLine)
	if !strings.Contains(line, "restore its data directory from a backup") {
		t.Fatalf("a standalone member is told to rebuild from peers: %s", line)
	}
	startFails(t, s, 70, "DIVERGED: ", "zkd refuses to start on it")
}

// TestIntegration_DivergenceIdle: with no client writing, a follower
// restarted on a changed snapshot is still caught, by the empty entry
// carrying the digest that an idle leader proposes every 10s.
func TestIntegration_DivergenceIdle(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{Binary: zkdBin(t)})
	l := leader(t, servers)
	f := servers[(l+1)%3]
	c := connect(t, servers[l].Addr)
	const canary, orig, changed = "/canary", "canary-data-0123456789", "canary-data-9876543210"
	if _, err := c.Create(canary, []byte(orig), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	fc := connect(t, f.Addr)
	if _, err := fc.Sync(canary); err != nil {
		t.Fatal(err)
	}
	fc.Close()
	f.Stop()
	if err := zabtest.ReplaceInSnapshot(filepath.Join(f.DataDir, "zkd"), []byte(orig), []byte(changed)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := start.Add(30 * time.Second)
	for f.Running() {
		if time.Now().After(deadline) {
			t.Fatalf("the diverged member of an idle ensemble still runs 30s after its restart; tail:\n%s", tail(f.Log(), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("stopped %v after its restart with no client writing", time.Since(start).Round(time.Millisecond))
	checkExitLine(t, f, 70, divergedLine)
	if data, _, err := c.Get(canary); err != nil || string(data) != orig {
		t.Fatalf("%s on the leader: %q, %v", canary, data, err)
	}
}
