package diskfault

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/faultfs"
	"github.com/zkd/zkd/compat/zkproc"
)

// stallRun connects an idle session (4 s timeout) and a writer to s, makes
// every fsync of the data directory take stall, makes one write through
// it, and reports whether the idle session survived and how long the write
// took.
func stallRun(t *testing.T, f *faultfs.FS, s *zkproc.Server, stall time.Duration) (expired bool, took time.Duration) {
	t.Helper()
	idle, ev, err := zk.Connect([]string{s.Addr}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	for e := range ev {
		if e.State == zk.StateHasSession {
			break
		}
	}
	sid := idle.SessionID()
	expiredCh := make(chan struct{}, 1)
	go func() {
		for e := range ev {
			if e.State == zk.StateExpired {
				expiredCh <- struct{}{}
			}
		}
	}()
	w := &writer{c: connect(t, s.Addr)}
	w.writeN(t, 10)
	f.SetFsyncDelay(stall)
	start := time.Now()
	err = w.write()
	took = time.Since(start)
	f.Clear()
	if err != nil {
		t.Logf("write during the stall: %v", err)
	}
	// Give expiry its chance: a session timeout past the stall.
	deadline := time.After(5 * time.Second)
	for {
		select {
		case <-expiredCh:
			return true, took
		case <-deadline:
			if _, _, err := idle.Exists("/"); err != nil || idle.SessionID() != sid {
				return true, took
			}
			return false, took
		}
	}
}

// TestIntegration_FsyncStallStandalone: every fsync of the data directory
// takes 6 s (longer than the idle client's 4 s session timeout); the write
// waits for it, and the idle session, whose pings need no disk, must not
// expire.
func TestIntegration_FsyncStallStandalone(t *testing.T) {
	f := mountDir(t)
	s := zkproc.StartZkd(t, zkproc.Options{Dir: memberDir(t, f, 1), Binary: zkdBin(t)})
	expired, took := stallRun(t, f, s, 6*time.Second)
	t.Logf("zkd: write took %v during a 6 s fsync stall; idle 4 s session expired: %v", took, expired)
	if expired {
		t.Fatal("an idle session expired because the disk was slow")
	}
}

// TestIntegration_FsyncStallLeader: every fsync of the leader's data
// directory takes 6 s; an idle 4 s session on a follower must not expire,
// and a write through that follower is acknowledged.
func TestIntegration_FsyncStallLeader(t *testing.T) {
	f := mountDir(t)
	f.SetFilter(func(string) bool { return false })
	servers := ensemble(t, f)
	l := leader(t, servers)
	f.SetFilter(memberData(l))
	expired, took := stallRun(t, f, servers[(l+1)%3], 6*time.Second)
	t.Logf("zkd, 3 members: write took %v during a 6 s fsync stall on the leader; idle 4 s session expired: %v", took, expired)
	if expired {
		t.Fatal("an idle session expired because the leader's disk was slow")
	}
}

// TestIntegration_FsyncStallLeaderHandsOff: every fsync of the leader's
// data directory takes 3 s while a client of the two other members
// writes, and three clients of the leader too, none of whose writes may
// fail. The leader hands leadership to another member after its first
// stalled write (or two: raft may take a batch queued before the
// transfer), with one SLOW DISK line and leader_slow_disk_handoffs 1;
// within a bound the writer's writes are acknowledged again with a p99 far
// below the stall, the slow member no longer leads, no session expires (an
// idle 4 s session on each member, and the writers'), and every
// acknowledged write is there.
func TestIntegration_FsyncStallLeaderHandsOff(t *testing.T) {
	const stall = 3 * time.Second
	f := mountDir(t)
	f.SetFilter(func(string) bool { return false })
	servers := ensemble(t, f)
	l := leader(t, servers)
	expired := make(chan string, 16)
	// The slow member keeps serving its clients through the hand-off:
	// its idle client is never disconnected (counted once the stall
	// began).
	var stalling atomic.Bool
	var slowIdleDropped atomic.Int64
	for i, s := range servers {
		c, ev, err := zk.Connect([]string{s.Addr}, 4*time.Second, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		go func() {
			for e := range ev {
				switch {
				case e.State == zk.StateExpired:
					expired <- fmt.Sprintf("idle 4 s session on member %d", i+1)
				case e.State == zk.StateDisconnected && i == l && stalling.Load():
					slowIdleDropped.Add(1)
				}
			}
		}()
	}
	// The writer is a client of the two healthy members: a write of it
	// that the slow leader held when leadership moved is lost
	// (ConnectionLoss, see docs/disk-faults.md), and it reconnects to
	// the other one at once.
	wc, wev, err := zk.Connect([]string{servers[(l+1)%3].Addr, servers[(l+2)%3].Addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wc.Close)
	go func() {
		for e := range wev {
			if e.State == zk.StateExpired {
				expired <- "the writer's 10 s session"
			}
		}
	}()
	w := &writer{c: wc}
	w.writeUntil(t, 10, 20*time.Second)
	// Three clients of the slow leader write too, one write at a time
	// each: none of their writes may fail (those the leader holds during
	// the hand-off go on to the new leader).
	var slowWriters []*writer
	for i := range 3 {
		c := connect(t, servers[l].Addr)
		slowWriters = append(slowWriters, &writer{c: c, n: 100000 * (i + 1)})
	}
	f.SetFilter(memberData(l))
	f.SetFsyncDelay(stall)
	start := time.Now()
	stalling.Store(true)
	stop := make(chan struct{})
	var errsOnSlow atomic.Int64
	var wg sync.WaitGroup
	for _, sw := range slowWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := sw.write(); err != nil {
					if errsOnSlow.Add(1) <= 5 {
						t.Logf("a client of the slow member, %v into the stall: %v", time.Since(start), err)
					}
				}
			}
		}()
	}
	// Write until leadership has moved and 50 writes in a row were
	// acknowledged after it, timing those.
	var (
		moved   time.Duration
		after   []time.Duration
		errs    int
		leaders string
	)
	for len(after) < 50 {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("30 s into the stall: leadership moved after %v, %d writes acknowledged since, %d errors; leader's log tail:\n%s",
				moved, len(after), errs, tail(servers[l].Log(), 3000))
		}
		begin := time.Now()
		err := w.write()
		took := time.Since(begin)
		if moved == 0 {
			for i, s := range servers {
				if out, ferr := s.FourLetter("srvr"); ferr == nil && i != l && strings.Contains(out, "Mode: leader") {
					moved, leaders = time.Since(start), fmt.Sprint(i+1)
				}
			}
			continue
		}
		if err != nil {
			errs++
			t.Logf("write %v after the hand-off: %v", time.Since(start), err)
			after = after[:0]
			continue
		}
		if took > stall/10 {
			t.Logf("a write acknowledged %v after the stall began took %v", time.Since(start), took)
		}
		after = append(after, took)
	}
	f.Clear()
	close(stop)
	wg.Wait()
	ackedOnSlow := 0
	for _, sw := range slowWriters {
		ackedOnSlow += len(sw.acked)
	}
	t.Logf("clients of the slow member: %d writes acknowledged, %d failed", ackedOnSlow, errsOnSlow.Load())
	if errsOnSlow.Load() > 0 {
		t.Errorf("%d writes of the slow member's clients failed: those it held during the hand-off must go on to the new leader", errsOnSlow.Load())
	}
	slices.Sort(after)
	p99 := after[len(after)*99/100]
	t.Logf("leadership moved from member %d to member %s %v after the stall began; 50 writes after it: p50 %v, p99 %v, max %v; %d errors",
		l+1, leaders, moved, after[len(after)/2], p99, after[len(after)-1], errs)
	if moved > 2*stall+5*time.Second {
		t.Errorf("leadership moved %v after the stall began, want within one stall and an election (%v)", moved, 2*stall+5*time.Second)
	}
	if p99 > stall/10 {
		t.Errorf("writes after the hand-off: p99 %v, want far below the %v stall (under %v)", p99, stall, stall/10)
	}
	if out, err := servers[l].FourLetter("srvr"); err != nil || strings.Contains(out, "Mode: leader") {
		t.Errorf("the slow member %d: srvr %q, %v; want it following", l+1, out, err)
	}
	// The old leader logs once it knows the new one.
	for deadline := time.Now().Add(10 * time.Second); len(logLines(servers[l], "SLOW DISK")) == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	lines := logLines(servers[l], "SLOW DISK: this leader's raft log write took")
	if len(lines) != 1 || !strings.Contains(lines[0], "leadership moved to member "+leaders) {
		t.Errorf("the slow leader logged %d SLOW DISK hand-off lines, want 1 naming member %s: %q; its log:\n%s", len(lines), leaders, lines, tail(servers[l].Log(), 6000))
	} else {
		t.Logf("the line: %s", lines[0])
	}
	if out, err := servers[l].FourLetter("mntr"); err != nil || !strings.Contains(out, "zk_leader_slow_disk_handoffs\t1\n") {
		t.Errorf("the slow member's mntr has no zk_leader_slow_disk_handoffs 1: %v\n%s", err, out)
	}
	if n := slowIdleDropped.Load(); n > 0 {
		t.Errorf("the idle client of the slow member was disconnected %d times during the hand-off: the member stopped serving", n)
	}
	select {
	case what := <-expired:
		t.Fatalf("%s expired because the leader's disk was slow", what)
	default:
	}
	w.checkAcked(t, wc)
	for _, sw := range slowWriters {
		sw.checkAcked(t, wc)
	}
}
