package rejoin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// wait bounds every wait for an event of a member (a start, a log line,
// an election): generous, for a loaded machine.
const wait = 60 * time.Second

// tickTime keeps elections short: raft's election timeout is
// syncLimit (5) × tickTime / 5, 200 ms.
const tickTime = 200

// writer creates /r-N nodes one by one, remembering those acknowledged.
type writer struct {
	c     *zk.Conn
	mu    sync.Mutex
	n     int
	acked []string
}

// write creates the next node; an acknowledged one is remembered.
func (w *writer) write() error {
	w.mu.Lock()
	p := fmt.Sprintf("/r-%06d", w.n)
	w.n++
	w.mu.Unlock()
	_, err := w.c.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll))
	if err == nil {
		w.mu.Lock()
		w.acked = append(w.acked, p)
		w.mu.Unlock()
	}
	return err
}

// writeN makes n acknowledged writes, retrying through a leader change
// for up to wait.
func (w *writer) writeN(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for done := 0; done < n; {
		if err := w.write(); err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("write: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		done++
	}
}

// count is how many writes were acknowledged.
func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// checkAcked fails the test unless every acknowledged node is readable
// through c (after a sync) with its data.
func (w *writer) checkAcked(t *testing.T, c *zk.Conn) {
	t.Helper()
	if _, err := c.Sync("/"); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	acked := append([]string(nil), w.acked...)
	w.mu.Unlock()
	lost := 0
	for _, p := range acked {
		data, _, err := c.Get(p)
		if err != nil || string(data) != p {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged %s: got %q, %v", p, data, err)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost", lost, len(acked))
	}
	t.Logf("all %d acknowledged writes present", len(acked))
}

// logLine is the first line of s's log containing sub.
func logLine(s *zkproc.Server, sub string) string {
	for _, l := range strings.Split(s.Log(), "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// awaitLogSince waits until s's log, from byte from on, contains n lines
// with any of wants.
func awaitLogSince(t *testing.T, s *zkproc.Server, from, n int, wants ...string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		got := 0
		for _, w := range wants {
			got += strings.Count(s.Log()[from:], w)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %q %d times within %v", s.Addr, wants, n, wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// zkdDir is the folder of a member's data directory holding zkd's data.
func zkdDir(s *zkproc.Server) string { return filepath.Join(s.DataDir, "zkd") }

// copyTree copies directory src to dst (which must not exist).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v: %s", src, dst, err, out)
	}
}

// noLeaderFor fails the test if any of servers says it leads within d.
func noLeaderFor(t *testing.T, d time.Duration, servers ...*zkproc.Server) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, s := range servers {
			if s.Mode() == "leader" {
				t.Fatalf("%s leads without the member that holds the newest acknowledged writes:\n%s", s.Addr, s.Log())
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestIntegration_RestoredBackupRejoin: member B's data goes back: to a
// copy taken cold (B stopped, then started again) or hot (B paused, as a
// crash image), or to nothing (deleted by hand, or by `zkd rebuild`).
// Between the copy and the damage B runs on, then C stops and writes are
// acknowledged by the leader A and B alone. B is stopped, its data put
// back (or emptied), A killed, and B and C started: B+C are a majority,
// and before the vote fence they elected a leader without the writes C
// never saw and B forgot (20 of 40 lost with the zkd of 923ef8f, cold, hot
// and emptied by hand). Now B logs why it does not vote, so no leader is
// elected until A is back (nor after B restarts meanwhile); then B
// catches up and votes again, and every
// acknowledged write is there, even after A is stopped again and B and C
// elect a leader between them.
func TestIntegration_RestoredBackupRejoin(t *testing.T) {
	bin := zkproc.BuildZkd(t)
	for _, tc := range []struct {
		name string
		// backup copies b's zkd data to dst and returns once c knows
		// that b ran on after the copy.
		backup func(t *testing.T, b, c *zkproc.Server, bID int, dst string)
		// damage puts b's data back (b is stopped).
		damage func(t *testing.T, b *zkproc.Server, backup string)
		// line is what b logs when it starts fenced.
		line string
	}{
		{"cold", func(t *testing.T, b, c *zkproc.Server, bID int, dst string) {
			b.Stop()
			copyTree(t, zkdDir(b), dst)
			b.Restart(t)
			b.AwaitLogCount(t, "every member knows this start", 2, wait)
		}, restore, "DATA WENT BACK"},
		{"hot", func(t *testing.T, b, c *zkproc.Server, bID int, dst string) {
			b.Pause()
			copyTree(t, zkdDir(b), dst)
			b.Resume()
			// Twice, from B's announcement or from B's answer to C's:
			// the first raise may be one B had made before the copy and
			// was still announcing.
			awaitLogSince(t, c, len(c.Log()), 2, fmt.Sprintf("member %d raised its incarnation", bID),
				fmt.Sprintf("learned member %d's incarnation", bID))
		}, restore, "DATA WENT BACK"},
		{"witnessed through a peer", func(t *testing.T, b, c *zkproc.Server, bID int, dst string) {
			// C is down while B runs on after the copy; A alone sees
			// it, and tells C once C is back (B is down then, so C
			// can only learn it from A).
			b.Stop()
			copyTree(t, zkdDir(b), dst)
			c.Stop()
			b.Restart(t)
			b.AwaitLogCount(t, "data did not go back", 2, wait)
			b.Stop()
			from := len(c.Log())
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			awaitLogSince(t, c, from, 1, fmt.Sprintf("learned member %d's incarnation", bID))
			b.Restart(t)
		}, restore, "DATA WENT BACK"},
		{"emptied", func(*testing.T, *zkproc.Server, *zkproc.Server, int, string) {},
			func(t *testing.T, b *zkproc.Server, _ string) {
				if err := os.RemoveAll(zkdDir(b)); err != nil {
					t.Fatal(err)
				}
			}, "DATA WENT BACK"},
		{"rebuilt", func(*testing.T, *zkproc.Server, *zkproc.Server, int, string) {},
			func(t *testing.T, b *zkproc.Server, _ string) {
				if out, err := exec.Command(bin, "rebuild", b.CfgPath).CombinedOutput(); err != nil {
					t.Fatalf("zkd rebuild %s: %v\n%s", b.CfgPath, err, out)
				}
			}, "data directory emptied by zkd rebuild"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{Binary: bin, TickTime: tickTime,
				ExtraCfg: map[string]string{"zkd.log.level": "debug"}})
			ai := zkproc.LeaderOf(t, servers, wait)
			bi := (ai + 1) % 3
			a, b, c := servers[ai], servers[bi], servers[(ai+2)%3]
			w := &writer{c: zkproc.Connect(t, a.Addr)}
			w.writeN(t, 20)

			backup := filepath.Join(t.TempDir(), "backup")
			tc.backup(t, b, c, bi+1, backup)

			c.Stop()
			before := w.count()
			w.writeN(t, 20) // on A and B only
			t.Logf("%d writes acknowledged by A and B while C was down", w.count()-before)

			b.Kill()
			tc.damage(t, b, backup)
			a.Kill()
			if err := b.Start(); err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			b.AwaitLog(t, tc.line, wait)
			t.Logf("B: %s", logLine(b, tc.line))
			// B and C would be a majority: with B fenced they elect
			// nobody. Ten election timeouts.
			noLeaderFor(t, 10*5*tickTime*time.Millisecond/5, b, c)
			// Restarted before it caught up, B stays out: its raised
			// incarnation is news to C now, but B remembers it went back.
			b.Stop()
			if err := b.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.line == "DATA WENT BACK" {
				b.AwaitLog(t, "has not caught up since", wait)
			} else {
				b.AwaitLogCount(t, tc.line, 2, wait)
			}
			noLeaderFor(t, 5*5*tickTime*time.Millisecond/5, b, c)

			back := time.Now()
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			b.AwaitLog(t, "this member votes again", wait)
			t.Logf("B votes again %v after A was started again", time.Since(back).Round(time.Millisecond))
			w.checkAcked(t, zkproc.Connect(t, b.Addr))

			// B votes again: without A, B and C elect a leader, which
			// has every acknowledged write.
			a.Stop()
			zkproc.LeaderOf(t, []*zkproc.Server{b, c}, wait)
			w.checkAcked(t, zkproc.Connect(t, b.Addr, c.Addr))
		})
	}
}

// restore replaces b's zkd data with the copy in backup.
func restore(t *testing.T, b *zkproc.Server, backup string) {
	t.Helper()
	restoreDir(t, backup, zkdDir(b))
}

// restoreDir replaces dir with a copy of backup.
func restoreDir(t *testing.T, backup, dir string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	copyTree(t, backup, dir)
}

// TestIntegration_RebuildMemberFromPeers: follower B's raft log is
// corrupted while it is stopped; it refuses to start (exit 65) with a
// line naming `zkd rebuild zoo.cfg`. While a client writes, B is rebuilt
// with that command (its data moved aside, kept) and started: it copies
// the leader's state, logs that it votes again, and once the leader is
// stopped B and C elect a leader that holds every acknowledged write.
func TestIntegration_RebuildMemberFromPeers(t *testing.T) {
	bin := zkproc.BuildZkd(t)
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{Binary: bin, TickTime: tickTime})
	ai := zkproc.LeaderOf(t, servers, wait)
	a, b, c := servers[ai], servers[(ai+1)%3], servers[(ai+2)%3]
	w := &writer{c: zkproc.Connect(t, a.Addr, c.Addr)}
	w.writeN(t, 200)

	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if w.write() != nil {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()

	b.Stop()
	old := zkdDir(b)
	// A byte flipped in a record of B's raft log that many follow: B
	// refuses to start and names the command.
	seg := filepath.Join(old, "wal", "0000000000000001.wal")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[5000] ^= 0xff
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	from := len(b.Log())
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait)
	for b.Running() {
		if time.Now().After(deadline) {
			t.Fatalf("B started on a corrupt raft log:\n%s", b.Log()[from:])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := b.Cmd.ProcessState.ExitCode(); code != 65 || !strings.Contains(b.Log()[from:], "zkd rebuild "+b.CfgPath) {
		t.Fatalf("exit %d, want 65 and a line naming zkd rebuild %s:\n%s", code, b.CfgPath, b.Log()[from:])
	}
	t.Logf("B: %s", logLine(b, "CORRUPT DATA"))

	out, err := exec.Command(bin, "rebuild", b.CfgPath).CombinedOutput()
	if err != nil {
		t.Fatalf("zkd rebuild %s: %v\n%s", b.CfgPath, err, out)
	}
	t.Logf("zkd rebuild: %s", out)
	moved, _ := filepath.Glob(old + ".before-rebuild-*")
	if len(moved) != 1 || !strings.Contains(string(out), moved[0]) {
		t.Fatalf("old data not kept where zkd rebuild says (%v):\n%s", moved, out)
	}
	if entries, err := os.ReadDir(filepath.Join(moved[0], "wal")); err != nil || len(entries) == 0 {
		t.Fatalf("moved data has no raft log: %v %v", entries, err)
	}
	if _, err := os.Stat(filepath.Join(old, "REBUILD")); err != nil {
		t.Fatalf("no rebuild marker: %v", err)
	}
	if _, err := os.Stat(filepath.Join(b.DataDir, "myid")); err != nil {
		t.Fatalf("myid not kept: %v", err)
	}

	during, started := w.count(), time.Now()
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	b.AwaitLog(t, "this member votes again", wait)
	t.Logf("B votes again %v after its start", time.Since(started).Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(old, "REBUILD")); !os.IsNotExist(err) {
		t.Fatalf("rebuild marker still there after catching up: %v", err)
	}
	close(stop)
	<-done
	t.Logf("%d writes acknowledged while B was rebuilt, %d in all", w.count()-during, w.count())

	// B votes again: without the leader, B and C elect one, which holds
	// every acknowledged write.
	a.Stop()
	zkproc.LeaderOf(t, []*zkproc.Server{b, c}, wait)
	w.checkAcked(t, zkproc.Connect(t, b.Addr, c.Addr))
}
