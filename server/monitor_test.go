package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab"
)

// mntrMap returns mntr's lines as a map.
func mntrMap(t *testing.T, addr string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(fourLetter(t, addr, "mntr"), "\n"), "\n") {
		k, v, _ := strings.Cut(line, "\t")
		m[k] = v
	}
	return m
}

// TestMonitorFigures checks the figures the server measures itself, as
// ZooKeeper measures them, and that srst clears the counters and
// summaries.
func TestMonitorFigures(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/app", Data: []byte("abc"), Acl: openACL}, &jute.CreateResponse{})
	c.call(2, jute.OpExists, &jute.ExistsRequest{Path: "/app"}, &jute.ExistsResponse{})
	c.call(3, jute.OpGetData, &jute.GetDataRequest{Path: "/app"}, &jute.GetDataResponse{})
	c.call(4, jute.OpGetChildren, &jute.GetChildrenRequest{Path: "/"}, &jute.GetChildrenResponse{})
	gone := dialRaw(t, ts.addr)
	gone.session()
	gone.nc.Close()
	waitFor(t, "the dropped connection counted", func() bool { return mntrMap(t, ts.addr)["zk_connection_drop_count"] == "1" })
	m := mntrMap(t, ts.addr)
	for _, tc := range []struct{ key, want string }{
		// exists: 4 + 0 + 68; getData: 4 + 3 + 68; the root has no namespace.
		{"zk_cnt_app_read_per_namespace", "2"},
		{"zk_sum_app_read_per_namespace", strconv.Itoa(72 + 75)},
		{"zk_min_client_response_size", "24"}, // create's: the 16-byte header and "/app"
		{"zk_local_sessions", "0"},
		{"zk_cnt_updatelatency", "1"},
		{"zk_cnt_readlatency", "3"},
	} {
		if m[tc.key] != tc.want {
			t.Errorf("%s = %q, want %q", tc.key, m[tc.key], tc.want)
		}
	}
	if m["zk_connection_request_count"] != "2" {
		t.Errorf("zk_connection_request_count = %q, want 2 (two sessions; as in ZooKeeper, the mntr connection is not counted)", m["zk_connection_request_count"])
	}
	if n, _ := strconv.Atoi(m["zk_response_bytes"]); n < 4*20 {
		t.Errorf("zk_response_bytes = %q, want at least 4 replies of 20 bytes", m["zk_response_bytes"])
	}
	fourLetter(t, ts.addr, "srst")
	m = mntrMap(t, ts.addr)
	for k, want := range map[string]string{
		"zk_cnt_readlatency": "0", "zk_cnt_updatelatency": "0", "zk_connection_drop_count": "0",
		"zk_bytes_received_count": "4", // mntr's own word, as ZooKeeper counts it
	} {
		if m[k] != want {
			t.Errorf("after srst %s = %q, want %s", k, m[k], want)
		}
	}
	if m["zk_min_client_response_size"] != "-1" {
		t.Errorf("after srst zk_min_client_response_size = %q, want -1", m["zk_min_client_response_size"])
	}
	if _, ok := m["zk_cnt_app_read_per_namespace"]; ok {
		t.Error("after srst the namespace figures remain")
	}
}

// TestObserverCounters: zab's DigestMismatch is ZooKeeper's
// digest_mismatches_count, and LeadershipHandedOff zkd's
// leader_slow_disk_handoffs, in mntr and on /metrics.
func TestObserverCounters(t *testing.T) {
	tests := []struct {
		name string
		fire func(zab.Observer)
	}{
		{"digest_mismatches_count", func(o zab.Observer) { o.DigestMismatch() }},
		{"leader_slow_disk_handoffs", func(o zab.Observer) { o.LeadershipHandedOff() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewZKMetrics()
			count := func() string {
				for _, l := range m.reg.Lines() {
					if l.Key == "zk_"+tt.name {
						return l.Value
					}
				}
				return "missing"
			}
			if got := count(); got != "0" {
				t.Fatalf("zk_%s = %s before any event, want 0", tt.name, got)
			}
			tt.fire(m.Observer())
			if got := count(); got != "1" {
				t.Fatalf("zk_%s = %s after one event, want 1", tt.name, got)
			}
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(m.reg)
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() == tt.name {
					if v := mf.GetMetric()[0].GetCounter().GetValue(); v != 1 {
						t.Fatalf("/metrics %s = %v, want 1", tt.name, v)
					}
					return
				}
			}
			t.Fatalf("/metrics has no %s", tt.name)
		})
	}
}
