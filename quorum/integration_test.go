package quorum_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

type zkLogger struct{ t testing.TB }

func (l zkLogger) Printf(format string, args ...any) {}

// dial opens a go-zk session on addrs and waits until it is usable. The
// returned counter counts session expiries seen by the client.
func dial(t testing.TB, timeout time.Duration, addrs ...string) (*zk.Conn, *atomic.Int32) {
	t.Helper()
	c, events, err := zk.Connect(addrs, timeout, zk.WithLogger(zkLogger{t}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	expired := new(atomic.Int32)
	ready := make(chan struct{})
	go func() {
		once := false
		for ev := range events {
			if ev.State == zk.StateHasSession && !once {
				once = true
				close(ready)
			}
			if ev.State == zk.StateExpired {
				expired.Add(1)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("no session on %v", addrs)
	}
	return c, expired
}

func TestIntegration_EnsembleBasics(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200})
	modes := map[string]int{}
	for _, s := range servers {
		modes[s.Mode()]++
	}
	if modes["leader"] != 1 || modes["follower"] != 2 {
		t.Fatalf("modes %v", modes)
	}
	l := zkproc.LeaderOf(t, servers, 5*time.Second)
	// Followers report how far they applied with their touches, every
	// half tick: both count as synced within a few ticks.
	var out string
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, err = servers[l].FourLetter("mntr")
		if err == nil && strings.Contains(out, "zk_synced_followers\t2") && strings.Contains(out, "zk_learners\t2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader mntr lacks zk_synced_followers 2: %v\n%s", err, out)
		}
	}
	f := (l + 1) % 3
	c, _ := dial(t, 4*time.Second, servers[f].Addr)
	if _, err := c.Create("/ens", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create through a follower: %v", err)
	}
	if _, err := c.Create("/ens/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for i, s := range servers {
		ci, _ := dial(t, 4*time.Second, s.Addr)
		if _, err := ci.Sync("/ens"); err != nil {
			t.Fatalf("member %d sync: %v", i+1, err)
		}
		if data, _, err := ci.Get("/ens"); err != nil || string(data) != "x" {
			t.Fatalf("member %d: get = %q, %v", i+1, data, err)
		}
		ci.Close()
	}
	// Closing the session removes its ephemeral everywhere.
	c.Close()
	c2, _ := dial(t, 4*time.Second, servers[l].Addr)
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, _, err := c2.Exists("/ens/e")
		if err == nil && !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ephemeral still there after close: %v %v", ok, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var errViolation = errors.New("lock violation")

// lockWorkload runs clients that take an ephemeral lock, bump a versioned
// counter (the fencing token) and release it, until stop closes.
type lockWorkload struct {
	mu        sync.Mutex
	tokens    []int64 // in the order the holders got them
	acked     []string
	holders   atomic.Int32
	maxHeld   atomic.Int32
	violation atomic.Value
	errs      atomic.Int64
}

func (w *lockWorkload) run(c *zk.Conn, id int, stop <-chan struct{}) {
	acl := zk.WorldACL(zk.PermAll)
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		default:
		}
		// An acknowledged write that must survive every fault.
		p := fmt.Sprintf("/acked/c%d-%06d", id, k)
		if _, err := c.Create(p, nil, 0, acl); err == nil {
			w.mu.Lock()
			w.acked = append(w.acked, p)
			w.mu.Unlock()
		} else if !errors.Is(err, zk.ErrNodeExists) {
			w.errs.Add(1)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if _, err := c.Create("/lock", []byte(fmt.Sprint(id)), zk.FlagEphemeral, acl); err != nil {
			if errors.Is(err, zk.ErrNodeExists) {
				time.Sleep(2 * time.Millisecond)
			} else {
				w.errs.Add(1)
				w.release(c, id)
			}
			continue
		}
		if n := w.holders.Add(1); n > w.maxHeld.Load() {
			w.maxHeld.Store(n)
		}
		data, st, err := c.Get("/counter")
		if err == nil {
			var v int64
			fmt.Sscan(string(data), &v)
			_, err = c.Set("/counter", []byte(fmt.Sprint(v+1)), st.Version)
			switch {
			case err == nil:
				w.mu.Lock()
				w.tokens = append(w.tokens, v+1)
				w.mu.Unlock()
			case errors.Is(err, zk.ErrBadVersion):
				w.violation.Store(fmt.Errorf("%w: client %d: counter changed while it held the lock", errViolation, id))
			}
		}
		if err != nil {
			w.errs.Add(1)
		}
		w.holders.Add(-1)
		w.release(c, id)
	}
}

// release deletes the lock if this client holds it, retrying through
// connection losses.
func (w *lockWorkload) release(c *zk.Conn, id int) {
	for try := 0; try < 200; try++ {
		data, st, err := c.Get("/lock")
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		if err == nil {
			if string(data) != fmt.Sprint(id) {
				return
			}
			err = c.Delete("/lock", st.Version)
			if err == nil || errors.Is(err, zk.ErrNoNode) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIntegration_EnsembleFaults runs the lock workload on a 3-member
// ensemble while the leader is killed, then paused past the election
// timeout; afterwards every acknowledged write is on every member, the
// lock was never held twice, fencing tokens rose strictly, and no session
// expired.
func TestIntegration_EnsembleFaults(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200})
	addrs := zkproc.Addrs(servers)
	setup, _ := dial(t, 4*time.Second, addrs...)
	for _, p := range []string{"/acked", "/counter"} {
		if _, err := setup.Create(p, []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	w := &lockWorkload{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var expiries []*atomic.Int32
	for i := 0; i < 4; i++ {
		// Each client prefers a different member first.
		order := append(append([]string{}, addrs[i%3:]...), addrs[:i%3]...)
		c, exp := dial(t, 4*time.Second, order...)
		expiries = append(expiries, exp)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w.run(c, i, stop)
		}(i)
	}
	time.Sleep(time.Second)

	// SIGKILL the leader; time to the next acknowledged write.
	l := zkproc.LeaderOf(t, servers, 5*time.Second)
	before := countAcked(w)
	killed := time.Now()
	servers[l].Kill()
	waitAcked(t, w, before, 10*time.Second)
	t.Logf("SIGKILL leader → next acknowledged write: %v", time.Since(killed))
	time.Sleep(500 * time.Millisecond)
	servers[l].Restart(t)
	zkproc.WaitServing(t, servers[l].Addr, 30*time.Second)

	// SIGSTOP the leader past the election timeout, then wake it.
	l = zkproc.LeaderOf(t, servers, 10*time.Second)
	servers[l].Pause()
	before = countAcked(w)
	waitAcked(t, w, before, 10*time.Second)
	time.Sleep(1500 * time.Millisecond)
	servers[l].Resume()
	time.Sleep(time.Second)

	close(stop)
	wg.Wait()
	if v := w.violation.Load(); v != nil {
		t.Fatal(v)
	}
	if m := w.maxHeld.Load(); m > 1 {
		t.Fatalf("lock held by %d clients at once", m)
	}
	for i := 1; i < len(w.tokens); i++ {
		if w.tokens[i] <= w.tokens[i-1] {
			t.Fatalf("fencing tokens not increasing: %d after %d", w.tokens[i], w.tokens[i-1])
		}
	}
	for i, e := range expiries {
		if n := e.Load(); n > 0 {
			t.Fatalf("client %d saw its session expire although it kept pinging", i)
		}
	}
	checkAcked(t, servers, w.acked)
	checkSameTree(t, servers)
	t.Logf("%d acknowledged writes, %d lock holds, %d client errors during faults", len(w.acked), len(w.tokens), w.errs.Load())
}

func countAcked(w *lockWorkload) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func waitAcked(t testing.TB, w *lockWorkload, before int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for countAcked(w) <= before {
		if time.Now().After(deadline) {
			t.Fatalf("no write acknowledged within %v", timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkAcked checks that every acknowledged path is on every member.
func checkAcked(t testing.TB, servers []*zkproc.Server, acked []string) {
	t.Helper()
	for i, s := range servers {
		c, _ := dial(t, 4*time.Second, s.Addr)
		if _, err := c.Sync("/acked"); err != nil {
			t.Fatalf("member %d: sync: %v", i+1, err)
		}
		children, _, err := c.Children("/acked")
		if err != nil {
			t.Fatalf("member %d: children: %v", i+1, err)
		}
		have := make(map[string]bool, len(children))
		for _, ch := range children {
			have["/acked/"+ch] = true
		}
		for _, p := range acked {
			if !have[p] {
				t.Fatalf("member %d lost acknowledged write %s", i+1, p)
			}
		}
		c.Close()
	}
}

// treeOf lists every znode a member serves with its data and Stat, after
// a sync, so members can be compared.
func treeOf(t testing.TB, addr string) map[string]string {
	t.Helper()
	c, _ := dial(t, 4*time.Second, addr)
	defer c.Close()
	if _, err := c.Sync("/"); err != nil {
		t.Fatalf("%s: sync: %v", addr, err)
	}
	out := map[string]string{}
	var walk func(p string)
	walk = func(p string) {
		data, st, err := c.Get(p)
		if err != nil {
			t.Fatalf("%s: get %s: %v", addr, p, err)
		}
		out[p] = fmt.Sprintf("%q %+v", data, *st)
		children, _, err := c.Children(p)
		if err != nil {
			t.Fatalf("%s: children %s: %v", addr, p, err)
		}
		for _, ch := range children {
			if p == "/" {
				walk("/" + ch)
			} else {
				walk(p + "/" + ch)
			}
		}
	}
	walk("/")
	return out
}

// checkSameTree fails unless every member serves the same znodes with the
// same data and Stat.
func checkSameTree(t testing.TB, servers []*zkproc.Server) {
	t.Helper()
	first := treeOf(t, servers[0].Addr)
	for i := 1; i < len(servers); i++ {
		other := treeOf(t, servers[i].Addr)
		if len(other) != len(first) {
			t.Fatalf("member %d serves %d znodes, member 1 %d", i+1, len(other), len(first))
		}
		for p, v := range first {
			if other[p] != v {
				t.Fatalf("member %d differs at %s:\n%s\nvs member 1:\n%s", i+1, p, other[p], v)
			}
		}
	}
}
