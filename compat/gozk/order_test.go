package gozk

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/compat/zkwire"
	"github.com/zkd/zkd/jute"
)

// TestIntegration_ReplyBeforeLaterWatchEvent: a session gets the reply to
// its write before the watch event of a write committed after it, as
// ZooKeeper orders a session's replies and events by zxid. 32 sessions
// write beside it, so that a standalone zkd packs 16 requests and more
// into a batch and leaves their replies to its replier goroutine
// (zab.Later): the claim on the connection the reply takes first must
// hold back the event that the next batch fires.
func TestIntegration_ReplyBeforeLaterWatchEvent(t *testing.T) {
	forBoth(t, zkproc.Options{}, func(t *testing.T, s *zkproc.Server) {
		setup := dial(t, s.Addr)
		rawCreate(t, setup, "/w", 0)
		rawCreate(t, setup, "/a", 0)
		stop := make(chan struct{})
		var writers sync.WaitGroup
		for i := range 32 {
			c := dial(t, s.Addr)
			path := rawCreate(t, c, fmt.Sprintf("/bg%d", i), 0)
			writers.Add(1)
			go func() {
				defer writers.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := c.Call(jute.OpSetData, &jute.SetDataRequest{Path: path, Data: []byte("x"), Version: -1}, &jute.SetDataResponse{}); err != nil {
						return
					}
				}
			}()
		}
		defer func() {
			close(stop)
			writers.Wait()
		}()

		// frames are a's replies and /w events, in arrival order.
		type frame struct {
			xid   int32
			event bool
		}
		var (
			mu     sync.Mutex
			frames []frame
		)
		a, err := zkwire.Dial(s.Addr, zkwire.Options{OnFrame: func(h jute.ReplyHeader, ev *jute.WatcherEvent) {
			mu.Lock()
			defer mu.Unlock()
			if ev == nil || ev.Path == "/w" {
				frames = append(frames, frame{xid: h.Xid, event: ev != nil})
			}
		}})
		must(t, err)
		t.Cleanup(a.Abandon)
		b := dial(t, s.Addr)
		set := func(c *zkwire.Client, path string) (jute.ReplyHeader, error) {
			return c.Call(jute.OpSetData, &jute.SetDataRequest{Path: path, Data: []byte("y"), Version: -1}, &jute.SetDataResponse{})
		}
		checked := 0
		for round := range 200 {
			if _, err := a.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/w", Watch: true}, &jute.GetDataResponse{}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			from := len(frames)
			mu.Unlock()
			// a's write and b's write of the watched node race; when b's
			// commits after a's, a must see its reply first.
			var (
				ha, hb     jute.ReplyHeader
				erra, errb error
				both       sync.WaitGroup
			)
			both.Add(2)
			go func() { defer both.Done(); ha, erra = set(a, "/a") }()
			go func() { defer both.Done(); hb, errb = set(b, "/w") }()
			both.Wait()
			if erra != nil || errb != nil {
				t.Fatalf("round %d: setData /a: %v, setData /w: %v", round, erra, errb)
			}
			reply, event := -1, -1
			for deadline := time.Now().Add(10 * time.Second); event < 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("round %d: no event for /w within 10 s", round)
				}
				mu.Lock()
				for i, f := range frames[from:] {
					switch {
					case f.event && event < 0:
						event = i
					case !f.event && f.xid == ha.Xid:
						reply = i
					}
				}
				mu.Unlock()
			}
			if hb.Zxid > ha.Zxid {
				checked++
				if reply < 0 || event < reply {
					t.Fatalf("round %d: the event of /w (zxid 0x%x) reached the session before the reply to its own earlier write (zxid 0x%x)", round, hb.Zxid, ha.Zxid)
				}
			}
		}
		if checked < 20 {
			t.Fatalf("only %d of 200 rounds had the watched write commit after the session's own: the order was hardly tested", checked)
		}
		t.Logf("%d of 200 rounds had the watched write after the session's own; every one had the reply first", checked)
	})
}
