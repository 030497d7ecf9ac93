package quorum_test

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

var (
	failovers    = flag.Int("quorum.failovers", 2, "leader SIGKILLs in TestIntegration_Failovers (the figures use 10 and 20)")
	failoverKind = flag.String("quorum.kind", "zkd", "what TestIntegration_Failovers runs: zkd, or zookeeper for the comparison")
	failoverTick = flag.Int("quorum.tick", 200, "tickTime (ms) of TestIntegration_Failovers' members (ZooKeeper's default is 2000)")
)

// writer creates nodes in a loop and records, for each acknowledged
// create, when it was sent and when it was acknowledged.
type writer struct {
	mu    sync.Mutex
	acks  []ack
	count int
}

type ack struct {
	path      string
	sent, got time.Time
}

func (w *writer) run(c *zk.Conn, id int, stop <-chan struct{}) {
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		default:
		}
		p := fmt.Sprintf("/f/c%d-%07d", id, k)
		sent := time.Now()
		_, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			// NodeExists: an earlier attempt that reported ConnectionLoss
			// did apply; go-zk does not retry by itself, so count it.
			w.mu.Lock()
			w.acks = append(w.acks, ack{path: p, sent: sent, got: time.Now()})
			w.mu.Unlock()
			continue
		}
		time.Sleep(5 * time.Millisecond)
		k-- // retry the same path: its outcome is unknown
	}
}

// firstAfter returns when the first write sent after t was acknowledged.
func (w *writer) firstAfter(t time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var best time.Time
	for _, a := range w.acks {
		if !a.sent.Before(t) && (best.IsZero() || a.got.Before(best)) {
			best = a.got
		}
	}
	return best, !best.IsZero()
}

// TestIntegration_Failovers SIGKILLs the leader of a 3-member ensemble
// repeatedly under a write load, measures the time from the kill to the
// next acknowledged write sent after it, and checks that no acknowledged
// write is lost.
func TestIntegration_Failovers(t *testing.T) {
	var servers []*zkproc.Server
	switch *failoverKind {
	case "zkd":
		servers = zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: *failoverTick})
	case "zookeeper":
		servers = zkproc.StartZooKeeperEnsemble(t, 3, zkproc.Options{TickTime: *failoverTick})
	default:
		t.Fatalf("-quorum.kind=%q: want zkd or zookeeper", *failoverKind)
	}
	addrs := zkproc.Addrs(servers)
	timeout := max(4*time.Second, time.Duration(*failoverTick)*3*time.Millisecond)
	setup, _ := dial(t, timeout, addrs...)
	if _, err := setup.Create("/f", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	w := &writer{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		order := append(append([]string{}, addrs[i:]...), addrs[:i]...)
		c, _ := dial(t, timeout, order...)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w.run(c, i, stop)
		}(i)
	}
	var took []time.Duration
	for trial := 0; trial < *failovers; trial++ {
		time.Sleep(300 * time.Millisecond)
		l := zkproc.LeaderOf(t, servers, 10*time.Second)
		killed := time.Now()
		servers[l].Kill()
		deadline := time.Now().Add(10*time.Second + 4*time.Duration(*failoverTick)*time.Millisecond)
		for {
			if at, ok := w.firstAfter(killed); ok {
				took = append(took, at.Sub(killed))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("failover %d: no write acknowledged within %v", trial+1, time.Until(deadline)+time.Since(killed))
			}
			time.Sleep(time.Millisecond)
		}
		servers[l].Restart(t)
		zkproc.WaitServing(t, servers[l].Addr, 30*time.Second)
	}
	close(stop)
	wg.Wait()
	w.mu.Lock()
	acked := make([]string, len(w.acks))
	for i, a := range w.acks {
		acked[i] = a.path
	}
	w.mu.Unlock()
	lost := 0
	for i, s := range servers {
		c, _ := dial(t, timeout, s.Addr)
		if _, err := c.Sync("/f"); err != nil {
			t.Fatalf("member %d: sync: %v", i+1, err)
		}
		children, _, err := c.Children("/f")
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, ch := range children {
			have["/f/"+ch] = true
		}
		for _, p := range acked {
			if !have[p] {
				lost++
				t.Errorf("member %d lost acknowledged write %s", i+1, p)
			}
		}
		c.Close()
	}
	slices.Sort(took)
	t.Logf("%s: failovers=%d acknowledged=%d lost=%d kill→next-ack median=%v max=%v all=%v",
		*failoverKind, len(took), len(acked), lost, took[len(took)/2], took[len(took)-1], took)
}

// TestIntegration_DeadLeaderElectedAway kills -9 the leader of 3 members
// whose raft heartbeat timeout is 4 s (tickTime 4000, syncLimit 5): raft
// alone elects no one for at least those 4 s. A survivor sees its stream
// to the leader end and the leader's election port refuse, and campaigns
// at once (leadergone.go): a new leader well inside the heartbeat
// timeout, and a write through a survivor acknowledged.
func TestIntegration_DeadLeaderElectedAway(t *testing.T) {
	const tick = 4000
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: tick})
	l := zkproc.LeaderOf(t, servers, 30*time.Second)
	var survivors []*zkproc.Server
	for i, s := range servers {
		if i != l {
			survivors = append(survivors, s)
		}
	}
	c, _ := dial(t, 3*tick*time.Millisecond, zkproc.Addrs(survivors)...)
	if _, err := c.Create("/before", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	servers[l].Kill()
	// Raft's heartbeat timeout is syncLimit × tickTime / 5 = 4 s, and a
	// follower waits between one and two of them: a leader within 2 s
	// can only come from the fast path.
	nl := zkproc.LeaderOf(t, survivors, 2*time.Second)
	elected := time.Since(killed)
	if _, err := c.Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("write after the new leader (member at %s) was elected: %v", survivors[nl].Addr, err)
	}
	campaigned := 0
	for _, s := range survivors {
		if strings.Contains(s.Log(), "the leader's process is gone") {
			campaigned++
		}
	}
	if campaigned == 0 {
		t.Errorf("no survivor logged that it campaigned because the leader's process was gone")
	}
	t.Logf("leader killed; new leader %s after %v; write acknowledged %v after the kill; %d survivors campaigned",
		survivors[nl].Addr, elected.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond), campaigned)
}
