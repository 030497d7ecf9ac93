package quorum_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// proxiedEnsemble is a 3-member zkd ensemble in which member i reaches
// member j's quorum and election ports only through proxies[i][j], so a
// test can cut members apart.
type proxiedEnsemble struct {
	servers []*zkproc.Server
	// proxies[i][j] are member i's proxies to member j's quorum and
	// election ports (nil for i == j).
	proxies [][][2]*zkproc.Proxy
}

func startProxiedEnsemble(t *testing.T) *proxiedEnsemble {
	t.Helper()
	const n = 3
	type ports struct{ client, quorum, election int }
	// Hold the members' ports open while the proxies pick theirs, so no
	// proxy can take a member's port; release them just before the
	// members start.
	var held []net.Listener
	reserve := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		return l.Addr().(*net.TCPAddr).Port
	}
	ps := make([]ports, n)
	for i := range ps {
		ps[i] = ports{reserve(), reserve(), reserve()}
	}
	e := &proxiedEnsemble{servers: make([]*zkproc.Server, n), proxies: make([][][2]*zkproc.Proxy, n)}
	for i := range e.proxies {
		e.proxies[i] = make([][2]*zkproc.Proxy, n)
		for j := range e.proxies[i] {
			if i != j {
				e.proxies[i][j] = [2]*zkproc.Proxy{
					zkproc.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", ps[j].quorum)),
					zkproc.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", ps[j].election)),
				}
			}
		}
	}
	bin := zkproc.BuildZkd(t)
	base := t.TempDir()
	for _, l := range held {
		l.Close()
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		extra := map[string]string{}
		for j := 0; j < n; j++ {
			q, el := ps[j].quorum, ps[j].election
			if i != j {
				q, el = port(e.proxies[i][j][0]), port(e.proxies[i][j][1])
			}
			extra[fmt.Sprintf("server.%d", j+1)] = fmt.Sprintf("127.0.0.1:%d:%d;127.0.0.1:%d", q, el, ps[j].client)
		}
		dir := filepath.Join(base, fmt.Sprintf("member%d", i+1))
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "data", "myid"), []byte(fmt.Sprintf("%d\n", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			e.servers[i] = zkproc.StartZkd(t, zkproc.Options{Dir: dir, Port: ps[i].client, TickTime: 200, ExtraCfg: extra, Binary: bin})
		}(i)
	}
	wg.Wait()
	for i, s := range e.servers {
		if s == nil {
			t.Fatalf("member %d did not start", i+1)
		}
	}
	return e
}

func port(p *zkproc.Proxy) int {
	var n int
	fmt.Sscanf(p.Addr[len("127.0.0.1:"):], "%d", &n)
	return n
}

// isolate cuts member i off from the others in both directions.
func (e *proxiedEnsemble) isolate(i int) {
	for j := range e.servers {
		if j == i {
			continue
		}
		for _, p := range append(e.proxies[i][j][:], e.proxies[j][i][:]...) {
			p.Reject()
			p.Reset()
		}
	}
}

// heal lets every proxy through again.
func (e *proxiedEnsemble) heal() {
	for i := range e.proxies {
		for j := range e.proxies[i] {
			if i != j {
				e.proxies[i][j][0].Heal()
				e.proxies[i][j][1].Heal()
			}
		}
	}
}

// TestIntegration_PartitionedLeader cuts the leader off from the other
// two members with TCP proxies while the lock workload runs: the leader
// stops serving, the majority elects another, and after healing every
// acknowledged write is on every member, the lock was never held twice,
// and no session expired.
func TestIntegration_PartitionedLeader(t *testing.T) {
	e := startProxiedEnsemble(t)
	addrs := zkproc.Addrs(e.servers)
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
	for i := 0; i < 3; i++ {
		order := append(append([]string{}, addrs[i:]...), addrs[:i]...)
		c, exp := dial(t, 4*time.Second, order...)
		expiries = append(expiries, exp)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w.run(c, i, stop)
		}(i)
	}
	time.Sleep(time.Second)
	l := zkproc.LeaderOf(t, e.servers, 5*time.Second)
	e.isolate(l)
	cut := time.Now()
	// The cut-off leader must stop serving within its lease and the
	// majority must elect another leader and take writes.
	deadline := time.Now().Add(5 * time.Second)
	for e.servers[l].Mode() == "leader" {
		if time.Now().After(deadline) {
			t.Fatal("isolated leader still leads after 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := countAcked(w)
	waitAcked(t, w, before, 10*time.Second)
	t.Logf("leader isolated → it stepped down and the majority acknowledged a write within %v", time.Since(cut))
	time.Sleep(time.Second)
	e.heal()
	zkproc.WaitServing(t, e.servers[l].Addr, 30*time.Second)
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
	for i, x := range expiries {
		if x.Load() > 0 {
			t.Fatalf("client %d saw its session expire", i)
		}
	}
	checkAcked(t, e.servers, w.acked)
	checkSameTree(t, e.servers)
	t.Logf("%d acknowledged writes, %d lock holds", len(w.acked), len(w.tokens))
}
