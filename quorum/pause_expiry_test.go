package quorum_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// orderedHosts is a go-zk HostProvider that connects to first, then,
// each time the connection is lost, to the next server of cycle, round
// robin: the test decides which members a client tries, where go-zk's
// own provider takes them in a random order. Init checks that go-zk was
// given every one of them.
type orderedHosts struct {
	mu         sync.Mutex
	first      string
	cycle      []string
	started    bool
	i, tried   int
	registered []string
}

func (h *orderedHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range append([]string{h.first}, h.cycle...) {
		if !slices.Contains(servers, s) {
			return fmt.Errorf("orderedHosts: %s is not among go-zk's servers %v", s, servers)
		}
	}
	h.registered, h.i = servers, -1
	return nil
}

func (h *orderedHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.registered)
}

// Next returns first once, then the servers of cycle in turn; retryStart
// (go-zk then waits a second) once each of them was tried since the last
// connection.
func (h *orderedHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.started {
		h.started = true
		return h.first, false
	}
	h.i = (h.i + 1) % len(h.cycle)
	h.tried++
	retryStart := h.tried > len(h.cycle)
	if retryStart {
		h.tried = 1
	}
	return h.cycle[h.i], retryStart
}

func (h *orderedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tried = 0
}

// pauseClient is one go-zk client of the pause tests: it writes and
// reads its own znodes in a loop and counts its session's expiries.
type pauseClient struct {
	name    string
	c       *zk.Conn
	expired atomic.Int32
	lastOK  atomic.Int64 // UnixNano of its last operation that succeeded
}

// pauseClients connects two go-zk clients per member m, each starting on
// m and then trying, in turn, the members of orders[m] (indexes into
// servers), and sets them writing and reading their own znodes until the
// returned stop function is called.
func pauseClients(t *testing.T, servers []*zkproc.Server, orders map[int][]int, timeout time.Duration) ([]*pauseClient, func()) {
	t.Helper()
	// Every member serves first, so that each client's first session
	// is on its own member (a member still electing refuses it, and
	// connect would try again).
	for _, s := range servers {
		zkproc.WaitServing(t, s.Addr, 30*time.Second)
	}
	var clients []*pauseClient
	for m := range servers {
		var cycle []string
		for _, i := range orders[m] {
			cycle = append(cycle, servers[i].Addr)
		}
		for range 2 {
			pc := &pauseClient{name: fmt.Sprintf("client %d on member %d", len(clients), m+1)}
			pc.connect(t, zkproc.Addrs(servers), servers[m].Addr, cycle, timeout)
			clients = append(clients, pc)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, pc := range clients {
		path := fmt.Sprintf("/pause-%d", i)
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
				var err error
				if n%2 == 0 {
					_, err = pc.c.Create(fmt.Sprintf("%s-%d", path, n), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
				} else if _, err = pc.c.Sync(path); err == nil {
					_, _, err = pc.c.Exists(path)
				}
				if err == nil {
					pc.lastOK.Store(time.Now().UnixNano())
				}
			}
		})
	}
	// Every client is under way before the fault.
	waitClients(t, clients, time.Now(), 10*time.Second, "before the fault")
	return clients, func() { close(stop); wg.Wait() }
}

// connect opens pc's session on first, retrying while it lands
// elsewhere, with cycle the members it tries after losing a connection,
// and counts its expiries.
func (pc *pauseClient) connect(t *testing.T, addrs []string, first string, cycle []string, timeout time.Duration) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		c, events, err := zk.Connect(addrs, timeout, zk.WithLogger(zkLogger{t}), zk.WithLogInfo(false), zk.WithHostProvider(&orderedHosts{first: first, cycle: cycle}))
		if err != nil {
			t.Fatal(err)
		}
		ready := make(chan struct{})
		go func() {
			first := true
			for ev := range events {
				switch ev.State {
				case zk.StateHasSession:
					if first {
						first = false
						close(ready)
					}
				case zk.StateExpired:
					pc.expired.Add(1)
					t.Logf("%s: session expired at %s", pc.name, time.Now().Format("15:04:05.000"))
				}
			}
		}()
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no session on %v", pc.name, addrs)
		}
		if c.Server() == first {
			pc.c = c
			t.Cleanup(c.Close)
			return
		}
		c.Close()
		if attempt == 20 {
			t.Fatalf("%s: 20 sessions landed on %s, not on %s", pc.name, c.Server(), first)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkNoExpiry fails t for every client that saw its session expire.
func checkNoExpiry(t *testing.T, clients []*pauseClient) {
	t.Helper()
	for _, pc := range clients {
		if n := pc.expired.Load(); n > 0 {
			t.Errorf("%s: session expired %d times, although the client kept trying members that answered", pc.name, n)
		}
	}
}

// sessionTimeout is the clients' session timeout in the pause tests: the
// most tickTime=200 allows.
const sessionTimeout = 4 * time.Second

// pauseEnsemble starts a 3-member zkd ensemble (tickTime 200) with
// pauseClients on it. With avoidLeader, a client that loses its
// connection tries only the followers f (the leader l's own clients
// included), otherwise every member in turn.
func pauseEnsemble(t *testing.T, avoidLeader bool) (servers []*zkproc.Server, l int, f []int, clients []*pauseClient, stop func()) {
	t.Helper()
	servers = zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200})
	l = zkproc.LeaderOf(t, servers, 10*time.Second)
	f = []int{(l + 1) % 3, (l + 2) % 3}
	orders := map[int][]int{l: {f[0], f[1], l}, f[0]: {f[1], l, f[0]}, f[1]: {f[0], l, f[1]}}
	if avoidLeader {
		orders = map[int][]int{l: {f[0], f[1]}, f[0]: {f[1], f[0]}, f[1]: {f[0], f[1]}}
	}
	clients, stop = pauseClients(t, servers, orders, sessionTimeout)
	if mode := servers[l].Mode(); mode != "leader" {
		t.Fatalf("member %d, the leader when the clients chose their lists, is now %q", l+1, mode)
	}
	return servers, l, f, clients, stop
}

// TestIntegration_PausedLeaderExpiresNoSession SIGSTOPs the leader of a
// 3-member ensemble for twice the clients' session timeout while go-zk
// clients, connected to the leader and to both followers, write and read;
// a client that loses its connection tries the followers only, so every
// client keeps trying members that answer. No session may expire: not on
// the new leader while the old one is stopped, and not when the old
// leader continues (SIGCONT) with session clocks that went stale while it
// was stopped.
//
// (Why the clients avoid the stopped member: go-zk v1.0.4 reconnecting to
// it, whose kernel still accepts connections, waits for the handshake's
// answer for ten read timeouts, 6⅔ session timeouts, and its session
// expires meanwhile; ZooKeeper 3.8 expires it too. See
// docs/disk-faults.md.)
func TestIntegration_PausedLeaderExpiresNoSession(t *testing.T) {
	servers, l, _, clients, stop := pauseEnsemble(t, true)

	servers[l].Pause()
	paused := time.Now()
	t.Logf("member %d (leader) paused at %s", l+1, paused.Format("15:04:05.000"))
	for time.Since(paused) < 2*sessionTimeout {
		time.Sleep(50 * time.Millisecond)
	}
	servers[l].Resume()
	resumed := time.Now()
	t.Logf("member %d continued at %s", l+1, resumed.Format("15:04:05.000"))
	// Every client must succeed again after the resume (a client whose
	// session expired opens a new one: the expiry counters decide).
	waitClients(t, clients, resumed, 3*sessionTimeout, "after the resume")
	// The old leader must have rejoined as a follower: whatever it
	// decided with its stale clocks has met the ensemble by then.
	waitMode(t, servers[l], "follower", 2*sessionTimeout)
	waitClients(t, clients, time.Now(), 3*sessionTimeout, "after the old leader rejoined")
	stop()
	checkNoExpiry(t, clients)
}

// TestIntegration_StoppedEnsembleExpiresNoSession SIGSTOPs all three
// members, the leader first, for twice the clients' session timeout, and
// continues the leader a second before its followers: a leader that
// continues with every session's clock gone stale while nothing ran (and
// the touches sent to it still unread in its sockets) must not expire the
// sessions whose clients kept trying; it restarts their clocks, as a new
// leader does.
func TestIntegration_StoppedEnsembleExpiresNoSession(t *testing.T) {
	servers, l, f, clients, stop := pauseEnsemble(t, false)

	servers[l].Pause()
	servers[f[0]].Pause()
	servers[f[1]].Pause()
	paused := time.Now()
	for time.Since(paused) < 2*sessionTimeout {
		time.Sleep(50 * time.Millisecond)
	}
	// The leader runs a few ticks alone before its followers continue.
	servers[l].Resume()
	time.Sleep(300 * time.Millisecond)
	servers[f[0]].Resume()
	servers[f[1]].Resume()
	resumed := time.Now()
	waitClients(t, clients, resumed, 3*sessionTimeout, "after the resume")
	stop()
	checkNoExpiry(t, clients)
}

// waitMode waits until s reports mode (srvr's Mode line).
func waitMode(t *testing.T, s *zkproc.Server, mode string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); s.Mode() != mode; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s is %q, not %s, after %v", s.Addr, s.Mode(), mode, d)
		}
	}
}

// waitClients waits until every client had an operation succeed after
// since.
func waitClients(t *testing.T, clients []*pauseClient, since time.Time, d time.Duration, when string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for _, pc := range clients {
		for pc.lastOK.Load() < since.UnixNano() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no operation succeeded within %v %s", pc.name, d, when)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
