package zkproc

import (
	"io"
	"net"
	"testing"
	"time"
)

// echoServer echoes every connection's bytes back.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return l.Addr().String()
}

// roundTrip writes msg and reads it back within d.
func roundTrip(c net.Conn, msg string, d time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(d))
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	buf := make([]byte, len(msg))
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestProxy(t *testing.T) {
	p := StartProxy(t, echoServer(t))
	dial := func() net.Conn {
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	c := dial()
	if got, err := roundTrip(c, "hello", time.Second); err != nil || got != "hello" {
		t.Fatalf("through proxy: %q, %v", got, err)
	}
	waitFor(t, "one proxied connection", func() bool { return p.Conns() == 1 })

	p.Blackhole()
	if got, err := roundTrip(c, "lost", 200*time.Millisecond); err == nil {
		t.Fatalf("blackholed proxy passed %q", got)
	}
	p.Heal()
	c2 := dial()
	if got, err := roundTrip(c2, "again", time.Second); err != nil || got != "again" {
		t.Fatalf("after Heal: %q, %v", got, err)
	}

	p.Reset()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection survived Reset")
	}
	waitFor(t, "no proxied connections", func() bool { return p.Conns() == 0 })

	p.Reject()
	c3 := dial()
	c3.SetDeadline(time.Now().Add(time.Second))
	if _, err := c3.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("rejected connection read: %v, want EOF", err)
	}
	p.Heal()
	if got, err := roundTrip(dial(), "back", time.Second); err != nil || got != "back" {
		t.Fatalf("after Reject and Heal: %q, %v", got, err)
	}

	p.Close()
	p.Close()
	if c, err := net.DialTimeout("tcp", p.Addr, time.Second); err == nil {
		c.Close()
		t.Fatal("proxy still listening after Close")
	}
}
