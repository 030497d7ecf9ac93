package gozk

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// TestIntegration_KillNineKeepsAcknowledgedWrites writes from several
// clients at once, kills zkd with SIGKILL in the middle, restarts it on the
// same data and checks that every write a client saw acknowledged is there.
func TestIntegration_KillNineKeepsAcknowledgedWrites(t *testing.T) {
	s := zkproc.StartZkd(t, zkproc.Options{})
	for round := 0; round < 3; round++ {
		c, _ := connect(t, s.Addr)
		root := fmt.Sprintf("/round%d", round)
		_, err := c.Create(root, nil, 0, worldACL)
		must(t, err)

		const writers = 8
		var (
			mu    sync.Mutex
			acked []string
			wg    sync.WaitGroup
		)
		stop := make(chan struct{})
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					p := fmt.Sprintf("%s/w%d-%d", root, w, i)
					if _, err := c.Create(p, []byte(p), 0, worldACL); err != nil {
						return
					}
					mu.Lock()
					acked = append(acked, p)
					mu.Unlock()
				}
			}(w)
		}
		time.Sleep(300 * time.Millisecond)
		s.Kill()
		close(stop)
		wg.Wait()
		c.Close()
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n == 0 {
			t.Fatal("no write was acknowledged before the kill")
		}
		s.Restart(t)
		check, _ := connect(t, s.Addr)
		for _, p := range acked {
			data, _, err := check.Get(p)
			if err != nil || string(data) != p {
				t.Fatalf("round %d: acknowledged %s lost after kill -9: %q %v", round, p, data, err)
			}
		}
		t.Logf("round %d: %d acknowledged writes all present after kill -9", round, n)
	}
}

// TestIntegration_SessionsSurviveRestart: a client keeps its session and
// ephemerals across a zkd restart, as with ZooKeeper.
func TestIntegration_SessionsSurviveRestart(t *testing.T) {
	forBoth(t, zkproc.Options{}, func(t *testing.T, s *zkproc.Server) {
		c, events := connect(t, s.Addr)
		_, err := c.Create("/eph", nil, zk.FlagEphemeral, worldACL)
		must(t, err)
		_, _, watch, err := c.GetW("/eph")
		must(t, err)
		id := c.SessionID()
		s.Stop()
		s.Restart(t)
		waitFor(t, 30*time.Second, "reconnect", func() bool {
			for {
				select {
				case ev := <-events:
					if ev.State == zk.StateExpired {
						t.Fatal("session expired across restart")
					}
				default:
					return c.State() == zk.StateHasSession
				}
			}
		})
		if c.SessionID() != id {
			t.Fatalf("session 0x%x became 0x%x", id, c.SessionID())
		}
		// The watch set before the restart is re-armed by setWatches.
		// It is checked before c sends anything else: go-zk v1.0.4 reads
		// its last zxid for setWatches while its receive loop may write
		// it for an earlier reply (a data race in the client, which the
		// race detector reports). Once the watch has fired, setWatches is
		// behind us and the receive loop has synchronised with it.
		other, _ := connect(t, s.Addr)
		_, err = other.Set("/eph", []byte("x"), -1)
		must(t, err)
		if ev := waitEvent(t, watch, 10*time.Second); ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("watch after restart: %+v", ev)
		}
		_, st, err := c.Get("/eph")
		must(t, err)
		if st.EphemeralOwner != id {
			t.Fatalf("ephemeral owner 0x%x", st.EphemeralOwner)
		}
		// Closing the session now deletes the ephemeral.
		c.Close()
		waitFor(t, 10*time.Second, "ephemeral to go", func() bool {
			_, _, err := other.Get("/eph")
			return errors.Is(err, zk.ErrNoNode)
		})
	})
}
