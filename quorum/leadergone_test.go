package quorum

import (
	"context"
	"net"
	"strconv"
	"testing"
)

// listening returns a loopback listener that accepts and holds
// connections silently, as a live member's election port does, and its
// port.
func listening(t *testing.T) (net.Listener, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return ln, ln.Addr().(*net.TCPAddr).Port
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// TestProcessGone: a port nothing listens on is a process gone; a
// listener that holds the connection is a live one.
func TestProcessGone(t *testing.T) {
	_, live := listening(t)
	dead := closedPort(t)
	for _, tc := range []struct {
		name string
		port int
		want bool
	}{
		{"listener holds the connection", live, false},
		{"nothing listens", dead, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := processGone(context.Background(), "127.0.0.1:"+strconv.Itoa(tc.port)); got != tc.want {
				t.Errorf("processGone = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLeaderProbeStops: a probe whose context ended (the member closing)
// dials nothing more and concludes nothing: a port nothing listens on no
// longer counts as a process gone, nor a listening voter as reachable.
func TestLeaderProbeStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if processGone(ctx, "127.0.0.1:"+strconv.Itoa(closedPort(t))) {
		t.Error("processGone after the context ended = true, want false")
	}
	_, up := listening(t)
	m := &Member{cfg: Config{MyID: 1, Peers: []Peer{
		{ID: 1, Host: "127.0.0.1", ElectionPort: closedPort(t)},
		{ID: 2, Host: "127.0.0.1", ElectionPort: up},
		{ID: 3, Host: "127.0.0.1", ElectionPort: closedPort(t)},
	}}}
	if m.majorityReachable(ctx, []int64{1, 2, 3}) {
		t.Error("majorityReachable after the context ended = true, want false")
	}
}

// TestMajorityReachable: a follower campaigns for a dead leader only when
// it and the voters it reaches are a majority; a follower cut off from
// every member (each port refusing, as behind a rejecting firewall) must
// not, or its term would unseat the real leader once the network heals.
func TestMajorityReachable(t *testing.T) {
	_, up1 := listening(t)
	_, up2 := listening(t)
	down1, down2 := closedPort(t), closedPort(t)
	peers := func(ports ...int) []Peer {
		ps := []Peer{{ID: 1, Host: "127.0.0.1", ElectionPort: closedPort(t)}} // this member
		for i, p := range ports {
			ps = append(ps, Peer{ID: int64(i + 2), Host: "127.0.0.1", ElectionPort: p})
		}
		return ps
	}
	for _, tc := range []struct {
		name  string
		peers []Peer
		want  bool
	}{
		{"3 voters, the dead leader and one reachable", peers(down1, up1), true},
		{"3 voters, no other reachable: cut off", peers(down1, down2), false},
		{"5 voters, leader dead, 2 of the other 3 reachable", peers(down1, up1, up2, down2), true},
		{"5 voters, leader dead, 1 of the other 3 reachable", peers(down1, up1, down2, closedPort(t)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Member{cfg: Config{MyID: 1, Peers: tc.peers}}
			var voters []int64
			for _, p := range tc.peers {
				voters = append(voters, p.ID)
			}
			if got := m.majorityReachable(context.Background(), voters); got != tc.want {
				t.Errorf("majorityReachable = %v, want %v", got, tc.want)
			}
		})
	}
}
