package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab"
)

var openACL = []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}

func TestUnknownOpcodeClosesConnection(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	h := c.call(7, 999, nil, nil)
	want := jute.ReplyHeader{Xid: 7, Zxid: -1, Err: jute.CodeUnimplemented}
	if h != want {
		t.Fatalf("reply %+v, want %+v", h, want)
	}
	c.expectClosed()
}

// TestMalformedBodyKeepsConnection: a malformed body gets MarshallingError
// and the connection goes on. A malformed read is answered at once; a
// malformed write goes through the log and consumes a zxid, as ZooKeeper's
// error txn does.
func TestMalformedBodyKeepsConnection(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	before := ts.b.LastZxid()
	for _, tc := range []struct {
		op      int32
		newZxid bool
		submits int
	}{{jute.OpGetData, false, 1}, {jute.OpCreate, true, 2}} {
		e := jute.NewEncoder(nil)
		(&jute.RequestHeader{Xid: 3, Type: tc.op}).Encode(e)
		c.write(frameOf(append(e.Bytes(), 0, 0, 0)))
		h := c.reply(nil)
		if h.Xid != 3 || h.Err != jute.CodeMarshallingError {
			t.Fatalf("op %d: reply %+v, want MarshallingError", tc.op, h)
		}
		if got := h.Zxid > before; got != tc.newZxid {
			t.Fatalf("op %d: reply zxid 0x%x after 0x%x: new zxid %v, want %v", tc.op, h.Zxid, before, got, tc.newZxid)
		}
		if n := ts.b.submitCount(); n != tc.submits {
			t.Fatalf("op %d: backend saw %d submits, want %d", tc.op, n, tc.submits)
		}
	}
	if h := c.call(-2, jute.OpPing, nil, nil); h.Xid != jute.XidPing || h.Err != 0 {
		t.Fatalf("ping after malformed body: %+v", h)
	}
}

func TestReadsAndWrites(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()

	var cr jute.CreateResponse
	h := c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/a", Data: []byte("x"), Acl: openACL}, &cr)
	if h.Err != 0 || cr.Path != "/a" || h.Zxid != ts.b.LastZxid() {
		t.Fatalf("create: %+v %+v", h, cr)
	}
	var c2 jute.Create2Response
	if h := c.call(2, jute.OpCreate2, &jute.CreateRequest{Path: "/a/s-", Acl: openACL, Flags: jute.ModeEphemeralSequential}, &c2); h.Err != 0 ||
		c2.Path != "/a/s-0000000000" || c2.Stat.EphemeralOwner != c.id {
		t.Fatalf("create2: %+v %+v", h, c2)
	}
	for _, tc := range []struct {
		name string
		op   int32
		req  jute.Record
		resp jute.Record
		err  jute.Code
		want string
	}{
		{"getData", jute.OpGetData, &jute.GetDataRequest{Path: "/a"}, &jute.GetDataResponse{}, 0, "x"},
		{"getData no node", jute.OpGetData, &jute.GetDataRequest{Path: "/nope"}, nil, jute.CodeNoNode, ""},
		{"exists", jute.OpExists, &jute.ExistsRequest{Path: "/a"}, &jute.ExistsResponse{}, 0, ""},
		{"exists no node", jute.OpExists, &jute.ExistsRequest{Path: "/nope"}, nil, jute.CodeNoNode, ""},
		{"getChildren", jute.OpGetChildren, &jute.GetChildrenRequest{Path: "/a"}, &jute.GetChildrenResponse{}, 0, "s-0000000000"},
		{"getChildren2", jute.OpGetChildren2, &jute.GetChildren2Request{Path: "/a"}, &jute.GetChildren2Response{}, 0, "s-0000000000"},
		{"getACL", jute.OpGetACL, &jute.GetACLRequest{Path: "/a"}, &jute.GetACLResponse{}, 0, "anyone"},
		{"getEphemerals", jute.OpGetEphemerals, &jute.GetEphemeralsRequest{PrefixPath: "/"}, &jute.GetEphemeralsResponse{}, 0, "/a/s-0000000000"},
		{"getAllChildrenNumber", jute.OpGetAllChildrenNumber, &jute.GetAllChildrenNumberRequest{Path: "/a"}, &jute.GetAllChildrenNumberResponse{}, 0, "1"},
		{"sync", jute.OpSync, &jute.SyncRequest{Path: "/a"}, &jute.SyncResponse{}, 0, "/a"},
		{"setData", jute.OpSetData, &jute.SetDataRequest{Path: "/a", Data: []byte("y"), Version: 0}, &jute.SetDataResponse{}, 0, "Version:1"},
		{"setData bad version", jute.OpSetData, &jute.SetDataRequest{Path: "/a", Data: []byte("z"), Version: 7}, nil, jute.CodeBadVersion, ""},
		{"delete not empty", jute.OpDelete, &jute.DeleteRequest{Path: "/a", Version: -1}, nil, jute.CodeNotEmpty, ""},
		{"reconfig disabled", jute.OpReconfig, &jute.ReconfigRequest{}, nil, jute.CodeReconfigDisabled, ""},
		{"checkWatches none", jute.OpCheckWatches, &jute.CheckWatchesRequest{Path: "/a", Type: jute.WatcherTypeData}, nil, jute.CodeNoWatcher, ""},
		{"addWatch", jute.OpAddWatch, &jute.AddWatchRequest{Path: "/a", Mode: jute.AddWatchModePersistent}, &jute.ErrorResponse{}, 0, ""},
		{"removeWatches", jute.OpRemoveWatches, &jute.RemoveWatchesRequest{Path: "/a", Type: jute.WatcherTypeAny}, nil, 0, ""},
		{"addWatch bad mode", jute.OpAddWatch, &jute.AddWatchRequest{Path: "/a", Mode: 2}, nil, jute.CodeMarshallingError, ""},
		{"checkWatches bad type", jute.OpCheckWatches, &jute.CheckWatchesRequest{Path: "/a", Type: 0}, nil, jute.CodeMarshallingError, ""},
		{"removeWatches bad type", jute.OpRemoveWatches, &jute.RemoveWatchesRequest{Path: "/a", Type: 9}, nil, jute.CodeMarshallingError, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := c.call(10, tc.op, tc.req, tc.resp)
			if h.Xid != 10 || h.Err != tc.err {
				t.Fatalf("reply %+v, want err %v", h, tc.err)
			}
			if h.Zxid != ts.b.LastZxid() {
				t.Fatalf("reply zxid %d, want last zxid %d", h.Zxid, ts.b.LastZxid())
			}
			if tc.resp != nil && !strings.Contains(fmt.Sprintf("%+v", tc.resp), tc.want) {
				t.Fatalf("response %+v does not contain %q", tc.resp, tc.want)
			}
		})
	}
}

func TestMultiRead(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/m", Data: []byte("d"), Acl: openACL}, &jute.CreateResponse{})
	req := &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpGetData, Req: &jute.GetDataRequest{Path: "/m"}},
		{Type: jute.OpGetData, Req: &jute.GetDataRequest{Path: "/missing"}},
		{Type: jute.OpGetChildren, Req: &jute.GetChildrenRequest{Path: "/"}},
	}}
	var resp jute.MultiResponse
	if h := c.call(2, jute.OpMultiRead, req, &resp); h.Err != 0 {
		t.Fatalf("multiRead header %+v", h)
	}
	if len(resp.Results) != 3 {
		t.Fatalf("results %+v", resp.Results)
	}
	if r := resp.Results[0]; r.Type != jute.OpGetData || string(r.Resp.(*jute.GetDataResponse).Data) != "d" {
		t.Fatalf("result 0 %+v", r)
	}
	if r := resp.Results[1]; r.Type != jute.OpError || r.Err != jute.CodeNoNode {
		t.Fatalf("result 1 %+v, want NoNode error result", r)
	}
	if r := resp.Results[2]; r.Type != jute.OpGetChildren || len(r.Resp.(*jute.GetChildrenResponse).Children) != 2 {
		t.Fatalf("result 2 %+v", r.Resp)
	}
}

// TestPipelining sends many requests without waiting: writes must all be
// submitted before the first one applies, and replies must come back in
// request order, reads seeing every earlier write.
func TestPipelining(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	gate := make(chan struct{})
	ts.b.setGate(gate)
	const n = 50
	for i := range n {
		c.send(int32(i+1), jute.OpCreate, &jute.CreateRequest{Path: fmt.Sprintf("/p%03d", i), Acl: openACL})
	}
	waitFor(t, "all writes submitted before any applied", func() bool { return ts.b.submitCount() == n+1 })
	c.send(n+1, jute.OpGetChildren, &jute.GetChildrenRequest{Path: "/"})
	c.send(n+2, jute.OpSetData, &jute.SetDataRequest{Path: "/p000", Data: []byte("v"), Version: -1})
	c.send(n+3, jute.OpGetData, &jute.GetDataRequest{Path: "/p000"})
	ts.b.setGate(nil)
	close(gate)
	for i := range n {
		var cr jute.CreateResponse
		h := c.reply(&cr)
		if h.Xid != int32(i+1) || h.Err != 0 || cr.Path != fmt.Sprintf("/p%03d", i) {
			t.Fatalf("reply %d: %+v %+v", i, h, cr)
		}
	}
	var kids jute.GetChildrenResponse
	if h := c.reply(&kids); h.Xid != n+1 || len(kids.Children) != n+1 {
		t.Fatalf("getChildren after the creates: %+v, %d children", h, len(kids.Children))
	}
	if h := c.reply(&jute.SetDataResponse{}); h.Xid != n+2 || h.Err != 0 {
		t.Fatalf("setData reply %+v", h)
	}
	var gd jute.GetDataResponse
	if h := c.reply(&gd); h.Xid != n+3 || string(gd.Data) != "v" {
		t.Fatalf("getData reply %+v %q", h, gd.Data)
	}
}

// TestReadBeforeWriteSeesOldState: a read sent before a write must not see
// that write, even though writes are submitted as soon as they arrive.
func TestReadBeforeWriteSeesOldState(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/r", Data: []byte("old"), Acl: openACL}, &jute.CreateResponse{})
	gate := make(chan struct{})
	ts.b.setGate(gate)
	c.send(2, jute.OpSetData, &jute.SetDataRequest{Path: "/r", Data: []byte("mid"), Version: -1})
	c.send(3, jute.OpGetData, &jute.GetDataRequest{Path: "/r"})
	c.send(4, jute.OpSetData, &jute.SetDataRequest{Path: "/r", Data: []byte("new"), Version: -1})
	ts.b.setGate(nil)
	close(gate)
	c.reply(&jute.SetDataResponse{})
	var gd jute.GetDataResponse
	if h := c.reply(&gd); h.Xid != 3 || string(gd.Data) != "mid" {
		t.Fatalf("read between writes: %+v %q, want mid", h, gd.Data)
	}
	if h := c.reply(&jute.SetDataResponse{}); h.Xid != 4 {
		t.Fatalf("last reply %+v", h)
	}
}

func TestWatchEventBeforeWriteReply(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/w", Acl: openACL}, &jute.CreateResponse{})
	if h := c.call(2, jute.OpGetData, &jute.GetDataRequest{Path: "/w", Watch: true}, &jute.GetDataResponse{}); h.Err != 0 {
		t.Fatal(h)
	}
	c.send(3, jute.OpSetData, &jute.SetDataRequest{Path: "/w", Data: []byte("1"), Version: -1})
	var ev jute.WatcherEvent
	b := c.mustFrame()
	d := jute.NewDecoder(b)
	var h jute.ReplyHeader
	h.Decode(d)
	ev.Decode(d)
	want := jute.ReplyHeader{Xid: -1, Zxid: -1, Err: 0}
	if h != want || ev != (jute.WatcherEvent{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/w"}) {
		t.Fatalf("first frame %+v %+v, want the watch event", h, ev)
	}
	if h := c.reply(&jute.SetDataResponse{}); h.Xid != 3 {
		t.Fatalf("then reply %+v", h)
	}
}

// TestWatchEventNeverBeforeRegisteringReply: while a read that sets a
// watch executes, events on its path are held until its reply is queued;
// events on other paths are not held (they belong to writes the read may
// already see, so they must come first).
func TestWatchEventNeverBeforeRegisteringReply(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	var cn *conn
	for _, x := range ts.connections() {
		cn = x
	}
	cn.out.Lock()
	cn.out.deferring, cn.out.holdPath = true, "/x"
	cn.out.Unlock()
	cn.Notify(jute.WatcherEvent{Type: jute.EventNodeCreated, State: jute.StateSyncConnected, Path: "/x"})
	cn.Notify(jute.WatcherEvent{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/other"})
	sl := &slot{xid: 9, op: jute.OpExists, req: &jute.ExistsRequest{Path: "/x", Watch: true}}
	cn.execRead(sl)
	event := func() (jute.ReplyHeader, jute.WatcherEvent) {
		d := jute.NewDecoder(c.mustFrame())
		var h jute.ReplyHeader
		var ev jute.WatcherEvent
		h.Decode(d)
		ev.Decode(d)
		return h, ev
	}
	if h, ev := event(); h.Xid != jute.XidNotification || ev.Path != "/other" {
		t.Fatalf("first frame %+v %+v, want the event on /other", h, ev)
	}
	if h := c.reply(nil); h.Xid != 9 || h.Err != jute.CodeNoNode {
		t.Fatalf("second frame %+v, want the read reply", h)
	}
	if h, ev := event(); h.Xid != jute.XidNotification || ev.Path != "/x" {
		t.Fatalf("third frame %+v %+v, want the held event on /x", h, ev)
	}
}

// TestReadWithoutWatchHoldsNothing: a plain read does not hold events, so
// an event queued before its reply stays before it.
func TestReadWithoutWatchHoldsNothing(t *testing.T) {
	if _, _, hold := watchHold(&jute.GetDataRequest{Path: "/x"}); hold {
		t.Fatal("getData without watch holds events")
	}
	for _, req := range []jute.Record{
		&jute.GetDataRequest{Path: "/x", Watch: true},
		&jute.ExistsRequest{Path: "/x", Watch: true},
		&jute.GetChildrenRequest{Path: "/x", Watch: true},
		&jute.GetChildren2Request{Path: "/x", Watch: true},
	} {
		if path, all, hold := watchHold(req); !hold || all || path != "/x" {
			t.Errorf("%T: hold %v all %v path %q", req, hold, all, path)
		}
	}
	if _, all, hold := watchHold(&jute.AddWatchRequest{Path: "/x"}); !hold || !all {
		t.Error("addWatch must hold every event (descendants fire too)")
	}
}

func TestSetWatchesCatchUp(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/sw", Acl: openACL}, &jute.CreateResponse{})
	c.send(jute.XidSetWatches, jute.OpSetWatches, &jute.SetWatches{RelativeZxid: 0, DataWatches: []string{"/sw", "/gone"}, ExistWatches: []string{}, ChildWatches: []string{}})
	var got []string
	for range 3 {
		b := c.mustFrame()
		d := jute.NewDecoder(b)
		var h jute.ReplyHeader
		h.Decode(d)
		if h.Xid == jute.XidNotification {
			var ev jute.WatcherEvent
			ev.Decode(d)
			got = append(got, fmt.Sprintf("event %d %s", ev.Type, ev.Path))
		} else {
			got = append(got, fmt.Sprintf("reply %d err %d", h.Xid, h.Err))
		}
	}
	want := []string{"event 3 /sw", "event 2 /gone", "reply -8 err 0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("frames %v, want %v", got, want)
	}
}

func TestAuth(t *testing.T) {
	super := Digest("super:secret")
	ts := startServer(t, func(c *Config) { c.SuperDigest = super })
	owner := dialRaw(t, ts.addr)
	owner.session()
	if h := owner.call(jute.XidAuth, jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: []byte("alice:pw")}, nil); h != (jute.ReplyHeader{Xid: jute.XidAuth}) {
		t.Fatalf("auth reply %+v", h)
	}
	acl := []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "auth"}}}
	if h := owner.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/secret", Data: []byte("s"), Acl: acl}, &jute.CreateResponse{}); h.Err != 0 {
		t.Fatalf("create with auth ACL: %+v", h)
	}
	var who jute.WhoAmIResponse
	owner.call(2, jute.OpWhoAmI, nil, &who)
	// ZooKeeper 3.8 answers in its authInfo set order (checked with Java).
	if got := fmt.Sprint(who.ClientInfo); got != "[{ip 127.0.0.1} {digest alice}]" {
		t.Fatalf("whoAmI %s", got)
	}

	for _, tc := range []struct {
		name string
		auth string
		want jute.Code
		who  string
	}{
		{"anonymous", "", jute.CodeNoAuth, "[{ip 127.0.0.1}]"},
		{"other user", "bob:pw", jute.CodeNoAuth, "[{digest bob} {ip 127.0.0.1}]"},
		// ZooKeeper's authInfo order (checked with Java): alice after ip.
		{"same user", "alice:pw", 0, "[{ip 127.0.0.1} {digest alice}]"},
		{"super", "super:secret", 0, "[{super } {digest super} {ip 127.0.0.1}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, ts.addr)
			c.session()
			if tc.auth != "" {
				c.call(jute.XidAuth, jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: []byte(tc.auth)}, nil)
				// Adding the same identity twice lists it once.
				c.call(jute.XidAuth, jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: []byte(tc.auth)}, nil)
			}
			if h := c.call(1, jute.OpGetData, &jute.GetDataRequest{Path: "/secret"}, &jute.GetDataResponse{}); h.Err != tc.want {
				t.Fatalf("getData: %+v, want %v", h, tc.want)
			}
			if h := c.call(2, jute.OpSetData, &jute.SetDataRequest{Path: "/secret", Version: -1}, &jute.SetDataResponse{}); h.Err != tc.want {
				t.Fatalf("setData: %+v, want %v", h, tc.want)
			}
			var who jute.WhoAmIResponse
			c.call(3, jute.OpWhoAmI, nil, &who)
			if got := fmt.Sprint(who.ClientInfo); got != tc.who {
				t.Fatalf("whoAmI %s, want %s", got, tc.who)
			}
		})
	}

	t.Run("unknown scheme fails and closes", func(t *testing.T) {
		c := dialRaw(t, ts.addr)
		c.session()
		h := c.call(jute.XidAuth, jute.OpAuth, &jute.AuthPacket{Scheme: "foo", Auth: []byte("bar")}, nil)
		if h != (jute.ReplyHeader{Xid: jute.XidAuth, Err: jute.CodeAuthFailed}) {
			t.Fatalf("reply %+v, want AuthFailed", h)
		}
		c.expectClosed()
		if ts.stats.authFailed.Load() != 1 {
			t.Fatalf("auth_failed_count = %d", ts.stats.authFailed.Load())
		}
	})
}

func TestDigest(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"super:secret", "super:lK75jTNcA+U9vtVEw5vB51mj/w4="}, // from ZooKeeper's DigestAuthenticationProvider
		{"alice:pw", datatree.DigestID("alice", "pw")},
		{"nocolon", "nocolon:" + strings.SplitN(datatree.DigestID("nocolon", ""), ":", 2)[1]},
	} {
		got := Digest(tc.in)
		if tc.in == "nocolon" {
			// sha1("nocolon"), not sha1("nocolon:")
			if got == tc.want || !strings.HasPrefix(got, "nocolon:") {
				t.Errorf("Digest(%q) = %q", tc.in, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("Digest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCloseSession(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/e", Acl: openACL, Flags: jute.ModeEphemeral}, &jute.CreateResponse{})
	h := c.call(2, jute.OpCloseSession, nil, nil)
	if h.Xid != 2 || h.Err != 0 || h.Zxid != ts.b.LastZxid() {
		t.Fatalf("closeSession reply %+v", h)
	}
	c.expectClosed()
	if _, err := ts.b.Tree().Exists("/e", nil); !errors.Is(err, datatree.ErrNoNode) {
		t.Fatalf("ephemeral survived closeSession: %v", err)
	}
}

// TestCloseSessionDropsWatchesFirst: ZooKeeper 3.8 drops a connection's
// watches as it answers closeSession, before it takes any later request,
// and checkWatches answers for any connection's watches: once a client
// has its closeSession reply, no request may see its watches any more.
// Here the tree is read the moment the reply arrives, before the server
// has ended the connection. Rounds give the connection's end a chance to
// be slower than the reply.
func TestCloseSessionDropsWatchesFirst(t *testing.T) {
	ts := startServer(t, nil)
	setup := dialRaw(t, ts.addr)
	setup.session()
	setup.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/w", Acl: openACL}, &jute.CreateResponse{})
	for round := range 20 {
		c := dialRaw(t, ts.addr)
		c.session()
		if h := c.call(1, jute.OpExists, &jute.ExistsRequest{Path: "/w", Watch: true}, &jute.ExistsResponse{}); h.Err != 0 {
			t.Fatalf("round %d: exists with a watch: %v", round, h.Err)
		}
		if err := ts.b.Tree().CheckWatches("/w", nil, jute.WatcherTypeAny); err != nil {
			t.Fatalf("round %d: no watch on /w after exists set one: %v", round, err)
		}
		if h := c.call(2, jute.OpCloseSession, nil, nil); h.Err != 0 {
			t.Fatalf("round %d: closeSession: %v", round, h.Err)
		}
		if err := ts.b.Tree().CheckWatches("/w", nil, jute.WatcherTypeAny); !errors.Is(err, datatree.ErrNoWatcher) {
			t.Fatalf("round %d: after the closeSession reply, checkWatches on /w: %v, want %v", round, err, datatree.ErrNoWatcher)
		}
		c.expectClosed()
	}
}

func TestSessionGoneMidConnection(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	// The session vanishes without SessionClosed (e.g. another member
	// expired it): the next request gets SessionExpired and the close.
	ts.b.mu.Lock()
	delete(ts.b.sessions, c.id)
	ts.b.mu.Unlock()
	h := c.call(5, jute.OpGetData, &jute.GetDataRequest{Path: "/"}, nil)
	if h.Xid != 5 || h.Err != jute.CodeSessionExpired {
		t.Fatalf("reply %+v, want SessionExpired", h)
	}
	c.expectClosed()
}

func TestNotLeaderClosesConnection(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	ts.b.mu.Lock()
	ts.b.syncErr = zab.ErrNotLeader
	ts.b.mu.Unlock()
	c.send(4, jute.OpSync, &jute.SyncRequest{Path: "/"})
	c.expectClosed()
}

// TestLostWriteClosesWithoutReply: a write this member cannot get into the
// log (its leader is gone) ends the connection with no reply, as a
// ZooKeeper follower that loses its leader drops its clients. A
// ConnectionLoss reply would let the client ask, on this connection and
// before this member caught up with the new leader, whether the write
// happened (go-zk's and Curator's protected creates do), see it missing
// and create again: two lock nodes of one session, and a lock stuck
// behind the first.
func TestLostWriteClosesWithoutReply(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	ts.b.mu.Lock()
	ts.b.writeErr = zab.ErrNotLeader
	ts.b.mu.Unlock()
	c.send(5, jute.OpCreate, &jute.CreateRequest{Path: "/lock/x-", Acl: openACL, Flags: 3})
	c.expectClosed()
}

func TestPanicClosesOnlyThatConnection(t *testing.T) {
	ts := startServer(t, nil)
	other := dialRaw(t, ts.addr)
	other.session()
	c := dialRaw(t, ts.addr)
	c.session()
	ts.b.mu.Lock()
	ts.b.panicOn = "sync"
	ts.b.mu.Unlock()
	c.send(1, jute.OpSync, &jute.SyncRequest{Path: "/"})
	c.expectClosed()
	ts.b.mu.Lock()
	ts.b.panicOn = ""
	ts.b.mu.Unlock()
	if h := other.call(-2, jute.OpPing, nil, nil); h.Err != 0 {
		t.Fatalf("other connection: %+v", h)
	}
}

func TestSlowClientIsClosed(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxOutQueueBytes = 4096 })
	c := dialRaw(t, ts.addr)
	c.session()
	var cn *conn
	for _, x := range ts.connections() {
		cn = x
	}
	// Stop the writer from draining by holding the queue lock's contents:
	// Notify many events faster than anything could be written; Notify
	// must return every time and the connection must end up closed.
	cn.out.Lock()
	cn.out.deferring, cn.out.holdAll = true, true // events pile up, as behind a long read
	cn.out.Unlock()
	for range 1000 {
		cn.Notify(jute.WatcherEvent{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/some/long/path/to/fill/the/queue"})
	}
	select {
	case <-cn.done:
	default:
		t.Fatal("connection over its output cap is still open")
	}
	c.expectClosed()
}

func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err   error
		code  jute.Code
		fatal bool
		known bool
	}{
		{nil, jute.CodeOK, false, true},
		{jute.CodeBadVersion, jute.CodeBadVersion, false, true},
		{fmt.Errorf("wrapped: %w", jute.CodeNodeExists), jute.CodeNodeExists, false, true},
		{datatree.ErrNoNode, jute.CodeNoNode, false, true},
		{fmt.Errorf("x: %w", datatree.ErrNoAuth), jute.CodeNoAuth, false, true},
		{zab.ErrUnknownSession, jute.CodeSessionExpired, false, true},
		{zab.ErrNotLeader, jute.CodeConnectionLoss, true, true},
		{zab.ErrStopped, jute.CodeConnectionLoss, true, true},
		{context.Canceled, jute.CodeConnectionLoss, true, true},
		{errors.New("disk on fire"), jute.CodeSystemError, false, false},
	} {
		code, fatal, known := errorCode(tc.err)
		if code != tc.code || fatal != tc.fatal || known != tc.known {
			t.Errorf("errorCode(%v) = %v %v %v, want %v %v %v", tc.err, code, fatal, known, tc.code, tc.fatal, tc.known)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		bad  string
	}{
		{"default", func(*Config) {}, ""},
		{"tick", func(c *Config) { c.TickTime = 0 }, "TickTime"},
		{"min over max", func(c *Config) { c.MinSessionTimeout = c.MaxSessionTimeout + 1 }, "MinSessionTimeout"},
		{"derived bounds", func(c *Config) { c.MinSessionTimeout, c.MaxSessionTimeout = 0, 0 }, ""},
		{"cnxns", func(c *Config) { c.MaxClientCnxns = -1 }, "MaxClientCnxns"},
		{"buffer", func(c *Config) { c.MaxBuffer = 0 }, "MaxBuffer"},
		{"whitelist", func(c *Config) { c.FourLetterWhitelist = []string{"stats"} }, "FourLetterWhitelist"},
		{"super digest", func(c *Config) { c.SuperDigest = "nocolon" }, "SuperDigest"},
	} {
		cfg := DefaultConfig()
		tc.mod(&cfg)
		err := cfg.Validate()
		if (tc.bad == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.bad) {
			t.Errorf("%s: Validate() = %v, want mention of %q", tc.name, err, tc.bad)
		}
	}
}

func TestOutstandingSettlesAfterAbruptClose(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	gate := make(chan struct{})
	ts.b.setGate(gate)
	for i := range 20 {
		c.send(int32(i+1), jute.OpCreate, &jute.CreateRequest{Path: fmt.Sprintf("/o%d", i), Acl: openACL})
		c.send(int32(i+100), jute.OpExists, &jute.ExistsRequest{Path: "/"})
	}
	waitFor(t, "requests queued", func() bool { return ts.Stats().Outstanding > 0 })
	c.nc.Close()
	// The reader waits for the gated write before it can see the close.
	ts.b.setGate(nil)
	close(gate)
	waitFor(t, "connection gone", func() bool { return len(ts.Conns()) == 0 })
	if got := ts.Stats().Outstanding; got != 0 {
		t.Fatalf("outstanding = %d after the connection closed, want 0", got)
	}
}

// TestSlowReaderIsClosed pipelines large reads without reading the
// replies: once the socket buffers are full the output queue passes its cap
// and the connection is closed, while writes that fire its watches go on.
func TestSlowReaderIsClosed(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxOutQueueBytes = 2 << 20 })
	w := dialRaw(t, ts.addr)
	w.session()
	w.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/big", Data: make([]byte, 512<<10), Acl: openACL}, &jute.CreateResponse{})
	w.call(2, jute.OpCreate, &jute.CreateRequest{Path: "/other", Acl: openACL}, &jute.CreateResponse{})
	slow := dialRaw(t, ts.addr)
	slow.nc.(interface{ SetReadBuffer(int) error }).SetReadBuffer(4096)
	slow.session()
	slow.call(1, jute.OpAddWatch, &jute.AddWatchRequest{Path: "/", Mode: jute.AddWatchModePersistentRecursive}, &jute.ErrorResponse{})
	var slowConn *conn
	for _, c := range ts.connections() {
		if c.sessionID.Load() == slow.id {
			slowConn = c
		}
	}
	go func() {
		e := jute.NewEncoder(nil)
		(&jute.RequestHeader{Xid: 2, Type: jute.OpGetData}).Encode(e)
		(&jute.GetDataRequest{Path: "/big"}).Encode(e)
		req := frameOf(e.Bytes())
		for range 200 {
			if _, err := slow.nc.Write(req); err != nil {
				return
			}
		}
	}()
	for i := range 50 {
		start := time.Now()
		if h := w.call(int32(10+i), jute.OpSetData, &jute.SetDataRequest{Path: "/other", Data: []byte("x"), Version: -1}, &jute.SetDataResponse{}); h.Err != 0 {
			t.Fatalf("setData: %+v", h)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("a write firing the slow client's watch took %v", d)
		}
	}
	select {
	case <-slowConn.done:
	case <-time.After(10 * time.Second):
		t.Fatal("slow reader still connected")
	}
}

// TestAuthAppliesToPipelinedWrites sends addauth and a create that needs
// it back to back: the auth applies before the next request is read, and
// its reply keeps its place in the reply order.
func TestAuthAppliesToPipelinedWrites(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	gate := make(chan struct{})
	ts.b.setGate(gate)
	c.send(1, jute.OpCreate, &jute.CreateRequest{Path: "/before", Acl: openACL})
	c.send(jute.XidAuth, jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: []byte("u:p")})
	c.send(2, jute.OpCreate, &jute.CreateRequest{Path: "/mine", Acl: []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "auth"}}}})
	waitFor(t, "both creates submitted", func() bool { return ts.b.submitCount() == 3 })
	ts.b.setGate(nil)
	close(gate)
	for _, want := range []int32{1, jute.XidAuth, 2} {
		if h := c.reply(nil); h.Xid != want || h.Err != 0 {
			t.Fatalf("reply %+v, want xid %d ok", h, want)
		}
	}
	var acl jute.GetACLResponse
	c.call(3, jute.OpGetACL, &jute.GetACLRequest{Path: "/mine"}, &acl)
	if len(acl.Acl) != 1 || acl.Acl[0].Id.Scheme != "digest" || !strings.HasPrefix(acl.Acl[0].Id.Id, "u:") {
		t.Fatalf("ACL of /mine %+v, want the digest of u", acl.Acl)
	}
}

func TestTreeReplacedClosesConnections(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	ts.b.cur.Store(datatree.New(datatree.DefaultConfig()))
	c.send(-2, jute.OpPing, nil)
	c.expectClosed()

	a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	a.session()
	b.session()
	ts.CloseConnections("test")
	a.expectClosed()
	b.expectClosed()
	d := dialRaw(t, ts.addr)
	resp, _ := d.connect(jute.ConnectRequest{TimeOut: 10000, SessionId: a.id, Passwd: a.pw})
	if resp.SessionId != a.id {
		t.Fatalf("session lost with its connection: %+v", resp)
	}
}

// TestJavaSetOrder: the order ZooKeeper's authInfo set (a ConcurrentHashMap
// of jute Ids) iterates. The expected order was printed by Java 17 with
// zookeeper-jute.jar's Id for the same ids added in the same order.
func TestJavaSetOrder(t *testing.T) {
	ids := []jute.Id{
		{Scheme: "ip", Id: "127.0.0.1"},
		{Scheme: "digest", Id: "mike:abc="}, {Scheme: "digest", Id: "b:xyz="},
		{Scheme: "digest", Id: "zz:q1w="}, {Scheme: "digest", Id: "anna:ppp="},
		{Scheme: "digest", Id: "q1:zzz="}, {Scheme: "super", Id: ""},
	}
	javaSetOrder(ids)
	want := []string{"digest q1:zzz=", "super ", "digest mike:abc=", "ip 127.0.0.1", "digest zz:q1w=", "digest b:xyz=", "digest anna:ppp="}
	for i, id := range ids {
		if got := id.Scheme + " " + id.Id; got != want[i] {
			t.Fatalf("position %d: %q, want %q (all: %v)", i, got, want[i], ids)
		}
	}
}

// TestPingAnsweredBehindStalledWrite: a ping sent behind a write that has
// not applied (a leader's fsync stalled for seconds) is answered at once,
// so the client's read timeout does not drop a live connection; the
// write's reply follows once it applies. Answered in order, the ping
// waited for the write, the client timed the connection out, and every
// session whose client wrote during the stall reconnected.
func TestPingAnsweredBehindStalledWrite(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	gate := make(chan struct{})
	ts.b.setGate(gate)
	c.send(1, jute.OpCreate, &jute.CreateRequest{Path: "/stalled", Acl: openACL})
	waitFor(t, "write submitted", func() bool { return ts.b.submitCount() == 2 })
	c.send(jute.XidPing, jute.OpPing, nil)
	if h := c.reply(nil); h.Xid != jute.XidPing || h.Err != 0 {
		t.Fatalf("first reply behind a stalled write = %+v, want the ping's", h)
	}
	close(gate)
	var resp jute.CreateResponse
	if h := c.reply(&resp); h.Xid != 1 || h.Err != 0 || resp.Path != "/stalled" {
		t.Fatalf("write's reply = %+v %+v, want xid 1 creating /stalled", h, resp)
	}
}

// TestFDHeadroomRefusesClients: once the process's descriptors (those open
// when Serve began plus the client connections) would leave less than the
// headroom under RLIMIT_NOFILE, a new client connection is closed at once,
// so raft and the member's files keep descriptors of their own; below it,
// clients are accepted again. The test moves the count Serve began with
// rather than the process's limit.
func TestFDHeadroomRefusesClients(t *testing.T) {
	ts := startServer(t, nil)
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Serve counted its descriptors", func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return ts.fdBase > 0
	})
	ts.mu.Lock()
	base := ts.fdBase
	ts.fdBase = int(rl.Cur) - max(int(rl.Cur)/64, 4) // one more connection crosses the headroom
	ts.mu.Unlock()
	refused := ts.stats.connectionRejected.Load()
	dialRaw(t, ts.addr).expectClosed()
	if got := ts.stats.connectionRejected.Load(); got != refused+1 {
		t.Fatalf("refusals %d, want %d", got, refused+1)
	}
	ts.mu.Lock()
	ts.fdBase = base
	ts.mu.Unlock()
	c := dialRaw(t, ts.addr)
	c.session()
}
