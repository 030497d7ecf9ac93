package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestUnreachableServer: every workload that needs a server, given an
// address where nothing listens, fails at once with an error naming the
// address and the cause (it printed "context canceled" or "no session
// after 30s" and, for -workload sessions, exited 0). main exits 1 on any
// error run returns.
func TestUnreachableServer(t *testing.T) {
	addr := closedAddr(t)
	for _, args := range [][]string{
		{"-workload", "get"},
		{"-workload", "get", "-client", "raw"},
		{"-workload", "set", "-rate", "100"},
		{"-workload", "lock"},
		{"-workload", "session"},
		{"-workload", "sessions", "-clients", "10"},
		{"-workload", "fill", "-count", "10"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cfg, err := parseArgs(append([]string{"-servers", addr, "-duration", "1s"}, args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res, err := run(context.Background(), cfg, io.Discard)
			if err == nil {
				t.Fatalf("no error against %s (result %+v)", addr, res)
			}
			if msg := err.Error(); !strings.Contains(msg, addr) || !strings.Contains(msg, "connection refused") {
				t.Fatalf("error %q does not name %s and connection refused", msg, addr)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("took %v to fail", d)
			}
		})
	}
}

// TestSomeServersUnreachable: with one of two addresses closed, the
// check names it on the log and lets the run go on.
func TestSomeServersUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := closedAddr(t)
	var log bytes.Buffer
	if err := checkReachable(context.Background(), []string{ln.Addr().String(), closed}, 5*time.Second, &log); err != nil {
		t.Fatalf("one server up: %v", err)
	}
	if !strings.Contains(log.String(), closed) || !strings.Contains(log.String(), "1 of 2 servers unreachable") {
		t.Fatalf("log %q does not name the unreachable %s", log.String(), closed)
	}
}
