package main

import (
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/zkd/zkd/compat/zkproc"
)

func TestSourceIP(t *testing.T) {
	tests := []struct {
		i, n, ips int
		want      string
	}{
		{0, 100, 1, "127.0.0.1"},
		{99, 100, 1, "127.0.0.1"},
		{49, 100, 2, "127.0.0.1"},
		{50, 100, 2, "127.0.0.2"},
		{99999, 100000, 4, "127.0.0.4"},
		{254, 300, 300, "127.0.0.255"},
		{255, 300, 300, "127.0.1.0"},
		{299, 300, 300, "127.0.1.44"},
	}
	for _, tt := range tests {
		if got := sourceIP(tt.i, tt.n, tt.ips).String(); got != tt.want {
			t.Errorf("sourceIP(%d, %d, %d) = %s, want %s", tt.i, tt.n, tt.ips, got, tt.want)
		}
	}
}

// TestIntegration_Sessions holds sessions from two source addresses on a
// real zkd and checks the report: every session opened and stayed, pings
// were answered, and the RSS and CPU of the zkd process were sampled.
func TestIntegration_Sessions(t *testing.T) {
	srv := zkproc.StartZkd(t, zkproc.Options{ExtraCfg: map[string]string{"maxClientCnxns": "0"}})
	res := runSessionsWorkload(t, srv.Addr, "-clients", "60", "-source-ips", "2",
		"-session-timeout", "4s", "-duration", "2s", "-warmup", "100ms", "-pids", strconv.Itoa(srv.PID()))
	if res.ConnectFailures != 0 || res.Disconnects != 0 || res.Expired != 0 {
		t.Fatalf("failures %d, disconnects %d, expired %d (last %v)", res.ConnectFailures, res.Disconnects, res.Expired, res.lastErr)
	}
	// 60 sessions pinging every 4s/3 for 2s: at least one round.
	if res.Ops < 60 || res.Latency.P50 <= 0 {
		t.Fatalf("%d pings, latency %+v", res.Ops, res.Latency)
	}
	if res.RSSHeld <= 0 || res.ConnectsPerSec <= 0 {
		t.Fatalf("RSS held %d, connects/s %.1f", res.RSSHeld, res.ConnectsPerSec)
	}
}

// TestIntegration_SessionStorm opens thousands of sessions on a real zkd
// from two source addresses, as fast as 64 connectors go, and holds them
// past their timeout: none may fail, be disconnected or expire. Before
// zkbench left the local port to connect (bindNoPort), each bind searched
// every port in use on its address, and at this scale the connect storm's
// system time starved the pinger until the server expired sessions it had
// not heard from.
func TestIntegration_SessionStorm(t *testing.T) {
	const sessions = 4000
	srv := zkproc.StartZkd(t, zkproc.Options{ExtraCfg: map[string]string{"maxClientCnxns": "0"}})
	res := runSessionsWorkload(t, srv.Addr, "-clients", strconv.Itoa(sessions),
		"-source-ips", "2", "-watches", "0", "-session-timeout", "4s", "-duration", "6s", "-warmup", "0s")
	if res.ConnectFailures != 0 || res.Disconnects != 0 || res.Expired != 0 {
		t.Fatalf("%d sessions: %d failed to connect, %d disconnected, %d expired (last %v)",
			sessions, res.ConnectFailures, res.Disconnects, res.Expired, res.lastErr)
	}
	if res.Ops < sessions {
		t.Fatalf("%d sessions held 6s with a 4s timeout answered only %d pings", sessions, res.Ops)
	}
}

// runSessionsWorkload runs the sessions workload against addr with the
// given extra flags and returns its result.
func runSessionsWorkload(t *testing.T, addr string, flags ...string) *result {
	t.Helper()
	cfg, err := parseArgs(append([]string{"-servers", addr, "-workload", "sessions"}, flags...), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	res, err := run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
