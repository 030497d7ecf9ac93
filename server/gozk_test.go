package server

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// dialZK connects a go-zk client and waits for its session.
func dialZK(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	zc, ev, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				go func() {
					for range ev {
					}
				}()
				return zc
			}
		case <-deadline:
			t.Fatal("go-zk got no session")
		}
	}
}

func TestGoZKBasics(t *testing.T) {
	ts := startServer(t, nil)
	zc := dialZK(t, ts.addr)
	acl := zk.WorldACL(zk.PermAll)
	if p, err := zc.Create("/g", []byte("1"), 0, acl); err != nil || p != "/g" {
		t.Fatalf("create: %q %v", p, err)
	}
	if _, err := zc.Create("/g", nil, 0, acl); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("create twice: %v", err)
	}
	data, st, err := zc.Get("/g")
	if err != nil || string(data) != "1" || st.Version != 0 {
		t.Fatalf("get: %q %+v %v", data, st, err)
	}
	if _, err := zc.Set("/g", []byte("2"), 5); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("set bad version: %v", err)
	}
	res, err := zc.Multi(
		&zk.CreateRequest{Path: "/g/a", Acl: acl},
		&zk.SetDataRequest{Path: "/g", Data: []byte("3"), Version: 0},
	)
	if err != nil || len(res) != 2 || res[0].String != "/g/a" {
		t.Fatalf("multi: %+v %v", res, err)
	}
	kids, _, err := zc.Children("/g")
	if err != nil || fmt.Sprint(kids) != "[a]" {
		t.Fatalf("children: %v %v", kids, err)
	}
	if _, err := zc.Sync("/g"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	ok, _, err := zc.Exists("/nope")
	if err != nil || ok {
		t.Fatalf("exists: %v %v", ok, err)
	}
}

func TestGoZKWatches(t *testing.T) {
	ts := startServer(t, nil)
	a, b := dialZK(t, ts.addr), dialZK(t, ts.addr)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := a.Create("/w", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	_, _, dataCh, err := a.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childCh, err := a.ChildrenW("/w")
	if err != nil {
		t.Fatal(err)
	}
	_, _, existCh, err := a.ExistsW("/w/later")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Set("/w", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create("/w/later", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ch   <-chan zk.Event
		typ  zk.EventType
		path string
	}{
		{dataCh, zk.EventNodeDataChanged, "/w"},
		{childCh, zk.EventNodeChildrenChanged, "/w"},
		{existCh, zk.EventNodeCreated, "/w/later"},
	} {
		select {
		case ev := <-tc.ch:
			if ev.Type != tc.typ || ev.Path != tc.path {
				t.Fatalf("event %+v, want %v on %s", ev, tc.typ, tc.path)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %v event on %s", tc.typ, tc.path)
		}
	}
	// Closing b's session deletes its ephemeral and fires a's exist watch.
	_, _, delCh, err := a.ExistsW("/w/later")
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	select {
	case ev := <-delCh:
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("event %+v, want NodeDeleted", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ephemeral not deleted when its session closed")
	}
}

// TestGoZKReconnectKeepsSessionAndWatches drops the client's connection on
// the server side: go-zk reconnects with its session id and password,
// re-arms its watches with setWatches, and still gets the event.
func TestGoZKReconnectKeepsSessionAndWatches(t *testing.T) {
	ts := startServer(t, nil)
	a, b := dialZK(t, ts.addr), dialZK(t, ts.addr)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := a.Create("/rc", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	_, _, ch, err := a.GetW("/rc")
	if err != nil {
		t.Fatal(err)
	}
	id := a.SessionID()
	for _, c := range ts.connections() {
		if c.sessionID.Load() == id {
			c.close("test drops the connection")
		}
	}
	waitFor(t, "go-zk reattached", func() bool {
		for _, ci := range ts.Conns() {
			if ci.SessionID == id && ci.Received > 1 {
				return true
			}
		}
		return false
	})
	if a.SessionID() != id {
		t.Fatalf("session changed from %x to %x", id, a.SessionID())
	}
	if _, err := b.Set("/rc", []byte("after"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch lost across reconnect")
	}
	if ok, _, err := b.Exists("/rc"); err != nil || !ok {
		t.Fatalf("ephemeral of the reattached session: %v %v", ok, err)
	}
}

func TestGoZKAuth(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.SuperDigest = Digest("super:pw") })
	owner := dialZK(t, ts.addr)
	if err := owner.AddAuth("digest", []byte("u:p")); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Create("/acl", []byte("s"), 0, zk.DigestACL(zk.PermAll, "u", "p")); err != nil {
		t.Fatal(err)
	}
	other := dialZK(t, ts.addr)
	if _, _, err := other.Get("/acl"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("anonymous get: %v", err)
	}
	if err := other.AddAuth("digest", []byte("super:pw")); err != nil {
		t.Fatal(err)
	}
	if d, _, err := other.Get("/acl"); err != nil || string(d) != "s" {
		t.Fatalf("super get: %q %v", d, err)
	}
}

// TestGoZKConcurrentAsync issues many concurrent requests on one session:
// go-zk matches replies by xid and fails on any out-of-order reply.
func TestGoZKConcurrentAsync(t *testing.T) {
	ts := startServer(t, nil)
	zc := dialZK(t, ts.addr)
	acl := zk.WorldACL(zk.PermAll)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := fmt.Sprintf("/c%d", i)
			if _, err := zc.Create(p, []byte(p), 0, acl); err != nil {
				errs <- err
				return
			}
			if d, _, err := zc.Get(p); err != nil || string(d) != p {
				errs <- fmt.Errorf("get %s: %q %v", p, d, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
