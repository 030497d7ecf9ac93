package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/zab"
)

func TestRecoveredFrom(t *testing.T) {
	for _, tc := range []struct {
		r    zab.Recovery
		want string
	}{
		{zab.Recovery{Fresh: true, SnapshotZxid: -1, LogEntries: 1}, "empty data directory"},
		{zab.Recovery{SnapshotZxid: -1}, "nothing to replay"},
		{zab.Recovery{SnapshotZxid: -1, LogEntries: 7}, "log replay of 7 entries"},
		{zab.Recovery{SnapshotZxid: 0x200000003, SnapshotIndex: 9}, "snapshot at zxid 0x200000003"},
		{zab.Recovery{SnapshotZxid: 0x10, SnapshotIndex: 9, LogEntries: 2}, "snapshot at zxid 0x10, then log replay of 2 entries"},
	} {
		if got := recoveredFrom(tc.r); got != tc.want {
			t.Errorf("recoveredFrom(%+v) = %q, want %q", tc.r, got, tc.want)
		}
	}
	for mode, want := range map[string]string{"standalone": "standalone", "leader": "elected leader",
		"follower": "joined the leader as follower", "observer": "joined the leader as observer"} {
		if got := howServing(mode); got != want {
			t.Errorf("howServing(%q) = %q, want %q", mode, got, want)
		}
	}
}

// readyLines returns the readiness lines of a server's log so far.
func readyLines(t *testing.T, s *zkproc.Server) []string {
	t.Helper()
	b, err := os.ReadFile(s.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for l := range strings.Lines(string(b)) {
		if strings.Contains(l, "\t"+readyMessage+"\t") {
			out = append(out, l)
		}
	}
	return out
}

// TestIntegration_ReadinessLog: a standalone start logs one readiness line
// saying how it recovered, and none of raft's election of its only voter
// above debug (no WARN at all); ensemble members log theirs once elected
// or joined.
func TestIntegration_ReadinessLog(t *testing.T) {
	s := zkproc.StartZkd(t, zkproc.Options{})
	waitLines := func(s *zkproc.Server, n int) []string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if l := readyLines(t, s); len(l) >= n || time.Now().After(deadline) {
				return l
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if l := waitLines(s, 1); len(l) != 1 || !strings.Contains(l[0], `"how": "standalone"`) || !strings.Contains(l[0], `"recovered": "empty data directory"`) {
		t.Fatalf("first start: readiness lines %q", l)
	}
	s.Stop() // a snapshot is taken at shutdown
	s.Restart(t)
	if l := waitLines(s, 2); len(l) != 2 || !regexp.MustCompile(`"recovered": "snapshot at zxid 0x[0-9a-f]+`).MatchString(l[1]) {
		t.Fatalf("restart: readiness lines %q", l)
	}
	log, _ := os.ReadFile(s.LogPath)
	for l := range strings.Lines(string(log)) {
		if strings.Contains(l, "\tWARN\t") || strings.Contains(l, "election") {
			t.Errorf("standalone start logs %q", strings.TrimSpace(l))
		}
	}

	members := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200})
	leaders := 0
	for _, m := range members {
		l := waitLines(m, 1)
		switch {
		case len(l) != 1:
			t.Errorf("member %s: readiness lines %q", m.Addr, l)
		case strings.Contains(l[0], `"how": "elected leader"`):
			leaders++
		case !strings.Contains(l[0], `"how": "joined the leader as follower"`):
			t.Errorf("member %s: readiness line %q", m.Addr, l[0])
		}
	}
	if leaders != 1 {
		t.Errorf("%d members logged that they were elected leader, want 1", leaders)
	}
}
