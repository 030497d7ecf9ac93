package diskfault

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/faultfs"
	"github.com/zkd/zkd/compat/zkproc"
)

// mountDir mounts a faultfs over a fresh directory and returns it, with
// its faults limited to the data directory of member 1 (see memberDir).
func mountDir(t *testing.T) *faultfs.FS {
	t.Helper()
	f := faultfs.MountTemp(t)
	f.SetFilter(memberData(0))
	return f
}

// memberDir returns a fresh directory for member i (1-based) whose data
// directory, data, is a symbolic link to memberI/data on f's mount. The
// member's zoo.cfg, log and working directory stay off the mount: a child
// the test process starts must not touch the mount this process serves
// before it has exec'd (os/exec holds syscall.ForkLock until then, which
// can stall the FUSE server; a 3-member start hung that way under -race).
func memberDir(t *testing.T, f *faultfs.FS, i int) string {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(f.Dir(), fmt.Sprintf("member%d", i), "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(data, filepath.Join(dir, "data")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// connect opens a go-zk session on addrs and waits until it is connected.
func connect(t *testing.T, addrs ...string) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect(addrs, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				go func() {
					for range ev {
					}
				}()
				return c
			}
		case <-deadline:
			t.Fatalf("no session on %v within 20s", addrs)
		}
	}
}

// writer creates /w-N nodes one by one, remembering those acknowledged.
type writer struct {
	c     *zk.Conn
	n     int
	acked []string
}

// write creates the next node and reports the error, if any; an
// acknowledged node is remembered.
func (w *writer) write() error {
	p := fmt.Sprintf("/w-%06d", w.n)
	w.n++
	done := make(chan error, 1)
	go func() {
		_, err := w.c.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			w.acked = append(w.acked, p)
		}
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("create %s: no reply within 30s (a hang)", p)
	}
}

// writeN makes n acknowledged writes, failing the test on any error.
func (w *writer) writeN(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := w.write(); err != nil {
			t.Fatalf("write %d: %v", w.n-1, err)
		}
	}
}

// checkAcked fails the test unless every acknowledged node is readable
// through c with its data.
func (w *writer) checkAcked(t *testing.T, c *zk.Conn) {
	t.Helper()
	lost := 0
	for _, p := range w.acked {
		data, _, err := c.Get(p)
		if err != nil || string(data) != p {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged %s: got %q, %v", p, data, err)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost", lost, len(w.acked))
	}
	t.Logf("all %d acknowledged writes present", len(w.acked))
}

// waitLog waits until s's log contains sub.
func waitLog(t *testing.T, s *zkproc.Server, sub string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(s.Log(), sub) {
		if time.Now().After(deadline) {
			t.Fatalf("log of %s has no %q within %v; tail:\n%s", s.Addr, sub, timeout, tail(s.Log(), 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitExit waits until s's process has exited.
func waitExit(t *testing.T, s *zkproc.Server, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for s.Running() {
		if time.Now().After(deadline) {
			t.Fatalf("%s still running %v after the fault; tail:\n%s", s.Addr, timeout, tail(s.Log(), 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// zkdBin is ZKD_BIN or a zkd built for the test.
func zkdBin(t *testing.T) string {
	if b := os.Getenv("ZKD_BIN"); b != "" {
		return b
	}
	return zkproc.BuildZkd(t)
}

// logLines are the lines of s's log containing sub.
func logLines(s *zkproc.Server, sub string) []string {
	var out []string
	for _, l := range strings.Split(s.Log(), "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// ensemble starts three zkd members with their directories member1..3 on
// f's mount.
func ensemble(t *testing.T, f *faultfs.FS) []*zkproc.Server {
	t.Helper()
	var dirs []string
	for i := 1; i <= 3; i++ {
		dirs = append(dirs, memberDir(t, f, i))
	}
	return zkproc.StartZkdEnsemble(t, 3, zkproc.Options{MemberDirs: dirs, Binary: zkdBin(t)})
}

// memberData accepts the paths under the data directories of the members
// whose index (0-based) is in idx, but for myid.
func memberData(idx ...int) func(rel string) bool {
	return func(rel string) bool {
		if strings.HasSuffix(rel, "/myid") {
			return false // written by zkproc, not by zkd, and never fsynced
		}
		for _, i := range idx {
			if strings.HasPrefix(rel, fmt.Sprintf("member%d/data/", i+1)) {
				return true
			}
		}
		return false
	}
}

// leader is the index of the member srvr calls leader.
func leader(t *testing.T, servers []*zkproc.Server) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, s := range servers {
			if out, err := s.FourLetter("srvr"); err == nil && strings.Contains(out, "Mode: leader") {
				return i
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no member says it leads within 20s")
	return -1
}

// writeUntil retries writes through w until n more are acknowledged,
// tolerating the errors of a leader change, within timeout.
func (w *writer) writeUntil(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for want := len(w.acked) + n; len(w.acked) < want; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d writes acknowledged within %v", len(w.acked)-(want-n), n, timeout)
		}
		if err := w.write(); err != nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// keptSession waits until a write through w's own client is acknowledged
// again (its member restarted, or it moved to another) and fails the test
// unless the client still has session sid: the fault expired no session.
func (w *writer) keptSession(t *testing.T, sid int64) {
	t.Helper()
	w.writeUntil(t, 1, 30*time.Second)
	if got := w.c.SessionID(); got != sid {
		t.Fatalf("the client's session changed from %#x to %#x: it expired", sid, got)
	}
	t.Logf("session %#x kept", sid)
}

// appendCfg appends line to s's zoo.cfg, for its next start.
func appendCfg(t *testing.T, s *zkproc.Server, line string) {
	t.Helper()
	fh, err := os.OpenFile(s.CfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}
