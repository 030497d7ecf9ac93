package diskfault

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

// The one lines zkd logs when it stops on a disk fault.
const (
	diskFailureLine = "DISK FAILURE: fsync of "
	diskFullLine    = "DISK FULL: no space left on the file system of dataDir "
)

// checkDiskExit checks that s exited with status 74 after logging, since
// its last start, exactly one line with prefix naming its data directory
// and what to do.
func checkDiskExit(t *testing.T, s *zkproc.Server, prefix string) {
	t.Helper()
	checkExitLine(t, s, 74, prefix)
}

// checkExitLine checks that s exited with status code after logging, since
// its last start, exactly one line with prefix naming a path under its
// data directory and what to do, and returns that line.
func checkExitLine(t *testing.T, s *zkproc.Server, code int, prefix string) string {
	t.Helper()
	waitExit(t, s, 15*time.Second)
	if st := s.Cmd.ProcessState; st == nil || st.ExitCode() != code {
		t.Fatalf("%s exited with %v, want status %d; tail:\n%s", s.Addr, st, code, tail(s.Log(), 3000))
	}
	log := s.Log()
	log = log[strings.LastIndex(log, "=== zkproc: starting"):]
	var lines []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, prefix) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d lines with %q since the last start, want 1; tail:\n%s", len(lines), prefix, tail(log, 3000))
	}
	if !strings.Contains(lines[0], s.DataDir) || !strings.Contains(lines[0], "start zkd again") && !strings.Contains(lines[0], "restart zkd") {
		t.Fatalf("the line names no path under %s or no action: %s", s.DataDir, lines[0])
	}
	t.Logf("%s", lines[0])
	return lines[0]
}

// checkDiskFailureExit checks the exit after a failed fsync.
func checkDiskFailureExit(t *testing.T, s *zkproc.Server) {
	t.Helper()
	checkDiskExit(t, s, diskFailureLine)
}

// TestIntegration_FsyncEIOStandalone: a failed fsync stops the member
// with one line and status 74; the client's pending write gets an error,
// not a hang; after a restart every acknowledged write is there.
func TestIntegration_FsyncEIOStandalone(t *testing.T) {
	f := mountDir(t)
	s := zkproc.StartZkd(t, zkproc.Options{Dir: memberDir(t, f, 1), Binary: zkdBin(t)})
	w := &writer{c: connect(t, s.Addr)}
	w.writeN(t, 50)
	sid := w.c.SessionID()
	f.SetFsyncError(syscall.EIO)
	if err := w.write(); err == nil {
		t.Fatal("a write was acknowledged although its fsync failed")
	} else if strings.Contains(err.Error(), "a hang") {
		t.Fatal(err)
	}
	checkDiskFailureExit(t, s)
	f.Clear()
	start := time.Now()
	s.Restart(t)
	w.checkAcked(t, connect(t, s.Addr))
	t.Logf("serving again %v after the restart", time.Since(start))
	w.keptSession(t, sid)
}

// TestIntegration_FsyncEIOLeader: the leader's fsync fails; it stops with
// one line, the two others elect a leader and keep acknowledging writes;
// the restarted member has every acknowledged write.
func TestIntegration_FsyncEIOLeader(t *testing.T) {
	f := mountDir(t)
	f.SetFilter(func(string) bool { return false })
	servers := ensemble(t, f)
	l := leader(t, servers)
	// The client knows both other members, as a real one knows the
	// ensemble: with one address go-zk waits a second before each
	// reconnect, which would be timed here as the ensemble's recovery.
	w := &writer{c: connect(t, servers[(l+1)%3].Addr, servers[(l+2)%3].Addr)}
	w.writeN(t, 50)
	sid := w.c.SessionID()
	f.SetFilter(memberData(l))
	f.SetFsyncError(syscall.EIO)
	start := time.Now()
	w.writeUntil(t, 50, 30*time.Second)
	t.Logf("50 more writes acknowledged %v after the leader's fsync failed", time.Since(start))
	checkDiskFailureExit(t, servers[l])
	if got := w.c.SessionID(); got != sid {
		t.Fatalf("the client's session changed from %#x to %#x: it expired", sid, got)
	}
	f.Clear()
	servers[l].Restart(t)
	w.checkAcked(t, connect(t, servers[l].Addr))
}

// TestIntegration_PowerCutStandalone: a power cut drops every write not
// fsynced; every acknowledged write survives the restart.
func TestIntegration_PowerCutStandalone(t *testing.T) {
	f := mountDir(t)
	s := zkproc.StartZkd(t, zkproc.Options{Dir: memberDir(t, f, 1), Binary: zkdBin(t)})
	w := &writer{c: connect(t, s.Addr)}
	w.writeN(t, 200)
	sid := w.c.SessionID()
	s.Kill()
	if err := f.PowerCut(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.Restart(t)
	w.checkAcked(t, connect(t, s.Addr))
	t.Logf("serving again %v after the restart", time.Since(start))
	w.keptSession(t, sid)
}

// TestIntegration_PowerCutEnsemble: all three members lose power at once
// while a client writes; every acknowledged write survives.
func TestIntegration_PowerCutEnsemble(t *testing.T) {
	f := mountDir(t)
	f.SetFilter(memberData(0, 1, 2))
	servers := ensemble(t, f)
	w := &writer{c: connect(t, servers[0].Addr)}
	w.writeN(t, 100)
	sid := w.c.SessionID()
	// Writes in flight at the cut: acknowledged ones must survive.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				if w.write() != nil {
					return
				}
			}
		}
	}()
	for _, s := range servers {
		s.Kill()
	}
	close(stop)
	<-done
	if err := f.PowerCut(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	zkproc.RestartAll(t, servers)
	c := connect(t, zkproc.Addrs(servers)...)
	if _, err := c.Sync("/"); err != nil {
		t.Fatal(err)
	}
	w.checkAcked(t, c)
	t.Logf("serving again %v after the restart", time.Since(start))
	w.keptSession(t, sid)
}

// TestIntegration_DiskFullStandalone: the disk fills up; the log still
// has preallocated room, so writes go on until a snapshot needs space.
// Then the member stops with one DISK FULL line and status 74 (the
// client's pending write gets an error, not a hang), refuses to start on
// the still-full disk with the same line, and once space is back starts
// with every acknowledged write.
func TestIntegration_DiskFullStandalone(t *testing.T) {
	f := mountDir(t)
	s := zkproc.StartZkd(t, zkproc.Options{Dir: memberDir(t, f, 1), Binary: zkdBin(t), ExtraCfg: map[string]string{"snapCount": "100"}})
	w := &writer{c: connect(t, s.Addr)}
	w.writeN(t, 50)
	sid := w.c.SessionID()
	f.SetSpaceLeft(0)
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		err = w.write()
	}
	if err == nil || strings.Contains(err.Error(), "a hang") {
		t.Fatalf("write on a full disk: %v, want an error (a snapshot is due every 100 writes)", err)
	}
	checkDiskExit(t, s, diskFullLine)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	checkDiskExit(t, s, diskFullLine)
	f.Clear()
	start := time.Now()
	s.Restart(t)
	w.checkAcked(t, connect(t, s.Addr))
	t.Logf("serving again %v after space came back", time.Since(start))
	w.keptSession(t, sid)
}

// TestIntegration_DiskFullEnsemble: one member's disk (a follower's, then
// in a fresh ensemble the leader's) fills up during a snapshot; it stops
// with one line, the two others go on and the client connected to one of
// them keeps its session; after space is back the member rejoins with
// every acknowledged write.
func TestIntegration_DiskFullEnsemble(t *testing.T) {
	for _, role := range []string{"follower", "leader"} {
		t.Run(role, func(t *testing.T) {
			f := mountDir(t)
			f.SetFilter(func(string) bool { return false })
			servers := ensemble(t, f)
			// snapCount applies on restart: the ensemble is started
			// plain, then every member restarted with it.
			for _, s := range servers {
				appendCfg(t, s, "snapCount=100")
			}
			zkproc.RestartAll(t, servers)
			l := leader(t, servers)
			victim := (l + 1) % 3
			if role == "leader" {
				victim = l
			}
			// The client knows both other members (see
			// TestIntegration_FsyncEIOLeader).
			w := &writer{c: connect(t, servers[(victim+1)%3].Addr, servers[(victim+2)%3].Addr)}
			w.writeN(t, 20)
			sid := w.c.SessionID()
			f.SetFilter(memberData(victim))
			f.SetSpaceLeft(0)
			start := time.Now()
			w.writeUntil(t, 300, 60*time.Second)
			t.Logf("300 writes acknowledged %v after the %s's disk filled", time.Since(start), role)
			checkDiskExit(t, servers[victim], diskFullLine)
			if got := w.c.SessionID(); got != sid {
				t.Fatalf("the client's session changed from %#x to %#x: it expired", sid, got)
			}
			f.Clear()
			servers[victim].Restart(t)
			c := connect(t, servers[victim].Addr)
			if _, err := c.Sync("/"); err != nil {
				t.Fatal(err)
			}
			w.checkAcked(t, c)
		})
	}
}
