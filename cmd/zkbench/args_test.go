package main

import (
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	pidRoot := "/zkbench-" + strconv.Itoa(os.Getpid())
	tests := []struct {
		name    string
		args    []string
		check   func(c config) bool
		wantErr string
	}{
		{"defaults", nil, func(c config) bool {
			return slices.Equal(c.servers, []string{"127.0.0.1:2181"}) && c.workload == "set" && c.clients == 8 &&
				c.duration == 10*time.Second && c.warmup == 2*time.Second && c.size == 1024 && c.locks == 1 &&
				c.root == pidRoot && !c.json && c.client == "gozk"
		}, ""},
		{"full", strings.Fields("-servers 127.0.0.1:1,localhost:2, -workload lock -clients 16 -locks 16 -duration 3s -warmup 0s -json -hold 1ms"),
			func(c config) bool {
				return slices.Equal(c.servers, []string{"127.0.0.1:1", "localhost:2"}) && c.workload == "lock" &&
					c.clients == 16 && c.locks == 16 && c.duration == 3*time.Second && c.warmup == 0 && c.json &&
					c.hold == time.Millisecond
			}, ""},
		{"interval", strings.Fields("-interval 250ms"), func(c config) bool { return c.interval == 250*time.Millisecond }, ""},
		{"negative interval", strings.Fields("-interval -1s"), nil, "-interval"},
		{"size zero", strings.Fields("-workload create -size 0"), func(c config) bool { return c.size == 0 }, ""},
		{"fill root", strings.Fields("-workload fill -count 10"), func(c config) bool { return c.root == "/zkbench-fill" && c.count == 10 }, ""},
		{"wait", strings.Fields("-workload wait -path /a/b -timeout 5s"), func(c config) bool { return c.path == "/a/b" && c.timeout == 5*time.Second }, ""},
		{"custom root", strings.Fields("-root /bench/x"), func(c config) bool { return c.root == "/bench/x" }, ""},
		{"sasl session", strings.Fields("-workload session -sasl-user bob -sasl-password pw"),
			func(c config) bool { return c.workload == "session" && c.saslUser == "bob" && c.saslPassword == "pw" }, ""},
		{"rate", strings.Fields("-workload set -rate 250.5"), func(c config) bool { return c.rate == 250.5 }, ""},
		{"fleet", strings.Fields("-workload fleet -clients 100 -procs 4 -paths 1000 -rate 50 -fault kill-leader -fault-after 2s -duration 5s"),
			func(c config) bool {
				return c.procs == 4 && c.paths == 1000 && c.rate == 50 && c.fault == "kill-leader" && c.faultAfter == 2*time.Second
			}, ""},
		{"fleet search", strings.Fields("-workload fleet -rate 10 -fleet-search -search-step 2 -search-p99 3ms"),
			func(c config) bool { return c.fleetSearch && c.searchStep == 2 && c.searchP99 == 3*time.Millisecond }, ""},
		{"fleet fd limit", strings.Fields("-workload fleet -fault fd-limit -fault-after 1s -duration 5s"),
			func(c config) bool { return c.fault == "fd-limit" }, ""},
		{"fleet bad fault", strings.Fields("-workload fleet -fault kill-all"), nil, "-fault"},
		{"fleet fault after the phase", strings.Fields("-workload fleet -fault kill-observer -fault-after 10s -duration 5s"), nil, "-fault-after"},
		{"fleet search without rate", strings.Fields("-workload fleet -fleet-search"), nil, "-fleet-search"},
		{"fleet search with fault", strings.Fields("-workload fleet -rate 5 -fleet-search -fault kill-leader -fault-after 1s"), nil, "do not go together"},
		{"fleet no paths", strings.Fields("-workload fleet -paths 0"), nil, "-paths"},
		{"raw client", strings.Fields("-workload create -client raw"), func(c config) bool { return c.client == "raw" }, ""},
		{"raw client on lock", strings.Fields("-workload lock -client raw"), nil, "-client raw runs -workload create, set, get only"},
		{"raw client on token", strings.Fields("-workload token -client raw"), nil, "-client raw runs"},
		{"raw client open loop", strings.Fields("-workload get -client raw -rate 100"), nil, "closed loops only"},
		{"unknown client", strings.Fields("-client curator"), nil, "-client"},
		{"rate on lock", strings.Fields("-workload lock -rate 10"), nil, "-rate"},
		{"negative rate", strings.Fields("-rate -1"), nil, "-rate"},
		{"sasl on another workload", strings.Fields("-workload get -sasl-user bob"), nil, "-sasl-user applies to -workload session only"},
		{"sessions", strings.Fields("-workload sessions -clients 30000 -source-ips 3 -pids 12,34 -watches 0 -connect-parallel 8"),
			func(c config) bool {
				return c.workload == "sessions" && c.sourceIPs == 3 && slices.Equal(c.pids, []int{12, 34}) && c.watches == 0 && c.parallel == 8
			}, ""},
		{"bad pid", strings.Fields("-workload sessions -pids 12,x"), nil, "-pids"},
		{"negative watches", strings.Fields("-workload sessions -watches -1"), nil, "-watches"},
		{"sessions procs", strings.Fields("-workload sessions -clients 40000 -procs 3 -source-ip-first 7 -reconnect"),
			func(c config) bool { return c.procs == 3 && c.sourceIPFirst == 7 && c.reconnect }, ""},
		{"more procs than sessions", strings.Fields("-workload sessions -clients 2 -procs 3"), nil, "-procs 3"},
		{"procs on another workload", strings.Fields("-workload lock -clients 4 -procs 2"), nil, "-workload sessions and fleet only"},
		{"reconnect on another workload", strings.Fields("-workload get -reconnect"), nil, "-workload sessions only"},
		{"unknown workload", strings.Fields("-workload scan"), nil, "-workload"},
		{"no servers", []string{"-servers", " , "}, nil, "-servers is empty"},
		{"no port", strings.Fields("-servers 127.0.0.1"), nil, "not host:port"},
		{"bad port", strings.Fields("-servers 127.0.0.1:99999"), nil, "bad port"},
		{"zero clients", strings.Fields("-clients 0"), nil, "-clients"},
		{"zero duration", strings.Fields("-duration 0s"), nil, "-duration"},
		{"negative warmup", strings.Fields("-warmup -1s"), nil, "-warmup"},
		{"huge size", strings.Fields("-size 2000000"), nil, "-size"},
		{"more locks than clients", strings.Fields("-workload lock -clients 2 -locks 3"), nil, "-locks"},
		{"zero locks", strings.Fields("-workload lock -locks 0"), nil, "-locks"},
		{"fill count", strings.Fields("-workload fill -count 0"), nil, "-count"},
		{"wait without path", strings.Fields("-workload wait"), nil, "-path"},
		{"wait relative path", strings.Fields("-workload wait -path a/b"), nil, "-path"},
		{"root slash", strings.Fields("-root /"), nil, "-root"},
		{"root zookeeper", strings.Fields("-root /zookeeper/x"), nil, "-root"},
		{"root dotdot", strings.Fields("-root /a/../b"), nil, "-root"},
		{"stray argument", strings.Fields("-clients 2 extra"), nil, "unexpected argument"},
		{"unknown flag", strings.Fields("-nope"), nil, "not defined"},
		{"bad duration", strings.Fields("-duration ten"), nil, "invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseArgs(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseArgs(%q) error = %v, want %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseArgs(%q): %v", tt.args, err)
			}
			if !tt.check(c) {
				t.Errorf("parseArgs(%q) = %+v", tt.args, c)
			}
		})
	}
}

func TestParseArgsHelp(t *testing.T) {
	var out strings.Builder
	_, err := parseArgs([]string{"-h"}, &out)
	if err != errHelp || !strings.Contains(out.String(), "usage: zkbench") {
		t.Fatalf("-h: %v, %q", err, out.String())
	}
}

func TestValidPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/": true, "/a": true, "/a/b-1": true, "": false, "a": false, "/a/": false, "//a": false,
		"/a//b": false, "/./a": false, "/a/..": false,
	} {
		if got := validPath(p); got != want {
			t.Errorf("validPath(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestResultWrite(t *testing.T) {
	r := &result{Workload: "lock", Client: "gozk", Servers: []string{"a:1"}, Clients: 4, Locks: 2, Seconds: 2, Ops: 100, OpsPerSec: 50,
		Latency: latency{P50: 1500, P90: 2000, P99: 3000, P999: 1.5e6, Max: 2e6, Mean: 900}}
	var text strings.Builder
	if err := r.write(&text, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"workload=lock clients=4 locks=2", "servers=a:1 client=gozk\n", "lock ops/s 50.0", "p50=1.50ms", "p999=1.50s", "mean=900µs"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}
	var js strings.Builder
	if err := r.write(&js, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"client":"gozk"`, `"ops_per_sec":50`, `"p99":3000`, `"locks":2`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("JSON output lacks %q: %s", want, js.String())
		}
	}
}
