package diskfault

import (
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
