package soak

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/faultfs"
	"github.com/zkd/zkd/compat/zkproc"
)

// members is the ensemble's size.
const members = 3

// ensemble is a 3-member zkd ensemble whose member i keeps its data
// directory on fs[i] and reaches member j's quorum and election ports
// only through proxies[i][j], so that a nemesis can fail one member's disk
// or cut it off from the others.
type ensemble struct {
	servers []*zkproc.Server
	fs      []*faultfs.FS
	// proxies[i][j] are member i's proxies to member j's quorum and
	// election ports (zero for i == j).
	proxies [][][2]*zkproc.Proxy
}

// notMyID keeps faults off myid: zkproc's test writes it without an fsync,
// and a power cut must not take a member's identity.
func notMyID(rel string) bool { return !strings.HasSuffix(rel, "myid") }

// startEnsemble mounts a faultfs per member, starts the proxies and the
// three members (tickTime tick, snapCount snapCount) and waits until each
// serves clients. Cleanup stops the members before it unmounts.
func startEnsemble(t *testing.T, bin string, tick, snapCount int) *ensemble {
	t.Helper()
	e := &ensemble{
		servers: make([]*zkproc.Server, members),
		fs:      make([]*faultfs.FS, members),
		proxies: make([][][2]*zkproc.Proxy, members),
	}
	dirs := make([]string, members)
	for i := range members {
		// Unmounted after the members stop: their cleanups come later.
		f := faultfs.MountTemp(t)
		mnt := f.Dir()
		f.SetFilter(notMyID)
		e.fs[i] = f
		// The member's zoo.cfg, log and working directory stay off the
		// mount (see compat/faultfs: a child must not touch the mount this
		// process serves before it has exec'd); its data directory is a
		// link onto it.
		dirs[i] = t.TempDir()
		data := filepath.Join(mnt, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(data, filepath.Join(dirs[i], "data")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Members' ports come from below the ephemeral range; the proxies
	// listen on ephemeral ports, so no proxy can take a member's port.
	ports := zkproc.FreePorts(t, 3*members)
	client := func(i int) int { return ports[3*i] }
	quorum := func(i int) int { return ports[3*i+1] }
	election := func(i int) int { return ports[3*i+2] }
	for i := range members {
		e.proxies[i] = make([][2]*zkproc.Proxy, members)
		for j := range members {
			if i != j {
				e.proxies[i][j] = [2]*zkproc.Proxy{
					zkproc.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", quorum(j))),
					zkproc.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", election(j))),
				}
			}
		}
	}
	var wg sync.WaitGroup
	for i := range members {
		extra := map[string]string{"snapCount": fmt.Sprint(snapCount)}
		for j := range members {
			q, el := quorum(j), election(j)
			if i != j {
				q, el = proxyPort(e.proxies[i][j][0]), proxyPort(e.proxies[i][j][1])
			}
			extra[fmt.Sprintf("server.%d", j+1)] = fmt.Sprintf("127.0.0.1:%d:%d;127.0.0.1:%d", q, el, client(j))
		}
		// initLimit and syncLimit as zkproc's ensembles have them.
		extra["initLimit"], extra["syncLimit"] = "10", "5"
		wg.Go(func() {
			e.servers[i] = zkproc.StartZkd(t, zkproc.Options{Dir: dirs[i], Port: client(i), TickTime: tick, ExtraCfg: extra, Binary: bin})
		})
	}
	wg.Wait()
	for i, s := range e.servers {
		if s == nil {
			t.Fatalf("soak: member %d did not start", i+1)
		}
	}
	return e
}

// proxyPort is the port a proxy listens on.
func proxyPort(p *zkproc.Proxy) int {
	var n int
	fmt.Sscanf(p.Addr[strings.LastIndexByte(p.Addr, ':')+1:], "%d", &n)
	return n
}

// isolate cuts member i off from the other two in both directions: with
// drop, every byte is silently dropped (a partition that loses packets,
// found out by timeouts); otherwise new connections are refused and the
// current ones reset.
func (e *ensemble) isolate(i int, drop bool) {
	for j := range members {
		if j == i {
			continue
		}
		for _, p := range append(e.proxies[i][j][:], e.proxies[j][i][:]...) {
			if drop {
				p.Blackhole()
			} else {
				p.Reject()
				p.Reset()
			}
		}
	}
}

// heal lets traffic through member i's proxies again, after isolate(i,
// drop). Connections that lived through a blackhole are reset first:
// bytes were dropped from them, and TCP never delivers a stream with a
// hole in it.
func (e *ensemble) heal(i int, drop bool) {
	for j := range members {
		if j == i {
			continue
		}
		for _, p := range append(e.proxies[i][j][:], e.proxies[j][i][:]...) {
			if drop {
				p.Reject()
				p.Reset()
			}
			p.Heal()
		}
	}
}

// clearDisk removes every fault from member i's file system.
func (e *ensemble) clearDisk(i int) {
	e.fs[i].Clear()
	e.fs[i].SetFilter(notMyID)
}

// leader polls until a running member says it leads and returns its index,
// or -1 after timeout.
func (e *ensemble) leader(timeout time.Duration) int {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for i, s := range e.servers {
			if s.Running() && s.Mode() == "leader" {
				return i
			}
		}
	}
	return -1
}

// waitServing waits until member i grants sessions, or returns an error
// naming it after timeout.
func (e *ensemble) waitServing(i int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := zkproc.Handshake(e.servers[i].Addr, time.Second)
		if err == nil {
			return nil
		}
		if !e.servers[i].Running() {
			return fmt.Errorf("member %d (%s) exited: %v", i+1, e.servers[i].Addr, e.servers[i].Cmd.ProcessState)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("member %d (%s) not serving %v after the fault was healed: %v", i+1, e.servers[i].Addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitExit waits until member i's process has exited and returns its exit
// status, or -1 after timeout.
func (e *ensemble) waitExit(i int, timeout time.Duration) int {
	s := e.servers[i]
	for deadline := time.Now().Add(timeout); s.Running(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return -1
		}
	}
	return s.Cmd.ProcessState.ExitCode()
}

// lastStartLog is member i's log since its last start.
func (e *ensemble) lastStartLog(i int) string {
	log := e.servers[i].Log()
	return log[max(0, strings.LastIndex(log, "=== zkproc: starting")):]
}

// logSince is member i's log lines stamped at or after since (zkd's lines
// open with an RFC 3339 time), at most the last n of them, less raft's
// per-RPC retry lines, which a fault makes by the hundred and which say
// only that a peer was unreachable.
func (e *ensemble) logSince(i int, since time.Time, n int) []string {
	var out []string
	for l := range strings.Lines(e.servers[i].Log()) {
		stamp, _, ok := strings.Cut(l, "\t")
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil || at.Before(since) || raftRetryNoise(l) {
			continue
		}
		out = append(out, strings.TrimRight(l, "\n"))
	}
	return out[max(0, len(out)-n):]
}

// raftRetryNoise reports a line raft logs for each failed RPC to a peer.
func raftRetryNoise(l string) bool {
	for _, s := range []string{"failed to heartbeat", "failed to appendEntries", "failed to pipeline", "failed to make requestVote"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
