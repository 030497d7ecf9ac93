package soak

import (
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
)

func TestCheckHolds(t *testing.T) {
	tests := []struct {
		name    string
		holds   []hold
		expired map[int64]bool
		want    string // a substring of the one complaint; "" for none
	}{
		{"in turn", []hold{
			{client: 1, session: 1, token: 1, acquired: 10, released: 20},
			{client: 2, session: 2, token: 2, acquired: 25, released: 30},
			{client: 1, session: 1, token: 5, acquired: 31, released: 40},
		}, nil, ""},
		{"overlap", []hold{
			{client: 1, session: 1, token: 1, acquired: 10, released: 20},
			{client: 2, session: 2, token: 2, acquired: 15, released: 30},
		}, nil, "client 2 (token 2) acquired at 15ns, before client 1 (token 1"},
		{"overlap with a hold two back", []hold{
			{client: 1, session: 1, token: 1, acquired: 10, released: 50},
			{client: 2, session: 2, token: 2, acquired: 60, released: 70},
			{client: 3, session: 3, token: 3, acquired: 71, released: 80},
			{client: 4, session: 4, token: 4, acquired: 40, released: 90},
		}, nil, "client 4 (token 4) acquired at 40ns"},
		{"recorded out of token order", []hold{
			{client: 2, session: 2, token: 2, acquired: 25, released: 30},
			{client: 1, session: 1, token: 1, acquired: 10, released: 20},
		}, nil, ""},
		{"earlier holder's session expired", []hold{
			{client: 1, session: 1, token: 1, acquired: 10, released: 20},
			{client: 2, session: 2, token: 2, acquired: 15, released: 30},
		}, map[int64]bool{1: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkHolds(tt.holds, tt.expired)
			if tt.want == "" && len(got) > 0 || tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)) {
				t.Fatalf("checkHolds = %q, want one complaint containing %q", got, tt.want)
			}
		})
	}
}

func TestCheckFenced(t *testing.T) {
	tests := []struct {
		name   string
		fenced []fencedWrite
		want   string
	}{
		{"in order", []fencedWrite{{version: 2, value: 2, token: 7}, {version: 1, value: 1, token: 3}, {version: 4, value: 4, token: 7}}, ""},
		{"stale holder wrote last", []fencedWrite{{version: 1, value: 1, token: 9}, {version: 2, value: 2, token: 4, client: 3}}, "client 3 with token 4 wrote counter version 2"},
		{"version twice", []fencedWrite{{version: 1, value: 1, token: 1, client: 1}, {version: 1, value: 1, token: 2, client: 2}}, "version 1 acknowledged twice"},
		{"half a multi", []fencedWrite{{version: 3, value: 2, token: 1}}, "counter version 3 holds 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkFenced(tt.fenced)
			if tt.want == "" && len(got) > 0 || tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)) {
				t.Fatalf("checkFenced = %q, want one complaint containing %q", got, tt.want)
			}
		})
	}
}

func TestRegisterModel(t *testing.T) {
	w := func(key, v string, call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: regInput{key: key, write: true, value: v}, Call: call, Return: ret}
	}
	r := func(key, v string, call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: regInput{key: key}, Output: v, Call: call, Return: ret}
	}
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"read sees the last write", []porcupine.Operation{w("a", "1", 0, 10), r("a", "1", 20, 30)}, porcupine.Ok},
		{"stale read", []porcupine.Operation{w("a", "1", 0, 10), r("a", "", 20, 30)}, porcupine.Illegal},
		{"keys are independent", []porcupine.Operation{w("a", "1", 0, 10), r("b", "", 20, 30), r("a", "1", 20, 30)}, porcupine.Ok},
		{"a write of unknown outcome may apply late", []porcupine.Operation{
			w("a", "1", 0, math.MaxInt64), r("a", "", 20, 30), r("a", "1", 40, 50)}, porcupine.Ok},
		{"but not go back", []porcupine.Operation{
			w("a", "1", 0, math.MaxInt64), r("a", "1", 20, 30), r("a", "", 40, 50)}, porcupine.Illegal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkRegisters(tt.ops, 0).result; got != tt.want {
				t.Fatalf("check = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestHandshakeDialer: a client whose member accepts the connection and
// never answers (a paused process) gives up on it within the dialer's
// limit, not go-zk's ten receive timeouts (20 s for this 3 s session).
func TestHandshakeDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, unanswered, until the test ends
		}
	}()
	c, events, err := zk.Connect([]string{ln.Addr().String()}, 3*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false),
		zk.WithDialer(handshakeDialer(500*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.After(10 * time.Second)
	connected := false
	for {
		select {
		case ev := <-events:
			switch {
			case ev.State == zk.StateConnected:
				connected = true
			case connected && ev.State == zk.StateDisconnected:
				return // gave up on the silent member
			}
		case <-deadline:
			t.Fatal("the client still waited for the silent member's answer after 10 s")
		}
	}
}
