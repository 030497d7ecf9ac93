package gozk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/compat/zkwire"
	"github.com/zkd/zkd/jute"
)

var rawWorld = []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}

func rawCreate(t *testing.T, c *zkwire.Client, path string, mode int32) string {
	t.Helper()
	var resp jute.CreateResponse
	_, err := c.Call(jute.OpCreate, &jute.CreateRequest{Path: path, Acl: rawWorld, Flags: mode}, &resp)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	return resp.Path
}

func rawSet(t *testing.T, c *zkwire.Client, path string, data string) {
	t.Helper()
	if _, err := c.Call(jute.OpSetData, &jute.SetDataRequest{Path: path, Data: []byte(data), Version: -1}, &jute.SetDataResponse{}); err != nil {
		t.Fatalf("setData %s: %v", path, err)
	}
}

func nextEvent(t *testing.T, c *zkwire.Client) jute.WatcherEvent {
	t.Helper()
	select {
	case ev := <-c.Events():
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event")
	}
	return jute.WatcherEvent{}
}

func TestIntegration_PersistentWatches(t *testing.T) {
	forBoth(t, zkproc.Options{}, func(t *testing.T, s *zkproc.Server) {
		c := dial(t, s.Addr)
		w := dial(t, s.Addr)
		rawCreate(t, c, "/p", 0)
		if _, err := w.Call(jute.OpAddWatch, &jute.AddWatchRequest{Path: "/p", Mode: jute.AddWatchModePersistent}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Call(jute.OpAddWatch, &jute.AddWatchRequest{Path: "/r", Mode: jute.AddWatchModePersistentRecursive}, nil); err != nil {
			t.Fatal(err)
		}
		rawSet(t, c, "/p", "1")
		rawSet(t, c, "/p", "2") // persistent: fires again
		rawCreate(t, c, "/p/kid", 0)
		rawCreate(t, c, "/r", 0)
		rawCreate(t, c, "/r/a", 0)
		rawCreate(t, c, "/r/a/b", 0)
		rawSet(t, c, "/r/a/b", "x")
		want := []jute.WatcherEvent{
			{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/p"},
			{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/p"},
			{Type: jute.EventNodeChildrenChanged, State: jute.StateSyncConnected, Path: "/p"},
			{Type: jute.EventNodeCreated, State: jute.StateSyncConnected, Path: "/r"},
			{Type: jute.EventNodeCreated, State: jute.StateSyncConnected, Path: "/r/a"},
			{Type: jute.EventNodeCreated, State: jute.StateSyncConnected, Path: "/r/a/b"},
			{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/r/a/b"},
		}
		for i, w0 := range want {
			if got := nextEvent(t, w); got != w0 {
				t.Fatalf("event %d: got %+v, want %+v", i, got, w0)
			}
		}
		// checkWatches and removeWatches.
		if _, err := w.Call(jute.OpCheckWatches, &jute.CheckWatchesRequest{Path: "/p", Type: jute.WatcherTypeAny}, nil); err != nil {
			t.Fatalf("checkWatches on a persistent watch: %v", err)
		}
		if _, err := w.Call(jute.OpCheckWatches, &jute.CheckWatchesRequest{Path: "/nothing", Type: jute.WatcherTypeData}, nil); !errors.Is(err, jute.CodeNoWatcher) {
			t.Fatalf("checkWatches without watch: %v", err)
		}
		if _, err := w.Call(jute.OpRemoveWatches, &jute.RemoveWatchesRequest{Path: "/p", Type: jute.WatcherTypeAny}, nil); err != nil {
			t.Fatalf("removeWatches: %v", err)
		}
		if _, err := w.Call(jute.OpRemoveWatches, &jute.RemoveWatchesRequest{Path: "/p", Type: jute.WatcherTypeAny}, nil); !errors.Is(err, jute.CodeNoWatcher) {
			t.Fatalf("second removeWatches: %v", err)
		}
		rawSet(t, c, "/p", "3")
		rawSet(t, c, "/r", "y") // the recursive watch is still there: fence
		if got := nextEvent(t, w); got.Path != "/r" || got.Type != jute.EventNodeDataChanged {
			t.Fatalf("after removing /p's watch the next event is %+v", got)
		}
	})
}

func TestIntegration_SetWatchesAfterReconnect(t *testing.T) {
	forBoth(t, zkproc.Options{}, func(t *testing.T, s *zkproc.Server) {
		c := dial(t, s.Addr)
		rawCreate(t, c, "/changed", 0)
		rawCreate(t, c, "/same", 0)
		rawCreate(t, c, "/gone", 0)
		rawCreate(t, c, "/parent", 0)
		var st jute.ExistsResponse
		hdr, err := c.Call(jute.OpExists, &jute.ExistsRequest{Path: "/parent"}, &st)
		if err != nil {
			t.Fatal(err)
		}
		seen := hdr.Zxid
		rawSet(t, c, "/changed", "new")
		if _, err := c.Call(jute.OpDelete, &jute.DeleteRequest{Path: "/gone", Version: -1}, nil); err != nil {
			t.Fatal(err)
		}
		rawCreate(t, c, "/parent/kid", 0)
		rawCreate(t, c, "/born", 0)

		w := dial(t, s.Addr)
		sw := &jute.SetWatches{
			RelativeZxid: seen,
			DataWatches:  []string{"/changed", "/same", "/gone"},
			ExistWatches: []string{"/born", "/unborn"},
			ChildWatches: []string{"/parent"},
		}
		if _, err := w.CallXid(jute.XidSetWatches, jute.OpSetWatches, sw, nil); err != nil {
			t.Fatal(err)
		}
		var got []string
		for i := 0; i < 4; i++ {
			ev := nextEvent(t, w)
			got = append(got, fmt.Sprintf("%d %s", ev.Type, ev.Path))
		}
		sort.Strings(got)
		want := fmt.Sprint([]string{"1 /born", "2 /gone", "3 /changed", "4 /parent"})
		if fmt.Sprint(got) != want {
			t.Fatalf("catch-up events %v, want %v", got, want)
		}
		// /same was re-armed, not fired.
		rawSet(t, c, "/same", "now")
		if ev := nextEvent(t, w); ev.Path != "/same" || ev.Type != jute.EventNodeDataChanged {
			t.Fatalf("re-armed watch: %+v", ev)
		}
	})
}

func TestIntegration_NewerOpcodes(t *testing.T) {
	forBoth(t, zkproc.Options{}, func(t *testing.T, s *zkproc.Server) {
		c := dial(t, s.Addr)
		rawCreate(t, c, "/e", 0)
		rawCreate(t, c, "/e/one", jute.ModeEphemeral)
		rawCreate(t, c, "/e/two", jute.ModeEphemeral)
		rawCreate(t, c, "/e/p", 0)
		rawCreate(t, c, "/e/p/q", 0)

		var eph jute.GetEphemeralsResponse
		if _, err := c.Call(jute.OpGetEphemerals, &jute.GetEphemeralsRequest{PrefixPath: "/e"}, &eph); err != nil {
			t.Fatal(err)
		}
		sort.Strings(eph.Ephemerals)
		if fmt.Sprint(eph.Ephemerals) != "[/e/one /e/two]" {
			t.Fatalf("getEphemerals %v", eph.Ephemerals)
		}
		var n jute.GetAllChildrenNumberResponse
		if _, err := c.Call(jute.OpGetAllChildrenNumber, &jute.GetAllChildrenNumberRequest{Path: "/e"}, &n); err != nil {
			t.Fatal(err)
		}
		if n.TotalNumber != 4 {
			t.Fatalf("getAllChildrenNumber %d, want 4", n.TotalNumber)
		}
		var who jute.WhoAmIResponse
		if _, err := c.Call(jute.OpWhoAmI, nil, &who); err != nil {
			t.Fatal(err)
		}
		if len(who.ClientInfo) != 1 || who.ClientInfo[0].AuthScheme != "ip" || who.ClientInfo[0].User != "127.0.0.1" {
			t.Fatalf("whoAmI %+v", who.ClientInfo)
		}
		var mr jute.MultiResponse
		read := &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpGetData, Req: &jute.GetDataRequest{Path: "/e/one"}},
			{Type: jute.OpGetChildren, Req: &jute.GetChildrenRequest{Path: "/e/p"}},
			{Type: jute.OpGetData, Req: &jute.GetDataRequest{Path: "/missing"}},
		}}
		if _, err := c.Call(jute.OpMultiRead, read, &mr); err != nil {
			t.Fatal(err)
		}
		if len(mr.Results) != 3 || mr.Results[0].Type != jute.OpGetData || mr.Results[1].Type != jute.OpGetChildren ||
			mr.Results[2].Type != jute.OpError || mr.Results[2].Err != jute.CodeNoNode {
			t.Fatalf("multiRead results %+v", mr.Results)
		}
		if kids := mr.Results[1].Resp.(*jute.GetChildrenResponse).Children; fmt.Sprint(kids) != "[q]" {
			t.Fatalf("multiRead children %v", kids)
		}
		var sync jute.SyncResponse
		if _, err := c.Call(jute.OpSync, &jute.SyncRequest{Path: "/e"}, &sync); err != nil || sync.Path != "/e" {
			t.Fatalf("sync %+v %v", sync, err)
		}
	})
}

func TestIntegration_BadInput(t *testing.T) {
	forBoth(t, zkproc.Options{}, func(t *testing.T, s *zkproc.Server) {
		bystander := dial(t, s.Addr)
		rawCreate(t, bystander, "/kept", 0)

		c := dial(t, s.Addr)
		// ZooKeeper looks the parent up before it validates the whole
		// path: a bad path under a missing parent is NoNode.
		for _, tc := range []struct {
			path string
			want jute.Code
		}{
			{"noslash", jute.CodeBadArguments},
			{"/nul\x00", jute.CodeBadArguments},
			{"/kept/", jute.CodeBadArguments},
			{"/kept/.", jute.CodeBadArguments},
			{"/kept/..", jute.CodeBadArguments},
			{"/", jute.CodeNodeExists},
			{"/a//b", jute.CodeNoNode},
			{"/a/./b", jute.CodeNoNode},
		} {
			if _, err := c.Call(jute.OpCreate, &jute.CreateRequest{Path: tc.path, Acl: rawWorld}, nil); !errors.Is(err, tc.want) {
				t.Errorf("create %q: %v, want %v", tc.path, err, tc.want)
			}
		}
		for _, tc := range []struct {
			path string
			want jute.Code
		}{
			{"/kept/", jute.CodeNoNode},
			{"noslash", jute.CodeBadArguments},
			{"/", jute.CodeBadArguments},
		} {
			if _, err := c.Call(jute.OpDelete, &jute.DeleteRequest{Path: tc.path, Version: -1}, nil); !errors.Is(err, tc.want) {
				t.Errorf("delete %q: %v, want %v", tc.path, err, tc.want)
			}
		}
		if _, err := c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/noacl"}, nil); !errors.Is(err, jute.CodeInvalidACL) {
			t.Errorf("create with empty ACL: %v", err)
		}
		if _, err := c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/badmode", Acl: rawWorld, Flags: 42}, nil); !errors.Is(err, jute.CodeBadArguments) {
			t.Errorf("create with mode 42: %v", err)
		}
		// An unknown opcode is answered with Unimplemented, and then, as
		// ZooKeeper does, the connection is closed.
		if _, err := c.Call(77, nil, nil); !errors.Is(err, jute.CodeUnimplemented) {
			t.Errorf("opcode 77: %v", err)
		}
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Error("connection still open after an unknown opcode")
		}

		// A frame over jute.maxbuffer closes that connection only.
		big := dial(t, s.Addr)
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], 0xfffff+1)
		big.Conn().Write(hdr[:])
		select {
		case <-big.Done():
		case <-time.After(10 * time.Second):
			t.Error("oversize frame did not close the connection")
		}
		// Garbage instead of a handshake.
		junk, err := zkwire.Dial(s.Addr, zkwire.Options{})
		if err == nil {
			junk.Abandon()
		}
		if _, err := bystander.Call(jute.OpExists, &jute.ExistsRequest{Path: "/kept"}, &jute.ExistsResponse{}); err != nil {
			t.Fatalf("bystander after bad input: %v", err)
		}
	})
}

func TestIntegration_SessionHandshake(t *testing.T) {
	forBoth(t, zkproc.Options{TickTime: 100}, func(t *testing.T, s *zkproc.Server) {
		// Negotiation clamps to [2, 20] ticks.
		short, err := zkwire.Dial(s.Addr, zkwire.Options{Timeout: time.Millisecond})
		must(t, err)
		defer short.Abandon()
		if short.Timeout != 200 {
			t.Errorf("1 ms negotiated to %d, want 200", short.Timeout)
		}
		long, err := zkwire.Dial(s.Addr, zkwire.Options{Timeout: time.Hour})
		must(t, err)
		defer long.Abandon()
		if long.Timeout != 2000 {
			t.Errorf("1 h negotiated to %d, want 2000", long.Timeout)
		}
		// Reattach with the right password keeps the session.
		c, err := zkwire.Dial(s.Addr, zkwire.Options{Timeout: 2 * time.Second})
		must(t, err)
		rawCreate(t, c, "/eph", jute.ModeEphemeral)
		id, pw := c.SessionID, c.Passwd
		c.Abandon()
		// Wait until the server has dropped the abandoned connection.
		// ZooKeeper 3.8 unmaps a session from its connection by session
		// id alone when a connection closes (removeCnxnFromSessionMap), so
		// a close seen after the reattach would unmap the new connection
		// too, and the wrong-password attempt below would find nothing to
		// close.
		awaitNoConnection(t, s, id)
		again, err := zkwire.Dial(s.Addr, zkwire.Options{SessionID: id, Passwd: pw, Timeout: 2 * time.Second})
		must(t, err)
		if again.SessionID != id {
			t.Fatalf("reattach got session 0x%x, want 0x%x", again.SessionID, id)
		}
		var ex jute.ExistsResponse
		if _, err := again.Call(jute.OpExists, &jute.ExistsRequest{Path: "/eph"}, &ex); err != nil || ex.Stat.EphemeralOwner != id {
			t.Fatalf("ephemeral after reattach: %+v %v", ex.Stat, err)
		}
		// A wrong password gets an expired-session answer. As in
		// ZooKeeper, the attempt first closes the session's current
		// connection; the session itself lives on.
		bad := append([]byte{}, pw...)
		bad[0] ^= 0xff
		wrong, err := zkwire.Dial(s.Addr, zkwire.Options{SessionID: id, Passwd: bad, Timeout: 2 * time.Second})
		must(t, err)
		if wrong.SessionID != 0 || wrong.Timeout != 0 {
			t.Fatalf("wrong password answered session 0x%x timeout %d", wrong.SessionID, wrong.Timeout)
		}
		select {
		case <-again.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the reattach attempt left the old connection open")
		}
		again, err = zkwire.Dial(s.Addr, zkwire.Options{SessionID: id, Passwd: pw, Timeout: 2 * time.Second})
		must(t, err)
		if again.SessionID != id {
			t.Fatalf("session gone after a wrong-password attempt")
		}
		// closeSession ends it: its ephemeral goes and reattaching fails.
		if _, err := again.Call(jute.OpCloseSession, nil, nil); err != nil {
			t.Fatalf("closeSession: %v", err)
		}
		gone, err := zkwire.Dial(s.Addr, zkwire.Options{SessionID: id, Passwd: pw, Timeout: 2 * time.Second})
		must(t, err)
		if gone.SessionID != 0 {
			t.Fatalf("closed session reattached")
		}
		w := dial(t, s.Addr)
		if _, err := w.Call(jute.OpExists, &jute.ExistsRequest{Path: "/eph"}, nil); !errors.Is(err, jute.CodeNoNode) {
			t.Fatalf("ephemeral after closeSession: %v", err)
		}
	})
}

// awaitNoConnection polls cons until no connection of the server carries
// session id.
func awaitNoConnection(t *testing.T, s *zkproc.Server, id int64) {
	t.Helper()
	sid := fmt.Sprintf("sid=0x%x,", uint64(id))
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := s.FourLetter("cons")
		if err == nil && !strings.Contains(out, sid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session 0x%x still has a connection after 10 s: %v\n%s", uint64(id), err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
