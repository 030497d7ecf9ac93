package zab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap/zaptest"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/session"
	"github.com/zkd/zkd/zab/store"
)

func TestEntryRoundTrip(t *testing.T) {
	tests := []entry{
		{kind: kindRequest, origin: 7, seq: 9, time: 1700000000000, req: Request{
			Op: jute.OpCreate, SessionID: 0x100, Timeout: 0,
			Auth: []jute.Id{{Scheme: "ip", Id: "127.0.0.1"}, {Scheme: "digest", Id: "u:x"}},
			Body: jute.Encode(&jute.CreateRequest{Path: "/a", Data: []byte("x"), Flags: 1}),
		}},
		{kind: kindRequest, req: Request{Op: jute.OpCreateSession, SessionID: 5, Timeout: 4000}},
		{kind: kindExpire, time: 3, sessions: []int64{1, 2, 3}},
		{kind: kindExpire, time: 3, sessions: []int64{4}, lockDelay: 5000},
		{kind: kindDeleteTombstones, time: 7, paths: []string{"/locks/lock-0000000000"}},
		{kind: kindDeleteExpired, time: 4, paths: []string{"/c1", "/c2"}},
		{kind: kindSetConfig, time: 5, config: []byte("server.1=h:1:2:participant\nversion=0")},
		{kind: kindFencingKey, time: 6, fenceSeed: bytes.Repeat([]byte{7}, 32)},
	}
	for i, want := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			got, err := decodeEntry(want.encode())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.encode(), want.encode()) {
				t.Fatalf("re-encoding differs: %+v vs %+v", got, want)
			}
		})
	}
}

func TestDecodeEntryRejects(t *testing.T) {
	good := (&entry{kind: kindExpire, sessions: []int64{1}}).encode()
	tests := map[string][]byte{
		"empty":        nil,
		"unknown kind": append([]byte{0, 0, 0, 99}, good[4:]...),
		"truncated":    good[:len(good)-1],
		"trailing":     append(append([]byte{}, good...), 0),
	}
	for name, b := range tests {
		if _, err := decodeEntry(b); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

// script is a run of client writes as a leader would stamp them.
func script() []*entry {
	create := func(path string, mode int32) []byte {
		return jute.Encode(&jute.CreateRequest{Path: path, Data: []byte(path), Acl: []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}, Flags: mode})
	}
	s := []*entry{
		{kind: kindRequest, time: 1000, req: Request{Op: jute.OpCreateSession, SessionID: 11, Timeout: 4000}},
		{kind: kindRequest, time: 1001, req: Request{Op: jute.OpCreateSession, SessionID: 12, Timeout: 6000}},
		{kind: kindRequest, time: 1002, req: Request{Op: jute.OpCreate, SessionID: 11, Body: create("/locks", jute.ModePersistent)}},
	}
	for i := 0; i < 5; i++ {
		s = append(s, &entry{kind: kindRequest, time: int64(1003 + i), req: Request{Op: jute.OpCreate2, SessionID: 11 + int64(i%2), Body: create("/locks/lock-", jute.ModeEphemeralSequential)}})
	}
	s = append(s,
		&entry{kind: kindRequest, time: 1010, req: Request{Op: jute.OpSetData, SessionID: 12, Body: jute.Encode(&jute.SetDataRequest{Path: "/locks", Data: []byte("v2"), Version: 0})}},
		&entry{kind: kindRequest, time: 1011, req: Request{Op: jute.OpSetData, SessionID: 12, Body: jute.Encode(&jute.SetDataRequest{Path: "/locks", Data: []byte("v3"), Version: 0})}},
		&entry{kind: kindExpire, time: 1012, sessions: []int64{11}},
		&entry{kind: kindRequest, time: 1013, req: Request{Op: jute.OpDelete, SessionID: 11, Body: jute.Encode(&jute.DeleteRequest{Path: "/locks", Version: -1})}},
	)
	return s
}

func applyAll(t *testing.T, f *fsm, es []*entry, term uint64) []Result {
	t.Helper()
	var results []Result
	f.onApplied = func(_, _ uint64, r Result) { results = append(results, r) }
	for i, e := range es {
		f.Apply(&raft.Log{Index: uint64(i + 1), Term: term, Type: raft.LogCommand, Data: e.encode()})
	}
	return results
}

func snapshotBytes(t *testing.T, f *fsm) []byte {
	t.Helper()
	s, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return s.(*fsmSnapshot).data
}

func TestFSMDeterministic(t *testing.T) {
	a := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	b := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	ra := applyAll(t, a, script(), 3)
	rb := applyAll(t, b, script(), 3)
	if !bytes.Equal(snapshotBytes(t, a), snapshotBytes(t, b)) {
		t.Fatal("two FSMs fed the same entries have different snapshots")
	}
	if a.tree.Load().Digest() != b.tree.Load().Digest() {
		t.Fatal("digests differ")
	}
	if len(ra) != len(rb) {
		t.Fatalf("result counts %d vs %d", len(ra), len(rb))
	}
	// zxids: term 3, counter from 1, one per entry, failed writes included.
	for i, r := range ra {
		if r.Zxid>>32 != 3 {
			t.Errorf("result %d zxid 0x%x not in term 3", i, r.Zxid)
		}
	}
	if got, want := a.tree.Load().LastZxid(), int64(3<<32|uint64(len(script()))); got != want {
		t.Errorf("LastZxid = 0x%x, want 0x%x", got, want)
	}
}

func TestFSMResults(t *testing.T) {
	f := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	var closed []int64
	f.onSessionClosed = func(id int64) { closed = append(closed, id) }
	res := applyAll(t, f, script(), 1)
	// Entries 0..1 sessions, 2 create, 3..7 sequential creates, 8 set ok,
	// 9 set with stale version, (10 is the expiry: no result), 11 delete.
	if res[0].SessionID != 11 || res[1].SessionID != 12 {
		t.Errorf("session ids %d, %d", res[0].SessionID, res[1].SessionID)
	}
	if cr, ok := res[2].Resp.(*jute.CreateResponse); !ok || cr.Path != "/locks" {
		t.Errorf("create result %+v", res[2])
	}
	for i := 3; i < 8; i++ {
		want := fmt.Sprintf("/locks/lock-%010d", i-3)
		if cr, ok := res[i].Resp.(*jute.Create2Response); !ok || cr.Path != want {
			t.Errorf("sequential create %d: %+v, want %s", i, res[i].Resp, want)
		}
	}
	if sr, ok := res[8].Resp.(*jute.SetDataResponse); !ok || sr.Stat.Version != 1 {
		t.Errorf("setData result %+v", res[8])
	}
	if code := codeOf(res[9].Err); code != jute.CodeBadVersion {
		t.Errorf("stale setData: %v (%d)", res[9].Err, code)
	}
	// Session 11 expired: it is gone, and a write in its name is refused.
	if !errors.Is(res[10].Err, ErrUnknownSession) {
		t.Errorf("write of an expired session: %v", res[10].Err)
	}
	if len(closed) != 1 || closed[0] != 11 {
		t.Errorf("closed sessions %v", closed)
	}
	kids, _, err := f.tree.Load().GetChildren("/locks", nil, nil)
	if err != nil || len(kids) != 2 {
		t.Errorf("after expiry of 11, /locks has %v (%v); want 2 of session 12", kids, err)
	}
}

func TestFSMSnapshotRestore(t *testing.T) {
	a := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	applyAll(t, a, script(), 2)
	data := snapshotBytes(t, a)
	b := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	if err := b.Restore(nopCloser{bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, b), data) {
		t.Fatal("restored FSM snapshots differently")
	}
	if _, ok := b.sessionTimeout(12); !ok {
		t.Fatal("session 12 lost in restore")
	}
	// The zxid counter continues.
	var got Result
	b.onApplied = func(_, _ uint64, r Result) { got = r }
	e := &entry{kind: kindRequest, req: Request{Op: jute.OpCloseSession, SessionID: 12}}
	b.Apply(&raft.Log{Term: 2, Data: e.encode()})
	if want := a.tree.Load().LastZxid() + 1; got.Zxid != want {
		t.Fatalf("zxid after restore 0x%x, want 0x%x", got.Zxid, want)
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func openNode(t *testing.T, dir string, opts ...func(*Config)) *Node {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Dir = dir
	cfg.TickTime = 50 * time.Millisecond
	cfg.Logger = zaptest.NewLogger(t)
	for _, o := range opts {
		o(&cfg)
	}
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNodeRestartKeepsWritesAndSessions(t *testing.T) {
	dir := t.TempDir()
	n := openNode(t, dir)
	s := n.Submit(&Request{Op: jute.OpCreateSession, Timeout: 30000}).Wait()
	if s.Err != nil {
		t.Fatal(s.Err)
	}
	var futures []*Future
	for i := 0; i < 50; i++ {
		body := jute.Encode(&jute.CreateRequest{Path: fmt.Sprintf("/n%d", i), Data: []byte("d"), Acl: []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}, Flags: jute.ModeEphemeral})
		futures = append(futures, n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: body}))
	}
	var last int64
	for i, f := range futures {
		r := f.Wait()
		if r.Err != nil {
			t.Fatalf("create %d: %v", i, r.Err)
		}
		if r.Zxid <= last {
			t.Fatalf("zxid 0x%x after 0x%x: not increasing in submit order", r.Zxid, last)
		}
		last = r.Zxid
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	n = openNode(t, dir)
	defer n.Close()
	if _, ok := n.SessionTimeout(s.SessionID); !ok {
		t.Fatal("session lost across restart")
	}
	// The clean close left a snapshot covering every write.
	// (Packed requests share entries: the snapshot's zxid, not its raft
	// index, tells that it covers them.)
	if m := n.Stats().Store; m.Snapshots == 0 || n.LastSnapshotZxid() < last {
		t.Fatalf("no snapshot at close covering zxid 0x%x: %d snapshots, last at zxid 0x%x", last, m.Snapshots, n.LastSnapshotZxid())
	}
	if got := n.Tree().EphemeralCount(); got != 50 {
		t.Fatalf("%d ephemerals after restart, want 50", got)
	}
	if n.LastZxid() < last {
		t.Fatalf("LastZxid 0x%x went back from 0x%x", n.LastZxid(), last)
	}
	// Nobody touches the session: the new leader expires it after its
	// timeout, which it restarted at election.
	if !n.Touch(s.SessionID) {
		t.Fatal("restarted leader does not track the session")
	}
}

func TestNodeExpiresUntouchedSession(t *testing.T) {
	closed := make(chan int64, 1)
	n := openNode(t, t.TempDir(), func(c *Config) { c.OnSessionClosed = func(id int64) { closed <- id } })
	defer n.Close()
	s := n.Submit(&Request{Op: jute.OpCreateSession, Timeout: 200}).Wait()
	if s.Err != nil {
		t.Fatal(s.Err)
	}
	select {
	case id := <-closed:
		if id != s.SessionID {
			t.Fatalf("closed 0x%x, want 0x%x", id, s.SessionID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("session not expired")
	}
}

// TestLeaderStallRestartsSessionClocks: a leader whose expiry tick finds
// the clock moved past every session's timeout since the last tick (its
// process was stopped) restarts the sessions' clocks instead of expiring
// them; at a normal pace it then expires the untouched session.
func TestLeaderStallRestartsSessionClocks(t *testing.T) {
	clk := session.NewFakeClock(time.Unix(1_000_000, 0))
	closed := make(chan int64, 1)
	n := openNode(t, t.TempDir(), func(c *Config) {
		c.clock = clk
		c.OnSessionClosed = func(id int64) { closed <- id }
	})
	defer n.Close()
	s := n.Submit(&Request{Op: jute.OpCreateSession, Timeout: 200}).Wait()
	if s.Err != nil {
		t.Fatal(s.Err)
	}
	// 10 s pass between two ticks, as over a SIGSTOP of the leader.
	clk.Advance(10 * time.Second)
	jumped := clk.Now()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		d, ok := n.tracker.Deadline(s.SessionID)
		if !ok {
			t.Fatalf("session 0x%x expired by the first tick after the leader's stall", s.SessionID)
		}
		if d.After(jumped) {
			break // its clock restarted
		}
		if time.Now().After(deadline) {
			t.Fatalf("session 0x%x: deadline %v, not restarted after the stall to %v", s.SessionID, d, jumped)
		}
	}
	select {
	case id := <-closed:
		t.Fatalf("session 0x%x closed after the leader's stall", id)
	default:
	}
	// Time goes on at a normal pace and nobody touches the session.
	for deadline := time.Now().Add(10 * time.Second); ; {
		clk.Advance(50 * time.Millisecond)
		select {
		case id := <-closed:
			if id != s.SessionID {
				t.Fatalf("closed 0x%x, want 0x%x", id, s.SessionID)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("untouched session not expired after the stall")
		}
	}
}

func TestNodeSubmitAfterClose(t *testing.T) {
	n := openNode(t, t.TempDir())
	n.Close()
	if r := n.Submit(&Request{Op: jute.OpCreateSession, Timeout: 1000}).Wait(); !errors.Is(r.Err, ErrStopped) {
		t.Fatalf("submit after close: %v", r.Err)
	}
}

// TestNodeRestartFromSnapshotAndTail: writes before a snapshot come back
// from the snapshot, writes after it from the log tail, and the log is
// trimmed behind the snapshot.
func TestNodeRestartFromSnapshotAndTail(t *testing.T) {
	dir := t.TempDir()
	trail := func(c *Config) { c.SnapshotThreshold, c.TrailingLogs = 1<<40, 10 }
	n := openNode(t, dir, trail)
	if err := n.raft.ReloadConfig(raft.ReloadableConfig{TrailingLogs: 10, SnapshotInterval: time.Hour, SnapshotThreshold: 1 << 40, HeartbeatTimeout: 50 * time.Millisecond, ElectionTimeout: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	s := n.Submit(&Request{Op: jute.OpCreateSession, Timeout: 30000}).Wait()
	create := func(i int) {
		body := jute.Encode(&jute.CreateRequest{Path: fmt.Sprintf("/n%d", i), Data: []byte(fmt.Sprint(i)), Acl: []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}})
		if r := n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: body}).Wait(); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if got := n.LastSnapshotZxid(); got != -1 {
		t.Fatalf("fresh node LastSnapshotZxid 0x%x, want -1", got)
	}
	for i := 0; i < 100; i++ {
		create(i)
	}
	before := n.LastZxid()
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if got := n.LastSnapshotZxid(); got != before {
		t.Fatalf("LastSnapshotZxid 0x%x, want 0x%x", got, before)
	}
	for i := 100; i < 120; i++ {
		create(i)
	}
	m := n.Stats().Store
	if m.FirstIndex <= 1 {
		t.Fatalf("log not trimmed behind the snapshot: first index %d", m.FirstIndex)
	}
	digest := n.Tree().Digest()
	zxid := n.LastZxid()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = openNode(t, dir, trail)
	defer n.Close()
	if got := n.Tree().Digest(); got != digest {
		t.Fatalf("tree digest after restart %x, want %x", got, digest)
	}
	if n.LastZxid() != zxid {
		t.Fatalf("LastZxid after restart 0x%x, want 0x%x", n.LastZxid(), zxid)
	}
	if _, ok := n.SessionTimeout(s.SessionID); !ok {
		t.Fatal("session lost")
	}
}

// TestFSMRestoresVersion1Snapshot: snapshots written before the applied
// index was recorded still restore.
func TestFSMRestoresVersion1Snapshot(t *testing.T) {
	a := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	applyAll(t, a, script(), 2)
	v3 := snapshotBytes(t, a)
	if a.applied.Load() == 0 || string(v3[:8]) != snapshotMagic {
		t.Fatalf("applied index %d, magic %q", a.applied.Load(), v3[:8])
	}
	// Without a fencing key, version 3 differs from 2 by the -1 length
	// after the applied index.
	v2 := append(append([]byte(snapshotMagicV2), v3[8:16]...), v3[20:]...)
	v1 := append([]byte(snapshotMagicV1), v2[16:]...)
	b := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	if err := b.Restore(nopCloser{bytes.NewReader(v1)}); err != nil {
		t.Fatal(err)
	}
	if b.tree.Load().Digest() != a.tree.Load().Digest() || b.applied.Load() != 0 {
		t.Fatalf("v1 restore: digest %x vs %x, applied %d", b.tree.Load().Digest(), a.tree.Load().Digest(), b.applied.Load())
	}
	c := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	if err := c.Restore(nopCloser{bytes.NewReader(v2)}); err != nil || c.applied.Load() != a.applied.Load() {
		t.Fatalf("v2 restore: applied %d, want %d (%v)", c.applied.Load(), a.applied.Load(), err)
	}
}

// TestNodeForwardedRequests: a request proposed for another origin does
// not complete this member's futures; one proposed with this member's
// BootID and a registered seq completes it on apply; Fail completes a
// registered future once.
func TestNodeForwardedRequests(t *testing.T) {
	n := openNode(t, t.TempDir())
	defer n.Close()
	sess := n.Submit(&Request{Op: jute.OpCreateSession, Timeout: 30000}).Wait().SessionID
	create := func(p string) *Request {
		return &Request{Op: jute.OpCreate, SessionID: sess, Body: jute.Encode(&jute.CreateRequest{Path: p,
			Acl: []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}})}
	}
	seq, f := n.Register()
	if err := n.SubmitFor(n.BootID()+2, seq, create("/other"))(); err != nil {
		t.Fatal(err)
	}
	if err := n.SubmitFor(n.BootID(), seq, create("/mine"))(); err != nil {
		t.Fatal(err)
	}
	res := f.Wait()
	if res.Err != nil || res.Resp.(*jute.CreateResponse).Path != "/mine" {
		t.Fatalf("forwarded result %+v", res)
	}
	if n.AppliedIndex() == 0 {
		t.Fatal("applied index not recorded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	idx, err := n.SyncIndex(ctx)
	if err != nil || idx == 0 {
		t.Fatalf("SyncIndex %d, %v", idx, err)
	}
	if err := n.WaitApplied(ctx, idx); err != nil {
		t.Fatal(err)
	}
	seq2, f2 := n.Register()
	n.Fail(seq2, ErrNotLeader)
	n.Fail(seq2, ErrStopped)
	if r := f2.Wait(); !errors.Is(r.Err, ErrNotLeader) {
		t.Fatalf("failed future: %v", r.Err)
	}
	// Standalone, reconfig is unimplemented, as in ZooKeeper.
	r := n.Submit(&Request{Op: jute.OpReconfig, SessionID: sess, Body: jute.Encode(&jute.ReconfigRequest{LeavingServers: "2", CurConfigId: -1})}).Wait()
	if !errors.Is(r.Err, jute.CodeUnimplemented) {
		t.Fatalf("standalone reconfig: %v, want Unimplemented", r.Err)
	}
	if n.Mode() != "standalone" || !n.Standalone() || !n.IsLeader() {
		t.Fatalf("mode %q standalone %v leader %v", n.Mode(), n.Standalone(), n.IsLeader())
	}
}

// TestFSMErrorTxns: requests ZooKeeper refuses in PrepRequestProcessor
// still consume a zxid and answer ZooKeeper's code.
func TestFSMErrorTxns(t *testing.T) {
	world := []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}
	multi := func(ops ...jute.MultiOp) []byte { return jute.Encode(&jute.MultiRequest{Ops: ops}) }
	ttlCreate := jute.MultiOp{Type: jute.OpCreate, Req: &jute.CreateRequest{Path: "/t", Acl: world, Flags: jute.ModePersistentWithTTL}}
	tests := []struct {
		name string
		req  Request
		want jute.Code
		// wantResults, when set, is the per-op codes of a failed multi.
		wantResults []jute.Code
	}{
		{"malformed body", Request{Op: jute.OpCreate, Body: []byte{0, 0, 0}}, jute.CodeMarshallingError, nil},
		{"reads in a write multi", Request{Op: jute.OpMulti, Body: multi(jute.MultiOp{Type: jute.OpGetData, Req: &jute.GetDataRequest{Path: "/"}})}, jute.CodeMarshallingError, nil},
		{"TTL mode in a plain create of a multi", Request{Op: jute.OpMulti, Body: multi(ttlCreate)}, jute.CodeMarshallingError, nil},
		{"TTL mode after a failing op", Request{Op: jute.OpMulti, Body: multi(
			jute.MultiOp{Type: jute.OpDelete, Req: &jute.DeleteRequest{Path: "/missing", Version: -1}}, ttlCreate)},
			jute.CodeOK, []jute.Code{jute.CodeNoNode, jute.CodeRuntimeInconsistency}},
		{"rejected", Request{Op: jute.OpReconfig, Reject: jute.CodeReconfigDisabled}, jute.CodeReconfigDisabled, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
			es := []*entry{{kind: kindRequest, req: Request{Op: jute.OpCreateSession, SessionID: 7, Timeout: 4000}}}
			req := tc.req
			req.SessionID = 7
			es = append(es, &entry{kind: kindRequest, req: req})
			res := applyAll(t, f, es, 1)
			r := res[1]
			if got := codeOf(r.Err); got != tc.want {
				t.Fatalf("code %v (%v), want %v", got, r.Err, tc.want)
			}
			if r.Zxid != 1<<32|2 || f.tree.Load().LastZxid() != r.Zxid {
				t.Fatalf("zxid 0x%x, tree at 0x%x: the refused write must consume its zxid", r.Zxid, f.tree.Load().LastZxid())
			}
			if tc.wantResults != nil {
				mr := r.Resp.(*jute.MultiResponse)
				for i, want := range tc.wantResults {
					if mr.Results[i].Type != jute.OpError || mr.Results[i].Err != want {
						t.Fatalf("result %d: %+v, want error %v", i, mr.Results[i], want)
					}
				}
			}
		})
	}
}

func TestConfigVersion(t *testing.T) {
	for in, want := range map[string]int64{
		"server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\nversion=0": 0,
		"server.1=a:1:2:participant;0.0.0.0:2181\nversion=100000003\n":     0x100000003,
		"no version here": 0,
	} {
		if got := configVersion([]byte(in)); got != want {
			t.Errorf("configVersion(%q) = 0x%x, want 0x%x", in, got, want)
		}
	}
}

// TestDecodeEntryWithoutReject: log entries written before Request.Reject
// existed still decode (Reject 0).
func TestDecodeEntryWithoutReject(t *testing.T) {
	e := &entry{kind: kindRequest, req: Request{Op: jute.OpDelete, SessionID: 5, Body: []byte{1, 2}}}
	b := e.encode()
	old := b[:len(b)-4] // without the trailing Reject
	got, err := decodeEntry(old)
	if err != nil {
		t.Fatal(err)
	}
	if got.req.Reject != 0 || got.req.Op != jute.OpDelete || len(got.req.Body) != 2 {
		t.Fatalf("decoded %+v", got.req)
	}
}

// failAtEnd reads r, then fails with err instead of io.EOF, as the
// store's snapshot reader does when the checksum disagrees.
type failAtEnd struct {
	r   io.Reader
	err error
}

func (f *failAtEnd) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

func (f *failAtEnd) Close() error { return nil }

// TestFSMRestoreReadsToTheEnd: a snapshot whose stream fails only at its
// end (a checksum mismatch) fails the restore, and the tree is not
// replaced: the check at the end must be reached.
func TestFSMRestoreReadsToTheEnd(t *testing.T) {
	a := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	applyAll(t, a, script(), 2)
	data := snapshotBytes(t, a)
	b := newFSM(datatree.DefaultConfig(), zaptest.NewLogger(t))
	before := b.tree.Load().Digest()
	err := b.Restore(&failAtEnd{bytes.NewReader(data), store.ErrSnapshotCorrupt})
	if !errors.Is(err, store.ErrSnapshotCorrupt) {
		t.Fatalf("Restore = %v, want the reader's ErrSnapshotCorrupt", err)
	}
	if b.tree.Load().Digest() != before {
		t.Fatal("a snapshot that failed its check replaced the tree")
	}
}
