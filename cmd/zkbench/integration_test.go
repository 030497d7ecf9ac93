package main

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd/zkd/compat/zkproc"
)

// benchAgainst runs every workload briefly against addr and checks that it
// did work, made no errors and left nothing behind.
func benchAgainst(t *testing.T, addr string) {
	tests := []struct {
		workload       string
		clients, locks int
		rate           string // -rate: open loop
	}{
		{"create", 3, 0, ""},
		{"set", 3, 0, ""},
		{"set", 3, 0, "300"},
		{"get", 3, 0, ""},
		{"lock", 3, 1, ""},
		{"lock", 3, 3, ""},
	}
	for _, tt := range tests {
		args := []string{"-servers", addr, "-workload", tt.workload, "-clients", itoa(tt.clients),
			"-duration", "400ms", "-warmup", "100ms", "-size", "100", "-root", "/zkbench-test"}
		if tt.locks > 0 {
			args = append(args, "-locks", itoa(tt.locks))
		}
		name := "workload=" + tt.workload
		if tt.locks > 0 {
			name += "/locks=" + itoa(tt.locks)
		}
		if tt.rate != "" {
			args = append(args, "-rate", tt.rate)
			name += "/rate=" + tt.rate
		}
		t.Run(name, func(t *testing.T) {
			cfg, err := parseArgs(args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			res, err := run(context.Background(), cfg, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if res.Ops == 0 || res.Errors != 0 || res.OpsPerSec <= 0 {
				t.Fatalf("ops %d, errors %d (last %v), ops/s %.1f", res.Ops, res.Errors, res.lastErr, res.OpsPerSec)
			}
			if res.Seconds < 0.4 || res.Seconds > 5 {
				t.Errorf("measured %.3fs, want about 0.4s", res.Seconds)
			}
			if res.Latency.P50 <= 0 || res.Latency.P50 > res.Latency.P99 || res.Latency.P99 > res.Latency.Max {
				t.Errorf("latency quantiles out of order: %+v", res.Latency)
			}
			assertGone(t, addr, "/zkbench-test")
		})
	}

	t.Run("fill and wait", func(t *testing.T) {
		cfg, err := parseArgs([]string{"-servers", addr, "-workload", "fill", "-count", "300", "-clients", "4", "-size", "10", "-root", "/fill-test"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		res, err := run(context.Background(), cfg, io.Discard)
		if err != nil || res.Count != 300 {
			t.Fatalf("fill: %+v, %v", res, err)
		}
		c := dial(t, addr)
		kids, _, err := c.Children("/fill-test")
		if err != nil || len(kids) != 300 {
			t.Fatalf("fill left %d children, %v", len(kids), err)
		}
		cfg, err = parseArgs([]string{"-servers", addr, "-workload", "wait", "-path", fillPath("/fill-test", 299), "-timeout", "10s"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		res, err = run(context.Background(), cfg, io.Discard)
		if err != nil || res.Seconds <= 0 || res.Seconds > 10 {
			t.Fatalf("wait: %+v, %v", res, err)
		}
		cfg.path, cfg.timeout = "/fill-test/absent", 300*time.Millisecond
		if _, err := run(context.Background(), cfg, io.Discard); err == nil || !strings.Contains(err.Error(), "not readable") {
			t.Fatalf("wait for an absent node: %v", err)
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

func dial(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	cfg := config{servers: []string{addr}, sessionTimeout: 10 * time.Second}
	c, err := connect(context.Background(), cfg, io.Discard, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func assertGone(t *testing.T, addr, p string) {
	t.Helper()
	if ok, _, err := dial(t, addr).Exists(p); err != nil || ok {
		t.Errorf("%s still exists (%v) after the run", p, err)
	}
}

func TestIntegration_ZooKeeper(t *testing.T) {
	s := zkproc.StartZooKeeper(t, zkproc.Options{})
	benchAgainst(t, s.Addr)
}

func TestIntegration_Zkd(t *testing.T) {
	s := zkproc.StartZkd(t, zkproc.Options{})
	benchAgainst(t, s.Addr)
}

// TestIntegration_ZkdToken runs the token workload (zkd's fencing tokens,
// which ZooKeeper has not): every read is a token.
func TestIntegration_ZkdToken(t *testing.T) {
	s := zkproc.StartZkd(t, zkproc.Options{})
	c := dial(t, s.Addr)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, _, err := c.Get("/zookeeper/fencing"); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no fencing key: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cfg, err := parseArgs([]string{"-servers", s.Addr, "-workload", "token", "-clients", "3",
		"-duration", "400ms", "-warmup", "100ms", "-root", "/zkbench-test"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	res, err := run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops == 0 || res.Errors != 0 {
		t.Fatalf("token workload: ops %d, errors %d (last %v)", res.Ops, res.Errors, res.lastErr)
	}
	assertGone(t, s.Addr, "/zkbench-test")
}

// TestIntegration_RawClient runs the create, set and get workloads with
// -client raw against zkd and ZooKeeper: operations and no errors, the
// result says which client, and nothing is left behind.
func TestIntegration_RawClient(t *testing.T) {
	servers := []struct {
		name  string
		start func(testing.TB, zkproc.Options) *zkproc.Server
	}{
		{"zkd", zkproc.StartZkd},
		{"zookeeper", zkproc.StartZooKeeper},
	}
	for _, srv := range servers {
		t.Run("server="+srv.name, func(t *testing.T) {
			s := srv.start(t, zkproc.Options{})
			for _, workload := range rawWorkloads {
				t.Run("workload="+workload, func(t *testing.T) {
					// Two servers in the list: the clients spread over
					// both addresses (here the same server twice).
					cfg, err := parseArgs([]string{"-servers", s.Addr + "," + s.Addr, "-workload", workload, "-client", "raw",
						"-clients", "3", "-duration", "300ms", "-warmup", "100ms", "-size", "100", "-root", "/zkbench-raw"}, io.Discard)
					if err != nil {
						t.Fatal(err)
					}
					res, err := run(context.Background(), cfg, io.Discard)
					if err != nil {
						t.Fatal(err)
					}
					if res.Ops == 0 || res.Errors != 0 || res.Client != "raw" {
						t.Fatalf("ops %d, errors %d (last %v), client %q: want ops, no errors, client raw",
							res.Ops, res.Errors, res.lastErr, res.Client)
					}
					if res.Latency.P50 <= 0 || res.Latency.P50 > res.Latency.Max {
						t.Errorf("latency quantiles out of order: %+v", res.Latency)
					}
					assertGone(t, s.Addr, "/zkbench-raw")
				})
			}
		})
	}
}

// failover runs the set workload while s is killed and restarted: the
// clients must keep going through the outage (go-zk reconnects and resumes
// the session) and the interval lines must show work after the restart.
func failover(t *testing.T, s *zkproc.Server) {
	cfg, err := parseArgs([]string{"-servers", s.Addr, "-workload", "set", "-clients", "3", "-duration", "6s",
		"-warmup", "0s", "-interval", "250ms", "-size", "10", "-root", "/failover"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var progress zkproc.SyncBuffer
	type outcome struct {
		res *result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := run(context.Background(), cfg, &progress)
		done <- outcome{res, err}
	}()
	time.Sleep(time.Second)
	s.Kill()
	time.Sleep(500 * time.Millisecond)
	s.Restart(t)
	out := <-done
	if out.err != nil {
		t.Fatalf("run: %v\n%s", out.err, progress.String())
	}
	t.Logf("ops %d, errors %d, intervals:\n%s", out.res.Ops, out.res.Errors, progress.String())
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	if len(lines) < 15 {
		t.Fatalf("%d interval lines, want about 24:\n%s", len(lines), progress.String())
	}
	var zero, afterRestart int
	for i, l := range lines {
		if strings.Contains(l, "ops/s=0.0 ") {
			zero++
		} else if zero > 0 && i > len(lines)/2 {
			afterRestart++
		}
	}
	if zero == 0 || afterRestart == 0 {
		t.Fatalf("want idle intervals during the outage and busy ones after it:\n%s", progress.String())
	}
	assertGone(t, s.Addr, "/failover")
}

func TestIntegration_ZkdFailover(t *testing.T) {
	failover(t, zkproc.StartZkd(t, zkproc.Options{}))
}

func TestIntegration_ZooKeeperFailover(t *testing.T) {
	failover(t, zkproc.StartZooKeeper(t, zkproc.Options{}))
}
