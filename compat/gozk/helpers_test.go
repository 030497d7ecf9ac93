package gozk

import (
	"crypto/sha1"
	"encoding/base64"
	"io"
	"log"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/compat/zkwire"
)

var worldACL = zk.WorldACL(zk.PermAll)

// forBoth runs fn against a fresh zkd and a fresh ZooKeeper 3.8 started
// with the same options.
func forBoth(t *testing.T, opts zkproc.Options, fn func(t *testing.T, s *zkproc.Server)) {
	t.Run("zkd", func(t *testing.T) {
		fn(t, zkproc.StartZkd(t, opts))
	})
	t.Run("zookeeper", func(t *testing.T) {
		fn(t, zkproc.StartZooKeeper(t, opts))
	})
}

// connect opens a go-zk session and waits until it is established.
func connect(t testing.TB, addr string) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	return connectTimeout(t, addr, 10*time.Second)
}

// connectTimeout is connect with a chosen session timeout.
func connectTimeout(t testing.TB, addr string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	return connectTo(t, []string{addr}, timeout)
}

// connectTo is connectTimeout with a list of servers (an ensemble's
// members), of which go-zk picks one and moves to another when it fails.
func connectTo(t testing.TB, addrs []string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, ev, err := zk.Connect(addrs, timeout, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-deadline:
			c.Close()
			t.Fatalf("no session with %v", addrs)
		case <-ev:
		}
	}
	t.Cleanup(c.Close)
	return c, ev
}

// dial opens a raw session.
func dial(t testing.TB, addr string) *zkwire.Client {
	t.Helper()
	c, err := zkwire.Dial(addr, zkwire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Abandon)
	return c
}

// waitEvent returns the next event from ch or fails after d.
func waitEvent(t testing.TB, ch <-chan zk.Event, d time.Duration) zk.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(d):
		t.Fatal("no watch event")
	}
	return zk.Event{}
}

// noEvent fails if ch delivers within d.
func noEvent(t testing.TB, ch <-chan zk.Event, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("unexpected event %+v", ev)
		}
	case <-time.After(d):
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// zkDigest is ZooKeeper's digest of "user:password": base64(sha1(...)).
func zkDigest(userPassword string) string {
	sum := sha1.Sum([]byte(userPassword))
	return base64.StdEncoding.EncodeToString(sum[:])
}
