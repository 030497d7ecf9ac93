package server

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/zkd/zkd/datatree"
)

// AdminCommander is an optional Backend extension answering admin commands
// the server cannot (leader, observers, voting_view, zabstate,
// last_snapshot, hash, initial_configuration, system_properties). It
// returns the command's fields and whether it knows the command.
type AdminCommander interface {
	AdminCommand(name string) (map[string]any, bool)
}

// adminCommands are the commands the server answers itself, each returning
// its JSON fields in ZooKeeper's order.
func (s *Server) adminCommands() map[string]func() []field {
	return map[string]func() []field{
		"ruok":         func() []field { return nil },
		"stats":        func() []field { return s.adminStats(true) },
		"server_stats": func() []field { return s.adminStats(false) },
		"monitor":      s.adminMonitor,
		"connections":  func() []field { return []field{{"connections", s.adminConns(false)}, {"secure_connections", []any{}}} },
		"connection_stat_reset": func() []field {
			s.ResetConnStats()
			return nil
		},
		"stat_reset": func() []field {
			s.ResetStats()
			return nil
		},
		"configuration": s.adminConf,
		"environment": func() []field {
			var out []field
			for _, kv := range s.Environment() {
				out = append(out, field{kv.Key, kv.Value})
			}
			return out
		},
		"dirs": func() []field {
			d, l := s.Dirs()
			return []field{{"datadir_size", d}, {"logdir_size", l}}
		},
		"is_read_only": func() []field { return []field{{"read_only", s.b.Mode() == "read-only"}} },
		"watch_summary": func() []field {
			w := s.WatchSummary()
			return []field{{"num_connections", w.Connections}, {"num_paths", w.Paths}, {"num_total_watches", w.Watches}}
		},
		"watches": func() []field {
			m := orderedMap{}
			for _, e := range s.WatchesBySession() {
				m = append(m, field{strconv.FormatInt(e.SessionID, 10), e.Paths})
			}
			return []field{{"session_id_to_watched_paths", m}}
		},
		"watches_by_path": func() []field {
			m := orderedMap{}
			for _, e := range s.WatchesByPath() {
				m = append(m, field{e.Path, e.Sessions})
			}
			return []field{{"path_to_session_ids", m}}
		},
		// locks is zkd's lock view (locks.go); the handler passes its
		// ?path= filter.
		"locks": func() []field { return s.adminLocks("") },
		// fencing is zkd's fencing-token public key (fencing.go).
		"fencing": s.adminFencing,
		"dump": func() []field {
			d := s.Dump()
			exp := orderedMap{}
			for _, set := range d.Sessions {
				var ids []int64
				for _, m := range set.Members {
					if id, err := strconv.ParseUint(strings.TrimPrefix(m, "0x"), 16, 64); err == nil {
						ids = append(ids, int64(id))
					}
				}
				exp = append(exp, field{strconv.FormatInt(set.Deadline.UnixMilli(), 10), ids})
			}
			eph := orderedMap{}
			for _, e := range d.Ephemerals {
				eph = append(eph, field{strconv.FormatInt(e.SessionID, 10), e.Paths})
			}
			return []field{{"expiry_time_to_session_ids", exp}, {"session_id_to_ephemeral_paths", eph}}
		},
	}
}

// AdminHandler serves ZooKeeper's AdminServer commands as JSON under
// /commands/<name>, and their index at /commands. Mount it on the admin
// HTTP server (admin.serverPort).
func (s *Server) AdminHandler() http.Handler {
	cmds := s.adminCommands()
	mux := http.NewServeMux()
	index := func(w http.ResponseWriter, r *http.Request) {
		names := make([]string, 0, len(cmds))
		for n := range cmds {
			names = append(names, n)
		}
		slices.Sort(names)
		w.Header().Set("Content-Type", "text/html")
		for _, n := range names {
			fmt.Fprintf(w, "<a href=\"/commands/%s\">%s</a>\n<br/>\n", html.EscapeString(n), html.EscapeString(n))
		}
	}
	mux.HandleFunc("/commands", index)
	mux.HandleFunc("/commands/", func(w http.ResponseWriter, r *http.Request) {
		name := strings.Trim(strings.TrimPrefix(r.URL.Path, "/commands/"), "/")
		if name == "" {
			index(w, r)
			return
		}
		var out orderedMap
		f, ok := cmds[name]
		if name == "locks" {
			f = func() []field { return s.adminLocks(r.URL.Query().Get("path")) }
		}
		if ok {
			out = append(f(), field{"command", name}, field{"error", nil})
		} else if ac, ok := s.b.(AdminCommander); ok {
			if m, ok := ac.AdminCommand(name); ok {
				keys := make([]string, 0, len(m))
				for k := range m {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					out = append(out, field{k, m[k]})
				}
				out = append(out, field{"command", name}, field{"error", nil})
			}
		}
		if out == nil {
			out = orderedMap{{"command", name}, {"error", "Unknown command: " + name}}
		}
		w.Header().Set("Content-Type", "application/json")
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Write(append(b, '\n'))
	})
	return mux
}

// adminStats backs stats (with the connections) and server_stats.
func (s *Server) adminStats(withConns bool) []field {
	st := s.Stats()
	d, l := s.Dirs()
	out := []field{
		{"version", st.Version},
		{"read_only", st.Mode == "read-only"},
		{"server_stats", orderedMap{
			{"packets_sent", st.PacketsSent},
			{"packets_received", st.PacketsReceived},
			{"data_dir_size", d},
			{"log_dir_size", l},
			{"server_state", st.Mode},
			{"last_processed_zxid", st.Zxid},
			{"outstanding_requests", st.Outstanding},
			{"avg_latency", json.Number(javaDouble(st.AvgLatency))},
			{"max_latency", st.MaxLatency},
			{"min_latency", st.MinLatency},
			{"num_alive_client_connections", st.Connections},
			{"auth_failed_count", s.stats.authFailed.Load()},
			{"uptime", s.uptimeMs()},
		}},
		{"node_count", st.NodeCount},
	}
	if withConns {
		out = append(out, field{"connections", s.adminConns(true)}, field{"secure_connections", []any{}})
	}
	return out
}

// adminConns lists connections as the connections command does; brief
// leaves out the session fields, as stats does.
func (s *Server) adminConns(brief bool) []any {
	out := []any{}
	for _, ci := range s.Conns() {
		m := orderedMap{
			{"remote_socket_address", strings.TrimPrefix(ci.Remote, "/")},
			{"interest_ops", ci.Interest},
			{"outstanding_requests", ci.Queued},
			{"packets_received", ci.Received},
			{"packets_sent", ci.Sent},
		}
		if !brief && ci.SessionID != 0 {
			m = append(m,
				field{"session_id", ci.SessionID},
				field{"last_operation", ci.LastOp},
				field{"established", ci.Established.UnixMilli()},
				field{"session_timeout", ci.Timeout},
				field{"last_cxid", ci.LastCxid},
				field{"last_zxid", ci.LastZxid},
				field{"last_response_time", ci.LastResponse},
				field{"last_latency", ci.LastLatency},
				field{"min_latency", ci.MinLatency},
				field{"avg_latency", ci.AvgLatency},
				field{"max_latency", ci.MaxLatency},
			)
		}
		out = append(out, m)
	}
	return out
}

// adminMonitor is mntr without the zk_ prefix, numbers as JSON numbers.
func (s *Server) adminMonitor() []field {
	var out []field
	for _, kv := range s.Monitor() {
		var v any = kv.Value
		if _, err := strconv.ParseFloat(kv.Value, 64); err == nil {
			v = json.Number(kv.Value)
		}
		out = append(out, field{strings.TrimPrefix(kv.Key, "zk_"), v})
	}
	return out
}

// adminConf is the configuration command.
func (s *Server) adminConf() []field {
	conf := map[string]string{}
	for _, kv := range s.Conf() {
		conf[kv.Key] = kv.Value
	}
	num := func(k string) json.Number { return json.Number(conf[k]) }
	return []field{
		{"client_port", num("clientPort")},
		{"data_dir", conf["dataDir"]},
		{"data_log_dir", conf["dataLogDir"]},
		{"tick_time", num("tickTime")},
		{"max_client_cnxns", num("maxClientCnxns")},
		{"min_session_timeout", num("minSessionTimeout")},
		{"max_session_timeout", num("maxSessionTimeout")},
		{"server_id", num("serverId")},
		{"client_port_listen_backlog", num("clientPortListenBacklog")},
	}
}

// field is one member of a JSON object; orderedMap keeps members in order,
// as ZooKeeper's admin output does.
type field struct {
	Key   string
	Value any
}

type orderedMap []field

// MarshalJSON writes the members in order.
func (m orderedMap) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// Tree returns the applied tree this member serves reads from (nil before
// it has one). Callers must treat it as read-only.
func (s *Server) Tree() *datatree.Tree { return s.b.Tree() }

// Mode names the member's role: "standalone", "leader", "follower",
// "observer" or "read-only".
func (s *Server) Mode() string { return s.b.Mode() }

// LastZxid returns the zxid of the last entry applied on this member.
func (s *Server) LastZxid() int64 { return s.b.LastZxid() }

// AdminCommand answers the admin commands the backend answers (leader,
// voting_view, zabstate, last_snapshot, …; see AdminCommander); ok is
// false when it does not know name.
func (s *Server) AdminCommand(name string) (map[string]any, bool) {
	if ac, ok := s.b.(AdminCommander); ok {
		return ac.AdminCommand(name)
	}
	return nil, false
}

// RaftStats returns the backend's raft and Pebble figures; ok is false
// when the backend has none.
func (s *Server) RaftStats() (RaftStats, bool) {
	if r, ok := s.b.(RaftStatsReporter); ok {
		return r.RaftStats(), true
	}
	return RaftStats{}, false
}

// Serving reports whether this member serves clients now: always for a
// standalone member, for an ensemble member while it is in touch with a
// leader and a quorum (see Availability).
func (s *Server) Serving() bool { return s.serving() }
