package quorum_test

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

var (
	failovers    = flag.Int("quorum.failovers", 2, "leader SIGKILLs in TestIntegration_Failovers (the figures use 10 and 20)")
	failoverKind = flag.String("quorum.kind", "zkd", "what TestIntegration_Failovers runs: zkd, or zookeeper for the comparison")
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
		servers = zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200})
	case "zookeeper":
		servers = zkproc.StartZooKeeperEnsemble(t, 3, zkproc.Options{TickTime: 200})
	default:
		t.Fatalf("-quorum.kind=%q: want zkd or zookeeper", *failoverKind)
	}
	addrs := zkproc.Addrs(servers)
	setup, _ := dial(t, 4*time.Second, addrs...)
	if _, err := setup.Create("/f", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	w := &writer{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		order := append(append([]string{}, addrs[i:]...), addrs[:i]...)
		c, _ := dial(t, 4*time.Second, order...)
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
		deadline := time.Now().Add(10 * time.Second)
		for {
			if at, ok := w.firstAfter(killed); ok {
				took = append(took, at.Sub(killed))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("failover %d: no write acknowledged within 10s", trial+1)
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
		c, _ := dial(t, 4*time.Second, s.Addr)
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
