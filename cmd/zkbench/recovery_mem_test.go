package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

var (
	recoveryPaths     = flag.Int("recovery-paths", 100000, "TestIntegration_RecoveryMemory: lock paths in the fleet tree (make recovery-mem: 1,000,000)")
	recoveryMaxBytes  = flag.Int64("recovery-max-bytes", 200, "TestIntegration_RecoveryMemory: most RSS per znode, over the empty member's, one second after the first answer")
	recoveryReadAfter = flag.Duration("recovery-read-after", time.Second, "TestIntegration_RecoveryMemory: when RSS is read, after the first answer")
	recoveryProfiles  = flag.String("recovery-profiles", "", "TestIntegration_RecoveryMemory: save the members' heap profiles and MemStats in this `directory`")
)

// TestIntegration_RecoveryMemory is issue 19's memory per recovered znode:
// a member that recovers -recovery-paths lock paths (the fleet's tree,
// /fleet/dNNNN/pNNNNNNN) after kill -9 holds at most -recovery-max-bytes of
// RSS per znode, read one second (-recovery-read-after) after its first
// answer (a client handshake), less the RSS of the same member empty, read
// the same way.
// Standalone, and as a follower of 3 (the one killed). A clean restart
// (SIGTERM, which takes a snapshot) is measured beside it. make
// recovery-mem runs it at 1M paths.
func TestIntegration_RecoveryMemory(t *testing.T) {
	bin := zkproc.BuildZkd(t)
	n := *recoveryPaths
	for _, tc := range []struct {
		name    string
		members int
	}{{"standalone", 1}, {"follower of 3", 3}} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			opts := zkproc.Options{Binary: bin, StartTimeout: 5 * time.Minute}
			if *recoveryProfiles != "" {
				opts.Binary = pprofWrapper(t, bin)
			}
			var servers []*zkproc.Server
			if tc.members == 1 {
				servers = []*zkproc.Server{zkproc.StartZkd(t, opts)}
			} else {
				servers = zkproc.StartZkdEnsemble(t, tc.members, opts)
			}
			target := servers[0]
			for _, s := range servers {
				if tc.members == 1 || memberMode(s.Addr) == "follower" {
					target = s
					break
				}
			}
			empty := rssAfterFirstAnswer(t, target, time.Now(), tc.name+"-empty")

			cfg, err := parseArgs([]string{"-servers", strings.Join(zkproc.Addrs(servers), ","), "-workload", "fleet",
				"-paths", strconv.Itoa(n), "-root", "/fleet"}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			if err := makeFleetTree(ctx, cfg, testWriter{t}); err != nil {
				t.Fatal(err)
			}
			// The tree is /, /zookeeper (and its children), /fleet, its
			// directories, the paths and the ready marker.
			want := int64(n + (n+fleetPathsPerDir-1)/fleetPathsPerDir + 2)
			awaitZnodes(t, target, want)

			target.Kill()
			killed := restartMeasured(t, target, empty, n, want, tc.name+"-kill9")
			target.Stop()
			clean := restartMeasured(t, target, empty, n, want, tc.name+"-clean")
			t.Logf("%s, %d lock paths: %d B of RSS per znode after kill -9 recovery, %d B after a clean restart (empty member %.1f MiB)",
				tc.name, n, killed, clean, float64(empty)/(1<<20))
			if killed > *recoveryMaxBytes {
				t.Errorf("%s: %d B of RSS per znode after a kill -9 recovery of %d lock paths, want at most %d", tc.name, killed, n, *recoveryMaxBytes)
			}
		})
	}
}

// restartMeasured starts the stopped target, waits for its first answer
// and returns its RSS one second later, less empty, per znode of n. Its
// readiness line must count at least want znodes: a member serves only
// once it has applied its own log.
func restartMeasured(t *testing.T, s *zkproc.Server, empty int64, n int, want int64, what string) int64 {
	t.Helper()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for zkproc.Handshake(s.Addr, time.Second) != nil {
		if time.Now().After(deadline) || !s.Running() {
			t.Fatalf("%s: no answer from %s after its restart", what, s.Addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	first := time.Now()
	ready := lastLine(s.Log(), "zkd serving")
	rss := rssAfterFirstAnswer(t, s, first, what)
	t.Logf("%s: %s; RSS %.1f MiB", what, ready, float64(rss)/(1<<20))
	if m := znodesRE.FindStringSubmatch(ready); m == nil {
		t.Errorf("%s: no znode count in the readiness line %q", what, ready)
	} else if got, _ := strconv.ParseInt(m[1], 10, 64); got < want {
		t.Errorf("%s: %s served at %d znodes, before it applied its own log (%d)", what, s.Addr, got, want)
	}
	return (rss - empty) / int64(n)
}

// rssAfterFirstAnswer reads s's RSS -recovery-read-after (one second)
// after first, the time of its first answer (the figure the issue
// defines), and saves its heap profile when -recovery-profiles is set.
func rssAfterFirstAnswer(t *testing.T, s *zkproc.Server, first time.Time, what string) int64 {
	t.Helper()
	time.Sleep(time.Until(first.Add(*recoveryReadAfter)))
	ps, err := sampleProc(s.PID())
	if err != nil {
		t.Fatalf("%s: RSS of %s: %v", what, s.Addr, err)
	}
	if *recoveryProfiles != "" {
		saveHeapProfiles(t, s, what)
	}
	return ps.rss
}

// awaitZnodes waits until s holds at least want znodes (mntr).
func awaitZnodes(t *testing.T, s *zkproc.Server, want int64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, _ := s.FourLetter("mntr")
		got := int64(-1)
		for line := range strings.SplitSeq(out, "\n") {
			if v, ok := strings.CutPrefix(line, "zk_znode_count\t"); ok {
				got, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d znodes, want %d", s.Addr, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pprofWrapper is a script that runs bin with -pprof on a free port.
func pprofWrapper(t *testing.T, bin string) string {
	t.Helper()
	if err := os.MkdirAll(*recoveryProfiles, 0o755); err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(t.TempDir(), "zkd-pprof")
	if err := os.WriteFile(w, []byte("#!/bin/sh\nexec "+bin+" -pprof 127.0.0.1:0 \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

var znodesRE = regexp.MustCompile(`"znodes": (\d+)`)

var pprofAddrRE = regexp.MustCompile(`"server": "pprof", "addr": "([^"]+)"`)

// saveHeapProfiles saves s's MemStats and heap profile (before and after
// a collection) as what-*.txt and what-heap.pb.gz.
func saveHeapProfiles(t *testing.T, s *zkproc.Server, what string) {
	t.Helper()
	m := pprofAddrRE.FindAllStringSubmatch(s.Log(), -1)
	if len(m) == 0 {
		t.Fatalf("%s: no pprof address in the log of %s", what, s.Addr)
	}
	addr := m[len(m)-1][1]
	name := strings.ReplaceAll(what, " ", "_")
	for _, p := range []struct{ query, file string }{
		{"debug=1", name + "-memstats.txt"},
		{"gc=1", name + "-heap.pb.gz"},
		{"debug=1&gc=1", name + "-memstats-after-gc.txt"},
	} {
		resp, err := http.Get("http://" + addr + "/debug/pprof/heap?" + p.query)
		if err != nil {
			t.Fatalf("%s: heap profile: %v", what, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*recoveryProfiles, p.file), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// lastLine is the last line of log containing sub.
func lastLine(log, sub string) string {
	i := strings.LastIndex(log, sub)
	if i < 0 {
		return fmt.Sprintf("(no %q line)", sub)
	}
	start := strings.LastIndexByte(log[:i], '\n') + 1
	end := strings.IndexByte(log[i:], '\n')
	if end < 0 {
		return log[start:]
	}
	return log[start : i+end]
}

// testWriter sends zkbench's log lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
