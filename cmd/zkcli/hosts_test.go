package main

import (
	"sort"
	"testing"
)

// TestNamedHosts: servers are handed out as named (not resolved to
// addresses), each once per round, retryStart set when a round ends
// without a connection; a name that does not resolve fails Init.
func TestNamedHosts(t *testing.T) {
	h := &namedHosts{}
	if err := h.Init([]string{"localhost:1", "nosuch.invalid:2"}); err == nil {
		t.Fatal("Init with an unresolvable name succeeded")
	}
	servers := []string{"localhost:1", "127.0.0.1:2", "LOCALHOST:3"}
	if err := h.Init(servers); err != nil {
		t.Fatal(err)
	}
	var round []string
	for i := range servers {
		s, retry := h.Next()
		if retry {
			t.Fatalf("retryStart at server %d of the first round", i)
		}
		round = append(round, s)
	}
	sort.Strings(round)
	want := append([]string(nil), servers...)
	sort.Strings(want)
	if len(round) != len(want) || round[0] != want[0] || round[1] != want[1] || round[2] != want[2] {
		t.Fatalf("first round %v, want %v", round, want)
	}
	if _, retry := h.Next(); !retry {
		t.Fatal("no retryStart after a round without a connection")
	}
	h.Connected()
	if _, retry := h.Next(); retry {
		t.Fatal("retryStart right after a connection")
	}
}
