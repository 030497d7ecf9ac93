package diff

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkd/zkd/compat/zkwire"
	"github.com/zkd/zkd/jute"
)

// Digest returns the digest scheme's id for "user:password":
// user:base64(sha1("user:password")).
func Digest(userPass string) string {
	user, _, _ := strings.Cut(userPass, ":")
	sum := sha1.Sum([]byte(userPass))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// Target is one server scripts run against. Each run gets a fresh root
// znode /diff<N> on it, so one server serves many runs.
type Target struct {
	// Name labels the server in reports ("zkd", "zookeeper").
	Name string
	// Addr is the server's client address.
	Addr string

	runs atomic.Int64
}

// Trace is the normalized outcome of one run: one line per step, and the
// watch events each session received, in order. Absolute zxids, times,
// session ids and the run's root are mapped away (see the package doc), so
// two traces of the same script compare equal exactly when the servers
// behaved alike.
type Trace struct {
	// Steps holds one line per script step.
	Steps []string
	// Events maps a session label ("S<slot>.<generation>") to its events.
	Events map[string][]string
	// Sessions lists the session labels in the order they were opened.
	Sessions []string
}

// String renders the trace: numbered step outcomes, then each session's
// events.
func (t *Trace) String() string {
	var b strings.Builder
	for i, s := range t.Steps {
		fmt.Fprintf(&b, "  %3d  %s\n", i, s)
	}
	for _, l := range t.Sessions {
		fmt.Fprintf(&b, "  events %s: %s\n", l, strings.Join(t.Events[l], "; "))
	}
	return b.String()
}

// slot is one session slot during a run.
type slot struct {
	c     *zkwire.Client
	label string
	gen   int
}

// runner holds a run's state and its normalization maps.
type runner struct {
	t     *Target
	root  string
	zx    map[int64]int
	sess  map[int64]string
	slots []slot
	tr    *Trace
}

// Run executes script s on t and returns its normalized trace. An error
// means the run could not be carried out (the server is unreachable), not
// that the server misbehaved.
func (t *Target) Run(s Script) (*Trace, error) {
	root := fmt.Sprintf("/diff%d", t.runs.Add(1))
	setup, err := zkwire.Dial(t.Addr, zkwire.Options{Timeout: 30 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("diff: %s: %w", t.Name, err)
	}
	_, err = setup.Call(jute.OpCreate, &jute.CreateRequest{Path: root, Acl: worldAll}, nil)
	setup.Close()
	if err != nil {
		return nil, fmt.Errorf("diff: %s: create %s: %w", t.Name, root, err)
	}
	r := &runner{t: t, root: root, zx: map[int64]int{}, sess: map[int64]string{},
		slots: make([]slot, s.Sessions), tr: &Trace{Events: map[string][]string{}}}
	defer func() {
		for i := range r.slots {
			if c := r.slots[i].c; c != nil {
				c.Close()
			}
		}
	}()
	for i := range r.slots {
		if err := r.open(i); err != nil {
			return nil, err
		}
	}
	// The last zxid before the script becomes z1, so that a step that
	// answers with the previous zxid and one that answers with a fresh
	// one differ even at the start of a script.
	hdr, err := r.slots[0].c.Call(jute.OpExists, &jute.ExistsRequest{Path: "/"}, &jute.ExistsResponse{})
	if err != nil {
		return nil, fmt.Errorf("diff: %s: baseline: %w", t.Name, err)
	}
	r.zxid(hdr.Zxid)
	for _, op := range s.Ops {
		r.tr.Steps = append(r.tr.Steps, r.step(op))
		r.drain()
	}
	for i := range r.slots {
		r.settle(i)
	}
	return r.tr, nil
}

var worldAll = []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}

func (r *runner) open(i int) error {
	c, err := zkwire.Dial(r.t.Addr, zkwire.Options{Timeout: 30 * time.Second})
	if err != nil {
		return fmt.Errorf("diff: %s: open session: %w", r.t.Name, err)
	}
	if c.SessionID == 0 {
		return fmt.Errorf("diff: %s: session refused", r.t.Name)
	}
	r.slots[i].gen++
	r.slots[i].c = c
	r.slots[i].label = fmt.Sprintf("S%d.%d", i, r.slots[i].gen)
	r.sess[c.SessionID] = r.slots[i].label
	r.tr.Sessions = append(r.tr.Sessions, r.slots[i].label)
	return nil
}

// settle makes sure every event due to slot i has arrived (a round trip on
// the session: events are queued before later replies), drains them and
// forgets the slot's client when it is gone.
func (r *runner) settle(i int) {
	c := r.slots[i].c
	if c == nil {
		return
	}
	c.Call(jute.OpExists, &jute.ExistsRequest{Path: "/"}, &jute.ExistsResponse{})
	r.drain()
}

// drain moves the events that have arrived into the trace.
func (r *runner) drain() {
	for i := range r.slots {
		c := r.slots[i].c
		if c == nil {
			continue
		}
		for done := false; !done; {
			select {
			case ev := <-c.Events():
				r.tr.Events[r.slots[i].label] = append(r.tr.Events[r.slots[i].label],
					fmt.Sprintf("%s state=%d %s", eventName(ev.Type), ev.State, r.path(ev.Path)))
			default:
				done = true
			}
		}
	}
}

func eventName(t int32) string {
	switch t {
	case jute.EventNone:
		return "None"
	case jute.EventNodeCreated:
		return "NodeCreated"
	case jute.EventNodeDeleted:
		return "NodeDeleted"
	case jute.EventNodeDataChanged:
		return "NodeDataChanged"
	case jute.EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case jute.EventDataWatchRemoved:
		return "DataWatchRemoved"
	case jute.EventChildWatchRemoved:
		return "ChildWatchRemoved"
	case jute.EventPersistentWatchRemoved:
		return "PersistentWatchRemoved"
	}
	return fmt.Sprintf("event(%d)", t)
}

// abs turns a script path into an absolute one under the run's root.
func (r *runner) abs(p string) string {
	if sp, ok := specialPaths[p]; ok {
		if sp.absolute {
			return sp.path
		}
		return r.root + sp.path
	}
	if p == "" {
		return r.root
	}
	return r.root + "/" + p
}

// path maps an absolute path back to the /R form.
func (r *runner) path(p string) string {
	if p == r.root {
		return "/R"
	}
	if rest, ok := strings.CutPrefix(p, r.root+"/"); ok {
		return "/R/" + rest
	}
	return p
}

// zxid maps a zxid to its order of first appearance in the run.
func (r *runner) zxid(z int64) string {
	if z == 0 || z == -1 {
		return fmt.Sprint(z)
	}
	n, ok := r.zx[z]
	if !ok {
		n = len(r.zx) + 1
		r.zx[z] = n
	}
	return fmt.Sprintf("z%d", n)
}

func (r *runner) owner(id int64) string {
	if id == 0 {
		return "0"
	}
	if l, ok := r.sess[id]; ok {
		return l
	}
	return fmt.Sprintf("unknown(%#x)", id)
}

func (r *runner) stat(s *jute.Stat) string {
	// Absolute times differ between servers and two writes may share a
	// millisecond, so only the rules ZooKeeper keeps are checked: mtime
	// equals ctime until the data changes, and never precedes it.
	times := "times-ok"
	switch {
	case s.Ctime <= 0:
		times = fmt.Sprintf("ctime=%d", s.Ctime)
	case s.Mzxid == s.Czxid && s.Mtime != s.Ctime:
		times = "unchanged-but-mtime!=ctime"
	case s.Mtime < s.Ctime:
		times = "mtime<ctime"
	}
	return fmt.Sprintf("{czxid=%s mzxid=%s pzxid=%s %s version=%d cversion=%d aversion=%d owner=%s dataLength=%d numChildren=%d}",
		r.zxid(s.Czxid), r.zxid(s.Mzxid), r.zxid(s.Pzxid), times, s.Version, s.Cversion, s.Aversion,
		r.owner(s.EphemeralOwner), s.DataLength, s.NumChildren)
}

// resp renders a response record.
func (r *runner) resp(rec jute.Record) string {
	switch v := rec.(type) {
	case nil:
		return ""
	case *jute.CreateResponse:
		return r.path(v.Path)
	case *jute.Create2Response:
		return r.path(v.Path) + " " + r.stat(&v.Stat)
	case *jute.ExistsResponse:
		return r.stat(&v.Stat)
	case *jute.GetDataResponse:
		return fmt.Sprintf("data=%s %s", shortData(v.Data), r.stat(&v.Stat))
	case *jute.SetDataResponse:
		return r.stat(&v.Stat)
	case *jute.SetACLResponse:
		return r.stat(&v.Stat)
	case *jute.GetACLResponse:
		// ZooKeeper expands an auth ACL into the session's ids in hash
		// order, whatever order they were added in: compare ACL lists
		// sorted.
		acl := slices.Clone(v.Acl)
		slices.SortFunc(acl, func(a, b jute.ACL) int {
			return strings.Compare(aclString([]jute.ACL{a}), aclString([]jute.ACL{b}))
		})
		return aclString(acl) + " " + r.stat(&v.Stat)
	case *jute.GetChildrenResponse:
		return r.children(v.Children)
	case *jute.GetChildren2Response:
		return r.children(v.Children) + " " + r.stat(&v.Stat)
	case *jute.SyncResponse:
		return r.path(v.Path)
	case *jute.GetEphemeralsResponse:
		ps := make([]string, len(v.Ephemerals))
		for i, p := range v.Ephemerals {
			ps[i] = r.path(p)
		}
		slices.Sort(ps)
		return "[" + strings.Join(ps, " ") + "]"
	case *jute.GetAllChildrenNumberResponse:
		return fmt.Sprint(v.TotalNumber)
	case *jute.WhoAmIResponse:
		// Sorted: ZooKeeper keeps a session's identities in a hash set.
		ids := make([]string, len(v.ClientInfo))
		for i, c := range v.ClientInfo {
			ids[i] = c.AuthScheme + ":" + c.User
		}
		slices.Sort(ids)
		return "[" + strings.Join(ids, " ") + "]"
	case *jute.ErrorResponse:
		return fmt.Sprintf("err=%d", v.Err)
	case *jute.MultiResponse:
		parts := make([]string, len(v.Results))
		for i, res := range v.Results {
			s := fmt.Sprintf("%s", jute.OpName(res.Type))
			if res.Err != 0 {
				s += fmt.Sprintf(" %s", codeName(res.Err))
			}
			if body := r.resp(res.Resp); body != "" && res.Type != jute.OpError {
				s += " " + body
			}
			parts[i] = s
		}
		return "[" + strings.Join(parts, "; ") + "]"
	}
	return fmt.Sprintf("%T %+v", rec, rec)
}

// shortData quotes data, abbreviating long runs of one byte.
func shortData(b []byte) string {
	if len(b) > 16 && strings.Count(string(b), string(b[:1])) == len(b) {
		return fmt.Sprintf("%q*%d", b[:1], len(b))
	}
	return fmt.Sprintf("%q", b)
}

func (r *runner) children(c []string) string {
	c = slices.Clone(c)
	slices.Sort(c)
	return "[" + strings.Join(c, " ") + "]"
}

func codeName(c jute.Code) string {
	if c == 0 {
		return "OK"
	}
	return fmt.Sprintf("%d(%s)", int32(c), c.Error())
}

// request builds the request record and opcode for a step.
func (r *runner) request(op Op) (int32, jute.Record) {
	p := r.abs(op.Path)
	switch op.Kind {
	case KCreate:
		if op.Code == jute.OpCreateTTL {
			return op.Code, &jute.CreateTTLRequest{Path: p, Data: []byte(op.Data), Acl: op.ACL, Flags: op.Mode, Ttl: op.TTL}
		}
		return op.Code, &jute.CreateRequest{Path: p, Data: []byte(op.Data), Acl: op.ACL, Flags: op.Mode}
	case KDelete:
		return jute.OpDelete, &jute.DeleteRequest{Path: p, Version: op.Version}
	case "check":
		return jute.OpCheck, &jute.CheckVersionRequest{Path: p, Version: op.Version}
	case KSetData:
		return jute.OpSetData, &jute.SetDataRequest{Path: p, Data: []byte(op.Data), Version: op.Version}
	case KSetACL:
		return jute.OpSetACL, &jute.SetACLRequest{Path: p, Acl: op.ACL, Version: op.Version}
	case KExists:
		return jute.OpExists, &jute.ExistsRequest{Path: p, Watch: op.Watch}
	case KGetData:
		return jute.OpGetData, &jute.GetDataRequest{Path: p, Watch: op.Watch}
	case KGetChildren:
		return jute.OpGetChildren, &jute.GetChildrenRequest{Path: p, Watch: op.Watch}
	case KGetChildren2:
		return jute.OpGetChildren2, &jute.GetChildren2Request{Path: p, Watch: op.Watch}
	case KGetACL:
		return jute.OpGetACL, &jute.GetACLRequest{Path: p}
	case KSync:
		return jute.OpSync, &jute.SyncRequest{Path: p}
	case KAddWatch:
		return jute.OpAddWatch, &jute.AddWatchRequest{Path: p, Mode: op.Mode}
	case KCheckWatches:
		return jute.OpCheckWatches, &jute.CheckWatchesRequest{Path: p, Type: op.Mode}
	case KRemoveWatches:
		return jute.OpRemoveWatches, &jute.RemoveWatchesRequest{Path: p, Type: op.Mode}
	case KGetEphemerals:
		return jute.OpGetEphemerals, &jute.GetEphemeralsRequest{PrefixPath: p}
	case KAllChildren:
		return jute.OpGetAllChildrenNumber, &jute.GetAllChildrenNumberRequest{Path: p}
	case KWhoAmI:
		return jute.OpWhoAmI, nil
	case KDeleteContainer:
		// ZooKeeper's DeleteContainerRequest is a path alone, as sync's.
		return jute.OpDeleteContainer, &jute.SyncRequest{Path: p}
	case KMulti, KMultiRead:
		m := &jute.MultiRequest{}
		for _, s := range op.Sub {
			code, rec := r.request(s)
			m.Ops = append(m.Ops, jute.MultiOp{Type: code, Req: rec})
		}
		if op.Kind == KMulti {
			return jute.OpMulti, m
		}
		return jute.OpMultiRead, m
	}
	panic("diff: no request for " + string(op.Kind))
}

// step runs one step and renders its outcome.
func (r *runner) step(op Op) string {
	sl := &r.slots[op.Session]
	switch op.Kind {
	case KOpen:
		if sl.c != nil {
			return "already open"
		}
		if err := r.open(op.Session); err != nil {
			return "open failed"
		}
		return "opened " + sl.label
	case KClose:
		if sl.c == nil {
			return "not open"
		}
		// ZooKeeper deletes a closed session's ephemerals in the order of
		// a hash set, so the events one close causes are compared as a
		// set: settle every session before and after, and sort what
		// arrived in between.
		marks := map[string]int{}
		for i := range r.slots {
			r.settle(i)
			marks[r.slots[i].label] = len(r.tr.Events[r.slots[i].label])
		}
		hdr, err := sl.c.Call(jute.OpCloseSession, nil, nil)
		sl.c.Abandon()
		r.drainClosed(sl)
		sl.c = nil
		for i := range r.slots {
			r.settle(i)
			l := r.slots[i].label
			slices.Sort(r.tr.Events[l][marks[l]:])
		}
		return "closed " + sl.label + " " + r.outcome(hdr, err, nil)
	}
	if sl.c == nil {
		return "not open"
	}
	var hdr jute.ReplyHeader
	var err error
	var resp jute.Record
	if op.Kind == KAuth {
		hdr, err = sl.c.CallXid(jute.XidAuth, jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: []byte(op.Data)}, nil)
	} else {
		code, req := r.request(op)
		resp, _ = jute.NewResponse(code)
		hdr, err = sl.c.Call(code, req, resp)
	}
	out := r.outcome(hdr, err, resp)
	if err != nil && !isCode(err) {
		sl.c.Abandon()
		r.drainClosed(sl)
		sl.c = nil
	}
	return out
}

// drainClosed keeps the events a session received before its connection
// ended.
func (r *runner) drainClosed(sl *slot) {
	for {
		select {
		case ev := <-sl.c.Events():
			r.tr.Events[sl.label] = append(r.tr.Events[sl.label],
				fmt.Sprintf("%s state=%d %s", eventName(ev.Type), ev.State, r.path(ev.Path)))
		default:
			return
		}
	}
}

func isCode(err error) bool {
	var c jute.Code
	return errors.As(err, &c)
}

func (r *runner) outcome(hdr jute.ReplyHeader, err error, resp jute.Record) string {
	if err != nil && !isCode(err) {
		return "connection lost"
	}
	s := fmt.Sprintf("zxid=%s %s", r.zxid(hdr.Zxid), codeName(hdr.Err))
	if err == nil {
		if body := r.resp(resp); body != "" {
			s += " " + body
		}
	}
	return s
}
