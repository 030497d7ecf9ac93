package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkd/zkd/jute"
)

func getJSON(t *testing.T, h http.Handler, path string) map[string]any {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("%s: %d %s", path, rec.Code, rec.Header().Get("Content-Type"))
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("%s: %v in %s", path, err, rec.Body.String())
	}
	return m
}

func TestAdminCommands(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/e", Acl: openACL, Flags: jute.ModeEphemeral}, &jute.CreateResponse{})
	c.call(2, jute.OpGetData, &jute.GetDataRequest{Path: "/e", Watch: true}, &jute.GetDataResponse{})
	h := ts.AdminHandler()
	sid := float64(c.id)

	for _, tc := range []struct {
		cmd   string
		check func(m map[string]any) bool
	}{
		{"ruok", func(m map[string]any) bool { return len(m) == 2 }},
		{"monitor", func(m map[string]any) bool {
			return m["znode_count"] == 6.0 && m["ephemerals_count"] == 1.0 && m["watch_count"] == 1.0 && m["server_state"] == "standalone"
		}},
		{"server_stats", func(m map[string]any) bool {
			st := m["server_stats"].(map[string]any)
			return m["node_count"] == 6.0 && st["num_alive_client_connections"] == 1.0 && m["connections"] == nil
		}},
		{"stats", func(m map[string]any) bool { return len(m["connections"].([]any)) == 1 }},
		{"connections", func(m map[string]any) bool {
			cs := m["connections"].([]any)
			return len(cs) == 1 && cs[0].(map[string]any)["session_id"] == sid && cs[0].(map[string]any)["last_operation"] == "GETD"
		}},
		{"watch_summary", func(m map[string]any) bool {
			return m["num_connections"] == 1.0 && m["num_paths"] == 1.0 && m["num_total_watches"] == 1.0
		}},
		{"watches", func(m map[string]any) bool {
			w := m["session_id_to_watched_paths"].(map[string]any)
			return len(w) == 1 && strings.Contains(jsonOf(w), `["/e"]`)
		}},
		{"watches_by_path", func(m map[string]any) bool {
			w := m["path_to_session_ids"].(map[string]any)
			return len(w["/e"].([]any)) == 1 && w["/e"].([]any)[0] == sid
		}},
		{"dump", func(m map[string]any) bool {
			return strings.Contains(jsonOf(m["session_id_to_ephemeral_paths"]), `["/e"]`)
		}},
		{"configuration", func(m map[string]any) bool { return m["tick_time"] == 2000.0 && m["max_session_timeout"] == 40000.0 }},
		{"is_read_only", func(m map[string]any) bool { return m["read_only"] == false }},
		{"dirs", func(m map[string]any) bool { return m["datadir_size"] == 0.0 }},
		{"environment", func(m map[string]any) bool { return m["zookeeper.version"] == ts.fullVersion() }},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			m := getJSON(t, h, "/commands/"+tc.cmd)
			if m["command"] != tc.cmd || m["error"] != nil || !tc.check(m) {
				t.Fatalf("%s answered %s", tc.cmd, jsonOf(m))
			}
		})
	}
	m := getJSON(t, h, "/commands/nosuch")
	if m["error"] != "Unknown command: nosuch" {
		t.Fatalf("unknown command answered %v", m)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/commands", nil))
	if !strings.Contains(rec.Body.String(), `<a href="/commands/ruok">ruok</a>`) {
		t.Fatalf("index: %s", rec.Body.String())
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestMetrics(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/m", Acl: openACL}, &jute.CreateResponse{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(ts.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		if m.GetGauge() != nil {
			got[mf.GetName()] = m.GetGauge().GetValue()
		} else {
			got[mf.GetName()] = m.GetCounter().GetValue()
		}
	}
	for name, want := range map[string]float64{"znode_count": 6, "num_alive_connections": 1, "global_sessions": 1, "outstanding_requests": 0} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	if got["packets_received"] < 2 {
		t.Errorf("packets_received = %v", got["packets_received"])
	}
	srv := httptest.NewServer(ts.MetricsHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"packets_received", "outstanding_requests", "go_goroutines"} {
		if !strings.Contains(string(b), "\n"+name+" ") {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}
