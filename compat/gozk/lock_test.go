package gozk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/compat/zkwire"
	"github.com/zkd/zkd/jute"
)

// seqOf returns the sequence number at the end of a lock node's name.
func seqOf(name string) int {
	n, err := strconv.Atoi(name[len(name)-10:])
	if err != nil {
		return -1
	}
	return n
}

// TestIntegration_LockContention runs go-zk's lock recipe with 20
// contenders. Each holder reads a counter, then writes it back incremented
// with the version it read: a second holder at the same time would make one
// of the writes fail with BadVersion. Each holder also notes the lowest
// sequence number under the lock path when it acquired: the grants must
// follow the sequence order (FIFO), and the lowest node's czxid, the
// fencing token, must grow from one holder to the next.
func TestIntegration_LockContention(t *testing.T) {
	forBoth(t, zkproc.Options{}, func(t *testing.T, s *zkproc.Server) {
		setup, _ := connect(t, s.Addr)
		_, err := setup.Create("/counter", make([]byte, 8), 0, worldACL)
		must(t, err)
		_, err = setup.Create("/lock", nil, 0, worldACL)
		must(t, err)

		const contenders, rounds = 20, 3
		var (
			mu     sync.Mutex
			grants []int   // sequence numbers in grant order
			tokens []int64 // czxid of the holder's node, in grant order
			wg     sync.WaitGroup
			errs   = make(chan error, contenders*rounds)
		)
		conns := make([]*zk.Conn, contenders)
		for i := range conns {
			conns[i], _ = connect(t, s.Addr)
		}
		start := make(chan struct{})
		for i := 0; i < contenders; i++ {
			wg.Add(1)
			go func(c *zk.Conn) {
				defer wg.Done()
				<-start
				for r := 0; r < rounds; r++ {
					l := zk.NewLock(c, "/lock", worldACL)
					if err := l.Lock(); err != nil {
						errs <- fmt.Errorf("lock: %w", err)
						return
					}
					kids, _, err := c.Children("/lock")
					if err != nil {
						errs <- err
						return
					}
					sort.Slice(kids, func(a, b int) bool { return seqOf(kids[a]) < seqOf(kids[b]) })
					_, st, err := c.Get("/lock/" + kids[0])
					if err != nil {
						errs <- err
						return
					}
					data, cst, err := c.Get("/counter")
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					grants = append(grants, seqOf(kids[0]))
					tokens = append(tokens, st.Czxid)
					mu.Unlock()
					time.Sleep(time.Millisecond)
					v := binary.BigEndian.Uint64(data) + 1
					binary.BigEndian.PutUint64(data, v)
					if _, err := c.Set("/counter", data, cst.Version); err != nil {
						errs <- fmt.Errorf("versioned write under the lock: %w", err)
					}
					if err := l.Unlock(); err != nil {
						errs <- fmt.Errorf("unlock: %w", err)
						return
					}
				}
			}(conns[i])
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		data, _, err := setup.Get("/counter")
		must(t, err)
		if got := binary.BigEndian.Uint64(data); got != contenders*rounds {
			t.Fatalf("counter %d, want %d", got, contenders*rounds)
		}
		for i := 1; i < len(grants); i++ {
			if grants[i] <= grants[i-1] {
				t.Fatalf("grant %d went to sequence %d after %d: not FIFO (%v)", i, grants[i], grants[i-1], grants)
			}
			if tokens[i] <= tokens[i-1] {
				t.Fatalf("fencing token %d after %d", tokens[i], tokens[i-1])
			}
		}
	})
}

// TestIntegration_LockReleasedOnSessionLoss: a holder whose process dies
// (its session expires) releases the lock to the next waiter.
func TestIntegration_LockReleasedOnSessionLoss(t *testing.T) {
	forBoth(t, zkproc.Options{TickTime: 100}, func(t *testing.T, s *zkproc.Server) {
		holder, err := zkwireHolder(t, s.Addr)
		must(t, err)
		waiter, _ := connect(t, s.Addr)
		l := zk.NewLock(waiter, "/lock", worldACL)
		got := make(chan error, 1)
		go func() { got <- l.Lock() }()
		select {
		case err := <-got:
			t.Fatalf("lock granted while held: %v", err)
		case <-time.After(500 * time.Millisecond):
		}
		holder() // the holder vanishes without closing its session
		select {
		case err := <-got:
			must(t, err)
		case <-time.After(15 * time.Second):
			t.Fatal("lock not released after the holder's session expired")
		}
		must(t, l.Unlock())
	})
}

// zkwireHolder takes /lock with a raw session of 1 s timeout and returns a
// function that drops the connection without closing the session.
func zkwireHolder(t *testing.T, addr string) (func(), error) {
	c, err := zkwire.Dial(addr, zkwire.Options{Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	c2, _ := connect(t, addr)
	if _, err := c2.Create("/lock", nil, 0, worldACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return nil, err
	}
	// A name go-zk's recipe orders by its sequence suffix.
	req := &jute.CreateRequest{Path: "/lock/holder-lock-", Acl: rawWorld, Flags: jute.ModeEphemeralSequential}
	if _, err := c.Call(jute.OpCreate, req, nil); err != nil {
		return nil, err
	}
	return c.Abandon, nil
}
