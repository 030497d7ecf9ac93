package gozk

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// lockDelayMs is the zkd.lockDelayMs of the lock delay tests.
const lockDelayMs = 3000

// adminLockNode is one contender in the admin command locks.
type adminLockNode struct {
	Name       string `json:"name"`
	SessionID  int64  `json:"session_id"`
	Tombstone  bool   `json:"tombstone"`
	DelayUntil int64  `json:"delay_until"`
}

// adminLocks reads the admin command locks for path: its holders and
// waiters.
func adminLocks(t *testing.T, s *zkproc.Server, lock string) (holders, waiters []adminLockNode) {
	t.Helper()
	resp, err := http.Get("http://" + s.AdminAddr + "/commands/locks?path=" + lock)
	must(t, err)
	defer resp.Body.Close()
	var out struct {
		Locks []struct {
			Path    string          `json:"path"`
			Holders []adminLockNode `json:"holders"`
			Waiters []adminLockNode `json:"waiters"`
		} `json:"locks"`
	}
	must(t, json.NewDecoder(resp.Body).Decode(&out))
	for _, l := range out.Locks {
		if l.Path == lock {
			return l.Holders, l.Waiters
		}
	}
	return nil, nil
}

// metricValue reads one unlabelled sample from a Prometheus endpoint.
func metricValue(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			must(t, err)
			return f
		}
	}
	t.Fatalf("metric %s not exported", name)
	return 0
}

// awaitMetric polls metricValue until it reads want, for at most 10s, and
// returns the last value: a gauge may be updated just after the event the
// test saw.
func awaitMetric(t *testing.T, addr, name string, want float64) float64 {
	t.Helper()
	v := metricValue(t, addr, name)
	for deadline := time.Now().Add(10 * time.Second); v != want && time.Now().Before(deadline); v = metricValue(t, addr, name) {
		time.Sleep(20 * time.Millisecond)
	}
	return v
}

// startLockDelayZkd starts zkd with zkd.lockDelayMs, the admin server and
// metrics; it returns the server and its metrics address.
func startLockDelayZkd(t *testing.T) (*zkproc.Server, string) {
	metrics := zkproc.FreePort(t)
	s := zkproc.StartZkd(t, zkproc.Options{TickTime: 100, AdminServer: true, ExtraCfg: map[string]string{
		"zkd.lockDelayMs":           strconv.Itoa(lockDelayMs),
		"metricsProvider.className": "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider",
		"metricsProvider.httpHost":  "127.0.0.1",
		"metricsProvider.httpPort":  strconv.Itoa(metrics),
	}})
	return s, fmt.Sprintf("127.0.0.1:%d", metrics)
}

// lockInBackground starts go-zk's lock recipe on c and returns a channel
// that gets the recipe's result once it returns.
func lockInBackground(c *zk.Conn, lock string) (*zk.Lock, <-chan error) {
	l := zk.NewLock(c, lock, worldACL)
	done := make(chan error, 1)
	go func() { done <- l.Lock() }()
	return l, done
}

// awaitGrant waits for B's lock (bDone), checks that A's node aNode is gone
// by then, and has B write /locks/granted as holder: the returned Stat's
// Ctime is the log time at which B acted as holder.
func awaitGrant(t *testing.T, b *zk.Conn, bDone <-chan error, aNode string, wait time.Duration) *zk.Stat {
	t.Helper()
	select {
	case err := <-bDone:
		must(t, err)
	case <-time.After(wait):
		t.Fatalf("B never granted within %v", wait)
	}
	if ok, _, err := b.Exists(aNode); err != nil || ok {
		t.Fatalf("B granted while %s exists (%v)", aNode, err)
	}
	_, err := b.Create("/locks/granted", nil, 0, worldACL)
	must(t, err)
	_, granted, err := b.Get("/locks/granted")
	must(t, err)
	return granted
}

// TestIntegration_LockDelayExpiredHolder: with zkd.lockDelayMs on, holder
// A's session expires (its connection blackholed by a proxy) while B waits
// with go-zk's recipe. A's node stays as a tombstone, shown by the lock
// view and the lock_tombstones metric, and B is not granted while it is
// there: when B's Lock returns, A's node is gone and the tombstone's
// deadline, in log time, is at least lockDelayMs after a write made before
// A's connection was cut, and no later than B's first write as holder.
func TestIntegration_LockDelayExpiredHolder(t *testing.T) {
	s, metrics := startLockDelayZkd(t)
	const lock = "/locks/delayed"
	admin, _ := connect(t, s.Addr)
	_, err := admin.Create("/locks", nil, 0, worldACL)
	must(t, err)

	proxy := zkproc.StartProxy(t, s.Addr)
	a, _ := connectTimeout(t, proxy.Addr, 600*time.Millisecond)
	must(t, zk.NewLock(a, lock, worldACL).Lock())
	aNode, err := ownLockNode(a, lock)
	must(t, err)
	b, _ := connect(t, s.Addr)
	bLock, bDone := lockInBackground(b, lock)
	waitFor(t, 20*time.Second, "B queued behind A", func() bool {
		kids, _, err := admin.Children(lock)
		return err == nil && len(kids) == 2
	})

	// A write before A's connection is cut stamps a log time that its
	// expiry entry cannot precede.
	_, before, err := admin.Get("/locks")
	must(t, err)
	_, err = admin.Set("/locks", []byte("cut"), before.Version)
	must(t, err)
	_, cut, err := admin.Get("/locks")
	must(t, err)
	proxy.Blackhole()

	var tomb adminLockNode
	waitFor(t, 30*time.Second, "A's node to become a tombstone", func() bool {
		holders, _ := adminLocks(t, s, lock)
		if len(holders) == 1 && holders[0].Tombstone {
			tomb = holders[0]
			return true
		}
		return false
	})
	if got := path.Join(lock, tomb.Name); got != aNode || tomb.SessionID != a.SessionID() {
		t.Fatalf("tombstone %+v, want %s of session 0x%x", tomb, aNode, a.SessionID())
	}
	if tomb.DelayUntil < cut.Mtime+lockDelayMs {
		t.Fatalf("tombstone due at %d, before the cut (%d) + %d ms", tomb.DelayUntil, cut.Mtime, lockDelayMs)
	}
	// While the view shows the tombstone, A's node is there and B is not
	// granted; the view is read before and after B's state so that the
	// tombstone was there all along.
	select {
	case err := <-bDone:
		t.Fatalf("B granted while A's tombstone exists (err %v)", err)
	default:
	}
	if v := metricValue(t, metrics, "lock_tombstones"); v < 1 {
		holders, _ := adminLocks(t, s, lock)
		if len(holders) == 1 && holders[0].Tombstone {
			t.Fatalf("lock_tombstones = %v with a tombstone shown", v)
		}
	}
	if ok, _, err := admin.Exists(aNode); err != nil || !ok {
		holders, _ := adminLocks(t, s, lock)
		if len(holders) == 1 && holders[0].Tombstone {
			t.Fatalf("tombstone %s not visible to clients (exists %v, %v)", aNode, ok, err)
		}
	}

	granted := awaitGrant(t, b, bDone, aNode, 60*time.Second)
	if granted.Ctime < tomb.DelayUntil {
		t.Fatalf("B wrote as holder at log time %d, before the tombstone's deadline %d", granted.Ctime, tomb.DelayUntil)
	}
	if v := awaitMetric(t, metrics, "lock_tombstones", 0); v != 0 {
		t.Fatalf("lock_tombstones = %v after removal", v)
	}
	must(t, bLock.Unlock())
}

// TestIntegration_LockDelayReleaseNotDelayed: with zkd.lockDelayMs on, a
// holder that releases (Unlock: a delete) or closes its session hands the
// lock over at once: no tombstone is made, and the waiter is granted while
// the lock view never showed one.
func TestIntegration_LockDelayReleaseNotDelayed(t *testing.T) {
	s, metrics := startLockDelayZkd(t)
	admin, _ := connect(t, s.Addr)
	_, err := admin.Create("/locks", nil, 0, worldACL)
	must(t, err)
	tests := []struct {
		name    string
		release func(c *zk.Conn, l *zk.Lock) error
	}{
		{"unlock", func(_ *zk.Conn, l *zk.Lock) error { return l.Unlock() }},
		{"close session", func(c *zk.Conn, _ *zk.Lock) error { c.Close(); return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lock := "/locks/" + strings.ReplaceAll(tt.name, " ", "-")
			a, _ := connect(t, s.Addr)
			aLock := zk.NewLock(a, lock, worldACL)
			must(t, aLock.Lock())
			b, _ := connect(t, s.Addr)
			bLock, bDone := lockInBackground(b, lock)
			waitFor(t, 20*time.Second, "B queued behind A", func() bool {
				kids, _, err := admin.Children(lock)
				return err == nil && len(kids) == 2
			})
			must(t, tt.release(a, aLock))
			tombstones := 0
			for granted := false; !granted; {
				select {
				case err := <-bDone:
					must(t, err)
					granted = true
				case <-time.After(20 * time.Millisecond):
					holders, _ := adminLocks(t, s, lock)
					for _, h := range holders {
						if h.Tombstone {
							tombstones++
						}
					}
				}
			}
			if tombstones != 0 {
				t.Fatalf("lock view showed a tombstone %d times after a release", tombstones)
			}
			if v := awaitMetric(t, metrics, "lock_tombstones", 0); v != 0 {
				t.Fatalf("lock_tombstones = %v", v)
			}
			must(t, bLock.Unlock())
		})
	}
}

// isTombstone reports whether the lock node at p is a tombstone as a client
// sees it: the node exists but its fencing token is NoNode (nobody holds
// it).
func isTombstone(t *testing.T, c *zk.Conn, p string) bool {
	t.Helper()
	_, err := c.Sync(p)
	must(t, err)
	ok, _, err := c.Exists(p)
	must(t, err)
	if !ok {
		return false
	}
	_, _, err = c.Get("/zookeeper/fencing" + p)
	return errors.Is(err, zk.ErrNoNode)
}

// TestIntegration_LockDelayLeaderChange: in a 3-member ensemble with
// zkd.lockDelayMs, an expired holder's tombstone survives a kill -9 of the
// leader (every surviving member still has it), and the new leader removes
// it: a waiter queued after the change is granted, at least the delay of
// log time after a write made before the holder was cut off.
func TestIntegration_LockDelayLeaderChange(t *testing.T) {
	const delay = 15000
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200,
		ExtraCfg: map[string]string{"zkd.lockDelayMs": strconv.Itoa(delay)}})
	leader := -1
	waitFor(t, 30*time.Second, "a leader", func() bool {
		for i, s := range servers {
			if out, err := s.FourLetter("srvr"); err == nil && strings.Contains(out, "Mode: leader") {
				leader = i
				return true
			}
		}
		return false
	})
	var followers []*zkproc.Server
	for i, s := range servers {
		if i != leader {
			followers = append(followers, s)
		}
	}
	const lock = "/locks/ensemble"
	c, _ := connect(t, followers[0].Addr)
	_, err := c.Create("/locks", nil, 0, worldACL)
	must(t, err)
	proxy := zkproc.StartProxy(t, followers[1].Addr)
	a, _ := connectTimeout(t, proxy.Addr, time.Second)
	must(t, zk.NewLock(a, lock, worldACL).Lock())
	aNode, err := ownLockNode(a, lock)
	must(t, err)
	_, err = c.Set("/locks", []byte("cut"), -1)
	must(t, err)
	_, cut, err := c.Get("/locks")
	must(t, err)
	proxy.Blackhole()
	waitFor(t, 30*time.Second, "A's node to become a tombstone", func() bool { return isTombstone(t, c, aNode) })

	servers[leader].Kill()
	for _, s := range followers {
		cs, _ := connect(t, s.Addr)
		if !isTombstone(t, cs, aNode) {
			t.Fatalf("member %s lost the tombstone %s across the leader change", s.Addr, aNode)
		}
	}
	b, _ := connect(t, followers[0].Addr)
	bLock, bDone := lockInBackground(b, lock)
	granted := awaitGrant(t, b, bDone, aNode, 90*time.Second)
	if granted.Ctime-cut.Mtime < delay {
		t.Fatalf("B granted %d ms of log time after A was cut off, want at least %d", granted.Ctime-cut.Mtime, delay)
	}
	must(t, bLock.Unlock())
}
