package diskfault

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/faultfs"
	"github.com/zkd/zkd/compat/zkproc"
)

// zkEnsemble starts three ZooKeeper 3.8 members with their directories
// member1..3 on f's mount, with extra zoo.cfg lines.
func zkEnsemble(t *testing.T, f *faultfs.FS, extra map[string]string) []*zkproc.Server {
	t.Helper()
	var dirs []string
	for i := 1; i <= 3; i++ {
		dirs = append(dirs, memberDir(t, f, i))
	}
	return zkproc.StartZooKeeperEnsemble(t, 3, zkproc.Options{MemberDirs: dirs, ExtraCfg: extra})
}

// zkOutcome is what one ZooKeeper member did with its disk fault.
type zkOutcome struct {
	exited   bool // the member's process ended
	status   int  // its exit status, if it ended
	line     string
	recovery time.Duration // fault to the 50th write acknowledged by the others
}

// faultZooKeeperMember takes w, a client of the members other than
// victim, injects fault into member victim's data directory, and
// makes 50 more acknowledged writes; it reports what the victim did.
// The writer's session must survive (the client is not on the victim).
func faultZooKeeperMember(t *testing.T, f *faultfs.FS, servers []*zkproc.Server, victim int, w *writer, fault func()) zkOutcome {
	t.Helper()
	sid := w.c.SessionID()
	f.SetFilter(memberData(victim))
	fault()
	start := time.Now()
	w.writeUntil(t, 50, 60*time.Second)
	out := zkOutcome{recovery: time.Since(start)}
	// Give the victim a moment to act on the fault: a later write may be
	// the one whose fsync or allocation fails.
	deadline := time.Now().Add(10 * time.Second)
	for servers[victim].Running() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if !servers[victim].Running() {
		out.exited = true
		if st := servers[victim].Cmd.ProcessState; st != nil {
			out.status = st.ExitCode()
		}
	}
	for _, l := range strings.Split(servers[victim].Log(), "\n") {
		if strings.Contains(l, "Severe unrecoverable error") || strings.Contains(l, "No space left") || strings.Contains(l, "Input/output error") {
			out.line = l
			break
		}
	}
	if got := w.c.SessionID(); got != sid {
		t.Fatalf("the client's session changed from %#x to %#x: it expired", sid, got)
	}
	return out
}

// TestIntegration_ZooKeeperEnsembleFaults runs the 3-member disk faults
// of this package on ZooKeeper 3.8, for the comparison in
// docs/disk-faults.md: the leader's fsync failing, the leader's disk
// full, and all three members' power cut while a client writes. It
// pins what ZooKeeper does; if this ever fails, the document is out of
// date.
func TestIntegration_ZooKeeperEnsembleFaults(t *testing.T) {
	t.Run("fsync EIO on the leader", func(t *testing.T) {
		f := mountDir(t)
		f.SetFilter(func(string) bool { return false })
		servers := zkEnsemble(t, f, nil)
		l := zkproc.LeaderOf(t, servers, 30*time.Second)
		w := &writer{c: connect(t, servers[(l+1)%3].Addr, servers[(l+2)%3].Addr)}
		w.writeN(t, 50)
		out := faultZooKeeperMember(t, f, servers, l, w, func() { f.SetFsyncError(syscall.EIO) })
		t.Logf("ZooKeeper 3.8: leader's fsync EIO: 50 more writes acknowledged %v after the fault; leader exited %v (status %d): %s",
			out.recovery, out.exited, out.status, out.line)
		if out.exited || out.line == "" {
			t.Fatalf("ZooKeeper's leader exited %v (status %d), line %q: docs/disk-faults.md says it logs Severe unrecoverable error and keeps running", out.exited, out.status, out.line)
		}
		// While its fsyncs fail it cannot serve: rejoining needs one
		// (it writes its accepted epoch, synced).
		if srvr, _ := servers[l].FourLetter("srvr"); strings.Contains(srvr, "Mode:") {
			t.Fatalf("ZooKeeper's leader serves after its failed fsync (srvr %q): docs/disk-faults.md says it does not", srvr)
		}
		f.Clear()
		cleared := time.Now()
		mode := ""
		for deadline := cleared.Add(90 * time.Second); mode == "" && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
			mode = servers[l].Mode()
		}
		if mode == "" || !servers[l].Running() {
			t.Fatalf("ZooKeeper's leader did not serve again within 90 s of its disk working (running %v): docs/disk-faults.md says it rejoins without a restart", servers[l].Running())
		}
		t.Logf("ZooKeeper 3.8: once its disk works again the member serves %v later, as %s, without a restart", time.Since(cleared).Round(time.Millisecond), mode)
		w.checkAcked(t, connect(t, servers[(l+1)%3].Addr, servers[(l+2)%3].Addr))
	})
	t.Run("disk full on the leader", func(t *testing.T) {
		f := mountDir(t)
		f.SetFilter(func(string) bool { return false })
		servers := zkEnsemble(t, f, map[string]string{"snapCount": "100"})
		l := zkproc.LeaderOf(t, servers, 30*time.Second)
		w := &writer{c: connect(t, servers[(l+1)%3].Addr, servers[(l+2)%3].Addr)}
		w.writeN(t, 20)
		out := faultZooKeeperMember(t, f, servers, l, w, func() { f.SetSpaceLeft(0) })
		// Up to 300 writes: the preallocated txn log holds a while.
		w.writeUntil(t, 250, 60*time.Second)
		deadline := time.Now().Add(15 * time.Second)
		for servers[l].Running() && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("ZooKeeper 3.8: leader's disk full: 50 writes acknowledged %v after it filled, 300 in all; the leader exited: %v",
			out.recovery, servers[l].Cmd.ProcessState)
		if servers[l].Running() || servers[l].Cmd.ProcessState.ExitCode() != 10 {
			t.Fatalf("ZooKeeper's leader: running %v, %v: docs/disk-faults.md says it exits with status 10", servers[l].Running(), servers[l].Cmd.ProcessState)
		}
		f.Clear()
		servers[l].Restart(t)
		c := connect(t, servers[l].Addr)
		if _, err := c.Sync("/"); err != nil {
			t.Fatal(err)
		}
		w.checkAcked(t, c)
	})
	t.Run("power cut", func(t *testing.T) {
		f := mountDir(t)
		f.SetFilter(memberData(0, 1, 2))
		servers := zkEnsemble(t, f, nil)
		w := &writer{c: connect(t, zkproc.Addrs(servers)...)}
		w.writeN(t, 100)
		for _, s := range servers {
			s.Kill()
		}
		if err := f.PowerCut(); err != nil {
			t.Fatal(err)
		}
		const broken = "No snapshot found, but there are log entries. Something is broken!"
		for _, s := range servers {
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
		}
		// A member refuses to start when its first snapshot (snapshot.0,
		// never fsynced) is gone and its log is not. A follower that
		// synced from its leader by SNAP (one that joined the ensemble
		// late, as under load) fsynced the snapshot it received, and
		// starts; alone it has no quorum. Wait for each to exit, then
		// pin what always holds: at least two refuse with that line, so
		// none serves.
		var refused, survivors []*zkproc.Server
		deadline := time.Now().Add(30 * time.Second)
		for _, s := range servers {
			for s.Running() && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if s.Running() {
				survivors = append(survivors, s)
				continue
			}
			if !strings.Contains(s.Log(), broken) {
				t.Fatalf("%s exited (%v) without %q: docs/disk-faults.md is out of date; tail:\n%s",
					s.Addr, s.Cmd.ProcessState, broken, tail(s.Log(), 3000))
			}
			refused = append(refused, s)
		}
		if len(refused) < 2 {
			t.Fatalf("%d of 3 members refused to start with %q: docs/disk-faults.md says at least two do", len(refused), broken)
		}
		for _, s := range survivors {
			if mode := s.Mode(); mode != "" {
				t.Fatalf("%s serves as %s after the power cut with two members refusing to start", s.Addr, mode)
			}
			sync := "no SNAP line in its log"
			for _, l := range strings.Split(s.Log(), "\n") {
				if strings.Contains(l, "Getting a snapshot from leader") {
					sync = "it had synced by SNAP: " + strings.TrimSpace(l)
				}
			}
			t.Logf("ZooKeeper 3.8: %s started again but does not serve, having no quorum (%s)", s.Addr, sync)
		}
		t.Logf("ZooKeeper 3.8: power cut of all three members: %d of 3 refuse to start (%q, %v), so none serves; the %d acknowledged writes are unreachable until an operator repairs the data directories",
			len(refused), broken, refused[0].Cmd.ProcessState, len(w.acked))
	})
}
