package quorum_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// mntrValue reads one numeric key of a member's mntr (-1 when absent or
// the member does not answer).
func mntrValue(s *zkproc.Server, key string) int64 {
	out, err := s.FourLetter("mntr")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok && k == key {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int64(n)
			}
		}
	}
	return -1
}

// TestIntegration_KillLeaderMidBatch runs 48 concurrent writers over a
// 3-member ensemble, so that the leader packs several writes into each
// log entry, and SIGKILLs the leader while it does (its packed_writes
// figure shows entries of 4 writes or more, and the writers keep it busy).
// Every write acknowledged
// before, during or after the kill must be on every member afterwards:
// a packed entry is committed, and so acknowledged, whole or not at all.
func TestIntegration_KillLeaderMidBatch(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200})
	addrs := zkproc.Addrs(servers)
	setup, _ := dial(t, 4*time.Second, addrs...)
	if _, err := setup.Create("/b", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		acked []string
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for m := range 3 {
		order := append(append([]string{}, addrs[m:]...), addrs[:m]...)
		c, _ := dial(t, 4*time.Second, order...)
		for w := range 16 {
			wg.Go(func() {
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					p := fmt.Sprintf("/b/m%d-w%02d-%07d", m, w, k)
					_, err := c.Create(p, []byte("x"), 0, zk.WorldACL(zk.PermAll))
					if err == nil || errors.Is(err, zk.ErrNodeExists) {
						mu.Lock()
						acked = append(acked, p)
						mu.Unlock()
						continue
					}
					time.Sleep(5 * time.Millisecond)
					k-- // retry the same path: its outcome is unknown
				}
			})
		}
	}
	ackedNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}

	l := zkproc.LeaderOf(t, servers, 10*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for ackedNow() < 300 || mntrValue(servers[l], "zk_max_packed_writes") < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("in 30 s: %d writes acknowledged, the leader's largest entry packed %d (want 300, and 4 or more)",
				ackedNow(), mntrValue(servers[l], "zk_max_packed_writes"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := ackedNow()
	servers[l].Kill()
	// The writers go on through the new leader.
	deadline = time.Now().Add(20 * time.Second)
	for ackedNow() < before+200 {
		if time.Now().After(deadline) {
			t.Fatalf("writes did not resume after the leader was killed: %d acknowledged before, %d now", before, ackedNow())
		}
		time.Sleep(10 * time.Millisecond)
	}
	servers[l].Restart(t)
	zkproc.WaitServing(t, servers[l].Addr, 30*time.Second)
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	for i, s := range servers {
		c, _ := dial(t, 4*time.Second, s.Addr)
		if _, err := c.Sync("/b"); err != nil {
			t.Fatalf("member %d: sync: %v", i+1, err)
		}
		children, _, err := c.Children("/b")
		if err != nil {
			t.Fatal(err)
		}
		have := make(map[string]bool, len(children))
		for _, ch := range children {
			have["/b/"+ch] = true
		}
		lost := 0
		for _, p := range acked {
			if !have[p] {
				lost++
				if lost <= 10 {
					t.Errorf("member %d lost acknowledged write %s", i+1, p)
				}
			}
		}
		if lost > 0 {
			t.Errorf("member %d lost %d of %d acknowledged writes", i+1, lost, len(acked))
		}
		c.Close()
	}
	t.Logf("%d writes acknowledged (%d before the kill), none lost", len(acked), before)
}
