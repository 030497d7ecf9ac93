package console

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server"
	"github.com/zkd/zkd/server/lockview"
)

// api serves the JSON endpoints under /console/api/.
func (c *Console) api() http.Handler {
	routes := map[string]func(*http.Request, *identity) (any, int, error){
		"whoami":   c.whoami,
		"ensemble": c.ensemble,
		"sessions": c.sessions,
		"locks":    c.locks,
		"tree":     c.tree,
		"metrics":  c.metricsAPI,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !readOnly(w, r) {
			return
		}
		name := strings.Trim(strings.TrimPrefix(r.URL.Path, "/console/api/"), "/")
		f, ok := routes[name]
		if !ok {
			writeError(w, http.StatusNotFound, "console: no API "+strconv.Quote(name))
			return
		}
		id, err := c.requestIdentity(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `digest-zk realm="zkd console"`)
			writeError(w, http.StatusUnauthorized, err.Error())
			return
		}
		v, status, err := f(r, id)
		if err != nil {
			writeError(w, status, err.Error())
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, v)
	})
}

// requestIdentity is the identity a request acts as: the one its
// "Authorization: digest user:password" header names (as ZooKeeper 3.9's
// admin server takes it), else the x509 identity of the client
// certificate it presented over HTTPS (verified by the admin server's
// TLS handshake against its trust store), else the configured one, else
// nil.
func (c *Console) requestIdentity(r *http.Request) (*identity, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
			subject, ids, err := c.src.X509Identity(r.TLS.VerifiedChains[0][0])
			if err != nil {
				return nil, fmt.Errorf("console: %w", err)
			}
			return &identity{scheme: "x509", user: subject, ids: ids}, nil
		}
		return c.ident, nil
	}
	scheme, cred, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok {
		return nil, errors.New("console: Authorization must be \"<scheme> <credential>\", e.g. \"digest user:password\"")
	}
	return parseIdentity(c.src, scheme+":"+strings.TrimSpace(cred))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// intParam reads a non-negative integer query parameter, def when absent,
// capped at max.
func intParam(r *http.Request, name string, def, max int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("console: %s=%q is not a non-negative number", name, s)
	}
	return min(n, max), nil
}

// limitParam is the page size: 1 to maxLimit, defaultLimit when absent.
func limitParam(r *http.Request) (int, error) {
	n, err := intParam(r, "limit", defaultLimit, maxLimit)
	if err == nil && n == 0 {
		err = errors.New("console: limit must be at least 1")
	}
	return n, err
}

func hexID(id int64) string { return "0x" + strconv.FormatUint(uint64(id), 16) }

// whoami tells the page which identity it reads as: scheme and user only.
func (c *Console) whoami(_ *http.Request, id *identity) (any, int, error) {
	if id == nil {
		return map[string]any{"identity": nil, "shows_data": false}, 0, nil
	}
	return map[string]any{"identity": map[string]string{"scheme": id.scheme, "user": id.user}, "shows_data": true}, 0, nil
}

// ensembleView is the Ensemble page.
type ensembleView struct {
	Mode      string            `json:"mode"`
	Serving   bool              `json:"serving"`
	Zxid      string            `json:"zxid"`
	Leader    map[string]any    `json:"leader,omitempty"`
	Members   map[string]any    `json:"members,omitempty"`
	Zab       map[string]any    `json:"zab,omitempty"`
	Raft      *raftView         `json:"raft,omitempty"`
	Health    map[string]string `json:"health"`
	Elections []election        `json:"elections"`
	// ElectionsSince is when the console began recording elections (ms
	// since the epoch): durations before it are not known.
	ElectionsSince int64 `json:"elections_since"`
	// Replication is every member's applied zxid, lag and readiness, as
	// the leader knows them (the backend's "replication" command).
	Replication map[string]any `json:"replication,omitempty"`
	Problem     string         `json:"problem,omitempty"`
}

// raftView is this member's raft and disk figures.
type raftView struct {
	Term          uint64  `json:"term"`
	Leader        bool    `json:"leader"`
	LastLogIndex  uint64  `json:"last_log_index"`
	CommitIndex   uint64  `json:"commit_index"`
	AppliedIndex  uint64  `json:"applied_index"`
	Lag           uint64  `json:"apply_lag"`
	LastFsyncMs   float64 `json:"last_fsync_ms"`
	LastCommitMs  float64 `json:"last_commit_ms"`
	DiskBytes     uint64  `json:"disk_bytes"`
	LogEntries    uint64  `json:"log_entries"`
	Snapshots     int     `json:"snapshots"`
	LastSnapshotS float64 `json:"last_snapshot_age_s"`
}

func (c *Console) ensemble(*http.Request, *identity) (any, int, error) {
	v := ensembleView{
		Mode:      c.src.Mode(),
		Serving:   c.src.Serving(),
		Zxid:      hexID(c.src.LastZxid()),
		Health:    map[string]string{},
		Elections: c.metrics.elections(),

		ElectionsSince: c.started.UnixMilli(),
	}
	if m, ok := c.src.AdminCommand("replication"); ok {
		v.Replication = m
	}
	if m, ok := c.src.AdminCommand("leader"); ok {
		v.Leader = m
	}
	if m, ok := c.src.AdminCommand("voting_view"); ok {
		v.Members, _ = m["current_config"].(map[string]any)
	}
	if m, ok := c.src.AdminCommand("zabstate"); ok {
		v.Zab = m
	}
	if rs, ok := c.src.RaftStats(); ok {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		v.Raft = &raftView{
			Term: rs.Term, Leader: rs.Leader, LastLogIndex: rs.LastLogIndex,
			CommitIndex: rs.CommitIndex, AppliedIndex: rs.AppliedIndex,
			Lag:         rs.CommitIndex - min(rs.AppliedIndex, rs.CommitIndex),
			LastFsyncMs: ms(rs.LastFsyncLatency), LastCommitMs: ms(rs.LastCommitLatency),
			DiskBytes: rs.DiskBytes, LogEntries: rs.LogEntries, Snapshots: rs.Snapshots,
			LastSnapshotS: rs.LastSnapshotAge.Seconds(),
		}
	}
	mon := monitorMap(c.src.Monitor())
	for _, k := range []string{"server_state", "avg_fsynctime", "max_fsynctime", "cnt_fsynctime", "quorum_size", "synced_followers", "learners"} {
		if val, ok := mon[k]; ok {
			v.Health[k] = val
		}
	}
	switch {
	case !v.Serving:
		v.Problem = "this member is not in touch with a leader and a quorum: it cannot reach the other members, and refuses clients"
	case v.Mode != "standalone" && v.Leader != nil && v.Leader["leader_id"] == nil:
		v.Problem = "this member knows no leader"
	}
	return v, 0, nil
}

// monitorMap is mntr as a map, without the zk_ prefix.
func monitorMap(kvs []server.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[strings.TrimPrefix(kv.Key, "zk_")] = kv.Value
	}
	return m
}

// sessionView is one row of the Sessions page.
type sessionView struct {
	ID          string `json:"id"`
	sid         int64  // ID as a number, for sorting
	Remote      string `json:"remote"`
	TimeoutMs   int32  `json:"timeout_ms"`
	HeardMsAgo  int64  `json:"heard_ms_ago"`
	Ephemerals  int    `json:"ephemerals"`
	Watches     int    `json:"watches"`
	Established int64  `json:"established"`
	Queued      int64  `json:"queued"`
	LastOp      string `json:"last_op"`
}

// sessionSorts are the Sessions page's sort keys.
var sessionSorts = map[string]func(a, b sessionView) int{
	"id":         func(a, b sessionView) int { return cmp.Compare(uint64(a.sid), uint64(b.sid)) },
	"remote":     func(a, b sessionView) int { return cmp.Compare(a.Remote, b.Remote) },
	"timeout":    func(a, b sessionView) int { return cmp.Compare(a.TimeoutMs, b.TimeoutMs) },
	"heard":      func(a, b sessionView) int { return cmp.Compare(a.HeardMsAgo, b.HeardMsAgo) },
	"ephemerals": func(a, b sessionView) int { return cmp.Compare(a.Ephemerals, b.Ephemerals) },
	"watches":    func(a, b sessionView) int { return cmp.Compare(a.Watches, b.Watches) },
}

// sessions lists the sessions connected to this member, sorted by
// ?sort= (id, remote, timeout, heard, ephemerals, watches; ?order=desc
// reverses), from ?offset=, at most ?limit= of them.
func (c *Console) sessions(r *http.Request, _ *identity) (any, int, error) {
	key := cmp.Or(r.URL.Query().Get("sort"), "id")
	less, ok := sessionSorts[key]
	if !ok {
		return nil, http.StatusBadRequest, fmt.Errorf("console: sort=%q is not one of id, remote, timeout, heard, ephemerals, watches", key)
	}
	order := cmp.Or(r.URL.Query().Get("order"), "asc")
	if order != "asc" && order != "desc" {
		return nil, http.StatusBadRequest, fmt.Errorf("console: order=%q is not asc or desc", order)
	}
	limit, err := limitParam(r)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	offset, err := intParam(r, "offset", 0, 1<<31)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	watches := map[int64]int{}
	for _, sw := range c.src.WatchesBySession() {
		watches[sw.SessionID] += len(sw.Paths)
	}
	t := c.src.Tree()
	now := time.Now()
	rows := []sessionView{}
	for _, ci := range c.src.Conns() {
		if ci.SessionID == 0 {
			continue
		}
		row := sessionView{
			ID: hexID(ci.SessionID), sid: ci.SessionID, Remote: strings.TrimPrefix(ci.Remote, "/"), TimeoutMs: ci.Timeout,
			HeardMsAgo: max(0, now.Sub(ci.LastHeard).Milliseconds()), Watches: watches[ci.SessionID],
			Established: ci.Established.UnixMilli(), Queued: ci.Queued, LastOp: ci.LastOp,
		}
		if t != nil {
			row.Ephemerals = len(t.GetEphemerals(ci.SessionID, ""))
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b sessionView) int {
		c := less(a, b)
		if order == "desc" {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(uint64(a.sid), uint64(b.sid)))
	})
	total := len(rows)
	rows = rows[min(offset, total):min(offset+limit, total)]
	return map[string]any{
		"sessions": rows, "total": total, "offset": offset, "limit": limit,
		"global_sessions": monitorMap(c.src.Monitor())["global_sessions"],
	}, 0, nil
}

// maxLocks bounds the lock paths one answer lists.
const maxLocks = 500

// locks is the lock view at or under ?path=, at most maxLocks lock paths.
// With an identity, each holder's signed fencing token comes too
// ("tokens", by lock node path, base64), where that identity may read it:
// the token is data, which the console shows to no one else.
func (c *Console) locks(r *http.Request, id *identity) (any, int, error) {
	prefix := r.URL.Query().Get("path")
	if prefix != "" && !strings.HasPrefix(prefix, "/") {
		return nil, http.StatusBadRequest, fmt.Errorf("console: path=%q does not start with /", prefix)
	}
	locks := c.src.Locks(prefix)
	if locks == nil {
		locks = []lockview.Lock{}
	}
	total := len(locks)
	locks = locks[:min(total, maxLocks)]
	out := map[string]any{"locks": locks, "total": total, "now": time.Now().UnixMilli()}
	if id != nil {
		tokens := map[string]string{}
		for _, l := range locks {
			for _, n := range l.Holders {
				node := strings.TrimSuffix(l.Path, "/") + "/" + n.Name
				if tok, err := c.src.FencingToken(node, id.ids); err == nil {
					tokens[node] = base64.StdEncoding.EncodeToString(tok)
				}
			}
		}
		out["tokens"] = tokens
	}
	return out, 0, nil
}

// statView is a Stat with zxids and the owner in hex, as zkCli prints them.
type statView struct {
	Czxid          string `json:"czxid"`
	Mzxid          string `json:"mzxid"`
	Pzxid          string `json:"pzxid"`
	Ctime          int64  `json:"ctime"`
	Mtime          int64  `json:"mtime"`
	Version        int32  `json:"version"`
	Cversion       int32  `json:"cversion"`
	Aversion       int32  `json:"aversion"`
	EphemeralOwner string `json:"ephemeral_owner"`
	DataLength     int32  `json:"data_length"`
	NumChildren    int32  `json:"num_children"`
}

func newStatView(st jute.Stat) statView {
	return statView{
		Czxid: hexID(st.Czxid), Mzxid: hexID(st.Mzxid), Pzxid: hexID(st.Pzxid),
		Ctime: st.Ctime, Mtime: st.Mtime, Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion,
		EphemeralOwner: hexID(st.EphemeralOwner), DataLength: st.DataLength, NumChildren: st.NumChildren,
	}
}

// childView is one child in a tree listing.
type childView struct {
	Name        string `json:"name"`
	NumChildren int32  `json:"num_children"`
	DataLength  int32  `json:"data_length"`
	Ephemeral   bool   `json:"ephemeral"`
}

// aclView is one ACL entry, digest hashes hidden.
type aclView struct {
	Scheme string   `json:"scheme"`
	ID     string   `json:"id"`
	Perms  []string `json:"perms"`
}

// nodeView is the Tree page for one znode.
type nodeView struct {
	Path      string      `json:"path"`
	Stat      statView    `json:"stat"`
	Children  []childView `json:"children"`
	Matched   int         `json:"matched"`
	More      bool        `json:"more"`
	NextAfter string      `json:"next_after,omitempty"`
	// Data is base64, present only when the identity may read it;
	// DataHidden says why not otherwise.
	Data          *string   `json:"data,omitempty"`
	DataTruncated bool      `json:"data_truncated,omitempty"`
	DataHidden    string    `json:"data_hidden,omitempty"`
	ACL           []aclView `json:"acl,omitempty"`
	ACLHidden     string    `json:"acl_hidden,omitempty"`
}

// tree shows one znode: ?path= (default /), its children whose names
// start with ?prefix= after ?after=, at most ?limit= of them, and its
// data and ACL when the identity may read them.
func (c *Console) tree(r *http.Request, id *identity) (any, int, error) {
	q := r.URL.Query()
	path := cmp.Or(q.Get("path"), "/")
	if err := checkPath(path); err != nil {
		return nil, http.StatusBadRequest, err
	}
	limit, err := limitParam(r)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	t := c.src.Tree()
	if t == nil {
		return nil, http.StatusServiceUnavailable, errors.New("console: this member has no tree yet")
	}
	page, st, err := t.ChildrenPage(path, q.Get("prefix"), q.Get("after"), limit)
	if errors.Is(err, datatree.ErrNoNode) {
		return nil, http.StatusNotFound, fmt.Errorf("console: no znode %s", path)
	}
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("console: %w", err)
	}
	v := nodeView{Path: path, Stat: newStatView(st), Children: make([]childView, 0, len(page.Children)),
		Matched: page.Matched, More: page.More}
	for _, ch := range page.Children {
		v.Children = append(v.Children, childView{Name: ch.Name, NumChildren: ch.Stat.NumChildren,
			DataLength: ch.Stat.DataLength, Ephemeral: ch.Stat.EphemeralOwner != 0})
	}
	if page.More && len(page.Children) > 0 {
		v.NextAfter = page.Children[len(page.Children)-1].Name
	}
	c.fillData(&v, t, path, id)
	return v, 0, nil
}

// fillData adds the data and ACL of path that id may read, by the
// server's own checks: GetData needs READ, GetACL READ or ADMIN.
func (c *Console) fillData(v *nodeView, t *datatree.Tree, path string, id *identity) {
	if id == nil {
		v.DataHidden = "no console identity is configured (zkd.console.identity): data is not shown"
		v.ACLHidden = v.DataHidden
		return
	}
	data, _, err := t.GetData(path, id.ids, nil)
	switch {
	case err == nil:
		v.DataTruncated = len(data) > maxData
		s := base64.StdEncoding.EncodeToString(data[:min(len(data), maxData)])
		v.Data = &s
	case errors.Is(err, datatree.ErrNoAuth):
		v.DataHidden = "the console's identity may not read this znode (no READ permission)"
	default:
		v.DataHidden = err.Error()
	}
	acl, _, err := t.GetACL(path, id.ids)
	switch {
	case err == nil:
		v.ACL = make([]aclView, 0, len(acl))
		for _, a := range acl {
			v.ACL = append(v.ACL, newACLView(a))
		}
	case errors.Is(err, datatree.ErrNoAuth):
		v.ACLHidden = "the console's identity may not read this ACL (no READ or ADMIN permission)"
	default:
		v.ACLHidden = err.Error()
	}
}

// newACLView shows a, with the hash of a digest id replaced by "x" even
// for an identity with ADMIN: it is a password's equivalent.
func newACLView(a jute.ACL) aclView {
	idv := a.Id.Id
	if a.Id.Scheme == "digest" {
		user, _, _ := strings.Cut(idv, ":")
		idv = user + ":x"
	}
	var perms []string
	for _, p := range []struct {
		bit  int32
		name string
	}{{jute.PermRead, "read"}, {jute.PermWrite, "write"}, {jute.PermCreate, "create"}, {jute.PermDelete, "delete"}, {jute.PermAdmin, "admin"}} {
		if a.Perms&p.bit != 0 {
			perms = append(perms, p.name)
		}
	}
	return aclView{Scheme: a.Id.Scheme, ID: idv, Perms: perms}
}

// checkPath refuses paths that are not absolute znode paths.
func checkPath(p string) error {
	if p == "/" {
		return nil
	}
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("console: path=%q is not a znode path (absolute, no empty names, no trailing /)", p)
	}
	return nil
}
