package jute

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// goldenFrame is one frame recorded between a real client and a real
// ZooKeeper 3.8 by jute/internal/goldengen.
type goldenFrame struct {
	name   string // file name
	key    string // client/label/n: the n-th frame with that label, stable across regenerations
	client string // gozk, kazoo, zkcli or java
	toSrv  bool
	op     string // OpName of the request, or "connect" or "event"
	err    Code   // reply error from the name's _errN suffix
	body   []byte // frame without its length prefix
}

func loadGolden(t testing.TB) []goldenFrame {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden frames in testdata/golden; run go run ./jute/internal/goldengen")
	}
	var out []goldenFrame
	seen := map[string]int{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		parts := strings.Split(strings.TrimSuffix(name, ".bin"), "_")
		if len(parts) < 4 {
			t.Fatalf("%s: bad golden file name", name)
		}
		g := goldenFrame{name: name, client: parts[0], toSrv: parts[2] == "req", op: parts[3]}
		label := parts[0] + "/" + strings.Join(parts[2:], "_")
		g.key = label + "/" + strconv.Itoa(seen[label])
		seen[label]++
		if len(parts) == 5 {
			n, err := strconv.Atoi(strings.TrimPrefix(parts[4], "err"))
			if err != nil {
				t.Fatalf("%s: bad error suffix", name)
			}
			g.err = Code(n)
		}
		if len(raw) < 4 || int(binary.BigEndian.Uint32(raw)) != len(raw)-4 {
			t.Fatalf("%s: length prefix does not match the frame", name)
		}
		g.body = raw[4:]
		out = append(out, g)
	}
	return out
}

// decodedFrame is a golden frame decoded the way a server (requests) or a
// client (replies) would.
type decodedFrame struct {
	req   *RequestHeader
	reply *ReplyHeader
	body  Record
}

// decodeGolden decodes g fully, failing the test on any error, leftover
// byte or non-canonical form.
func decodeGolden(t *testing.T, g goldenFrame) decodedFrame {
	t.Helper()
	var df decodedFrame
	d := NewDecoder(g.body)
	switch {
	case g.op == "connect" && g.toSrv:
		df.body = &ConnectRequest{}
	case g.op == "connect":
		df.body = &ConnectResponse{}
	case g.toSrv:
		df.req = &RequestHeader{}
		df.req.Decode(d)
		if OpName(df.req.Type) != g.op {
			t.Fatalf("header type %d, file says %s", df.req.Type, g.op)
		}
		body, known := NewRequest(df.req.Type)
		if !known {
			t.Fatalf("NewRequest(%d) says unknown", df.req.Type)
		}
		df.body = body
	default:
		df.reply = &ReplyHeader{}
		df.reply.Decode(d)
		if df.reply.Err != g.err {
			t.Fatalf("reply err %d, file says %d", df.reply.Err, g.err)
		}
		switch {
		case g.op == "event":
			if df.reply.Xid != XidNotification {
				t.Fatalf("event with xid %d", df.reply.Xid)
			}
			df.body = &WatcherEvent{}
		case df.reply.Err != CodeOK:
			// A failed request's reply is the header alone.
		default:
			op, ok := OpByName(g.op)
			if !ok {
				t.Fatalf("unknown op name %q", g.op)
			}
			body, known := NewResponse(op)
			if !known {
				t.Fatalf("NewResponse(%d) says unknown", op)
			}
			df.body = body
		}
	}
	if df.body != nil {
		df.body.Decode(d)
	}
	if d.Err() != nil {
		t.Fatalf("decode: %v", d.Err())
	}
	if d.Remaining() != 0 {
		t.Fatalf("%d bytes left over", d.Remaining())
	}
	if !d.Canonical() {
		t.Fatalf("real frame decoded as non-canonical")
	}
	return df
}

func (df decodedFrame) encode() []byte {
	e := &Encoder{}
	if df.req != nil {
		df.req.Encode(e)
	}
	if df.reply != nil {
		df.reply.Encode(e)
	}
	if df.body != nil {
		df.body.Encode(e)
	}
	return e.Bytes()
}

// TestGolden decodes every frame recorded from real clients and a real
// ZooKeeper 3.8 and re-encodes it byte for byte.
func TestGolden(t *testing.T) {
	frames := loadGolden(t)
	for _, g := range frames {
		t.Run(g.name, func(t *testing.T) {
			df := decodeGolden(t, g)
			if got := df.encode(); !bytes.Equal(got, g.body) {
				t.Fatalf("re-encode differs:\n got %x\nwant %x", got, g.body)
			}
		})
	}
}

// TestGoldenContents checks decoded values of selected real frames, so that a
// codec that round-trips bytes but misreads fields still fails.
func TestGoldenContents(t *testing.T) {
	byKey := map[string]goldenFrame{}
	for _, g := range loadGolden(t) {
		byKey[g.key] = g
	}
	stat := func(r Record) Stat { return reflect.ValueOf(r).Elem().FieldByName("Stat").Interface().(Stat) }
	tests := []struct {
		key   string // client/label/n, see goldenFrame.key
		check func(t *testing.T, df decodedFrame)
	}{
		{"gozk/req_connect/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*ConnectRequest)
			if r.HasReadOnly || r.TimeOut != 4000 || r.SessionId != 0 || len(r.Passwd) != 16 || r.LastZxidSeen != 0 {
				t.Errorf("go-zk connect request: %+v", r)
			}
		}},
		{"gozk/resp_connect/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*ConnectResponse)
			if r.HasReadOnly || r.TimeOut != 4000 || r.SessionId == 0 || len(r.Passwd) != 16 {
				t.Errorf("reply to go-zk connect: %+v", r)
			}
		}},
		{"kazoo/req_connect/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*ConnectRequest)
			if !r.HasReadOnly || r.ReadOnly || r.TimeOut != 10000 {
				t.Errorf("kazoo connect request: %+v", r)
			}
		}},
		{"kazoo/resp_connect/0", func(t *testing.T, df decodedFrame) {
			if r := df.body.(*ConnectResponse); !r.HasReadOnly || r.ReadOnly {
				t.Errorf("reply to kazoo connect: %+v", r)
			}
		}},
		{"zkcli/req_connect/0", func(t *testing.T, df decodedFrame) {
			if r := df.body.(*ConnectRequest); !r.HasReadOnly || r.TimeOut != 30000 {
				t.Errorf("java connect request: %+v", r)
			}
		}},
		{"gozk/req_auth/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*AuthPacket)
			// go-zk sends auth with an ordinary xid; Java clients use XidAuth.
			if df.req.Type != OpAuth || r.Scheme != "digest" || string(r.Auth) != "user:secret" {
				t.Errorf("auth: %+v %+v", df.req, r)
			}
		}},
		{"gozk/req_create/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*CreateRequest)
			want := &CreateRequest{Path: "/golden", Data: []byte("root"), Acl: []ACL{{Perms: PermAll, Id: Id{"world", "anyone"}}}, Flags: ModePersistent}
			if !reflect.DeepEqual(r, want) {
				t.Errorf("create: %+v", r)
			}
		}},
		{"gozk/req_createTTL/0", func(t *testing.T, df decodedFrame) {
			if r := df.body.(*CreateTTLRequest); r.Ttl != 60000 || r.Flags != ModePersistentWithTTL || r.Path != "/golden/ttl" {
				t.Errorf("createTTL: %+v", r)
			}
		}},
		{"gozk/resp_createTTL/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*Create2Response)
			if r.Path != "/golden/ttl" || r.Stat.EphemeralOwner != 0 || r.Stat.DataLength != 1 || r.Stat.Czxid == 0 {
				t.Errorf("createTTL reply: %+v", r)
			}
		}},
		{"gozk/resp_create_err-110/0", func(t *testing.T, df decodedFrame) {
			if df.reply.Err != CodeNodeExists || df.body != nil {
				t.Errorf("create on existing node: %+v", df.reply)
			}
		}},
		{"gozk/resp_getData/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*GetDataResponse)
			if string(r.Data) != "root" || r.Stat.DataLength != 4 || r.Stat.NumChildren != 3 || r.Stat.Cversion != 3 {
				t.Errorf("getData reply: %+v", r)
			}
		}},
		{"gozk/resp_event/0", func(t *testing.T, df decodedFrame) {
			want := &WatcherEvent{Type: EventNodeDataChanged, State: StateSyncConnected, Path: "/golden"}
			if !reflect.DeepEqual(df.body, want) || df.reply.Xid != XidNotification {
				t.Errorf("event: %+v %+v", df.reply, df.body)
			}
		}},
		{"gozk/resp_setData/0", func(t *testing.T, df decodedFrame) {
			if s := stat(df.body); s.Version != 1 || s.DataLength != 2 || s.Mzxid != df.reply.Zxid {
				t.Errorf("setData reply: %+v zxid %d", s, df.reply.Zxid)
			}
		}},
		{"gozk/resp_getChildren2/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*GetChildren2Response)
			if len(r.Children) != 3 || r.Stat.NumChildren != 3 {
				t.Errorf("getChildren2 reply: %+v", r)
			}
		}},
		{"gozk/resp_exists_err-101/0", func(t *testing.T, df decodedFrame) {
			if df.reply.Err != CodeNoNode || df.body != nil {
				t.Errorf("exists on missing node: %+v", df.reply)
			}
		}},
		{"gozk/req_multi/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*MultiRequest)
			types := []int32{OpCreate, OpSetData, OpCheck, OpDelete}
			if len(r.Ops) != len(types) {
				t.Fatalf("multi: %d ops", len(r.Ops))
			}
			for i, op := range r.Ops {
				if op.Type != types[i] {
					t.Errorf("op %d type %d, want %d", i, op.Type, types[i])
				}
			}
			if c := r.Ops[2].Req.(*CheckVersionRequest); c.Path != "/golden" || c.Version != 2 {
				t.Errorf("check op: %+v", c)
			}
		}},
		{"gozk/resp_multi/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*MultiResponse)
			types := []int32{OpCreate, OpSetData, OpCheck, OpDelete}
			if df.reply.Err != CodeOK || len(r.Results) != len(types) {
				t.Fatalf("multi reply: %+v %+v", df.reply, r)
			}
			for i, res := range r.Results {
				if res.Type != types[i] || res.Err != CodeOK {
					t.Errorf("result %d: %+v", i, res)
				}
			}
			if p := r.Results[0].Resp.(*CreateResponse).Path; p != "/golden/m1" {
				t.Errorf("create result path %q", p)
			}
			if r.Results[2].Resp != nil || r.Results[3].Resp != nil {
				t.Errorf("check/delete results carry a body")
			}
		}},
		{"gozk/resp_multi/1", func(t *testing.T, df decodedFrame) {
			r := df.body.(*MultiResponse)
			want := []MultiResult{{Type: OpError, Err: CodeOK}, {Type: OpError, Err: CodeBadVersion}, {Type: OpError, Err: CodeRuntimeInconsistency}}
			if df.reply.Err != CodeOK || !reflect.DeepEqual(r.Results, want) {
				t.Errorf("failed multi reply: %+v %+v", df.reply, r.Results)
			}
		}},
		{"gozk/resp_ping/0", func(t *testing.T, df decodedFrame) {
			if df.reply.Xid != XidPing || df.body != nil {
				t.Errorf("ping reply: %+v", df.reply)
			}
		}},
		{"kazoo/resp_create2/0", func(t *testing.T, df decodedFrame) {
			if r := df.body.(*Create2Response); r.Path != "/kz" || r.Stat.DataLength != 4 {
				t.Errorf("create2 reply: %+v", r)
			}
		}},
		{"kazoo/resp_event/0", func(t *testing.T, df decodedFrame) {
			if e := df.body.(*WatcherEvent); e.Type != EventNodeCreated || e.Path != "/kz/w" {
				t.Errorf("exists watch event: %+v", e)
			}
		}},
		{"zkcli/resp_getEphemerals/0", func(t *testing.T, df decodedFrame) {
			if r := df.body.(*GetEphemeralsResponse); !reflect.DeepEqual(r.Ephemerals, []string{"/zc/e"}) {
				t.Errorf("getEphemerals reply: %+v", r)
			}
		}},
		{"zkcli/resp_getAllChildrenNumber/0", func(t *testing.T, df decodedFrame) {
			if r := df.body.(*GetAllChildrenNumberResponse); r.TotalNumber != 1 {
				t.Errorf("getAllChildrenNumber reply: %+v", r)
			}
		}},
		{"zkcli/req_addWatch/1", func(t *testing.T, df decodedFrame) {
			if r := df.body.(*AddWatchRequest); r.Path != "/zc/e" || r.Mode != AddWatchModePersistent {
				t.Errorf("addWatch: %+v", r)
			}
		}},
		{"gozk/resp_auth/0", func(t *testing.T, df decodedFrame) {
			// ZooKeeper echoes the request's xid and sends zxid 0.
			if df.reply.Xid != 1 || df.reply.Zxid != 0 || df.body != nil {
				t.Errorf("auth reply: %+v", df.reply)
			}
		}},
		{"zkcli/resp_addWatch/0", func(t *testing.T, df decodedFrame) {
			if r := df.body.(*ErrorResponse); r.Err != CodeOK {
				t.Errorf("addWatch reply: %+v", r)
			}
		}},
		{"gozk/req_connect/1", func(t *testing.T, df decodedFrame) {
			// go-zk reconnecting: resumes its session from the last zxid seen.
			if r := df.body.(*ConnectRequest); r.SessionId == 0 || r.LastZxidSeen == 0 || r.HasReadOnly {
				t.Errorf("go-zk reconnect: %+v", r)
			}
		}},
		{"gozk/req_setWatches/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*SetWatches)
			if r.RelativeZxid == 0 || !reflect.DeepEqual(r.ExistWatches, []string{"/golden/later"}) || !reflect.DeepEqual(r.ChildWatches, []string{"/golden"}) || len(r.DataWatches) != 0 {
				t.Errorf("setWatches: %+v", r)
			}
		}},
		{"java/req_auth/0", func(t *testing.T, df decodedFrame) {
			if df.req.Xid != XidAuth || df.body.(*AuthPacket).Scheme != "digest" {
				t.Errorf("java auth: %+v", df.req)
			}
		}},
		{"java/resp_auth/0", func(t *testing.T, df decodedFrame) {
			if df.reply.Xid != XidAuth || df.reply.Zxid != 0 {
				t.Errorf("java auth reply: %+v", df.reply)
			}
		}},
		{"java/req_create2/0", func(t *testing.T, df decodedFrame) {
			if r := df.body.(*CreateRequest); r.Path != "/jv" || string(r.Data) != "j" {
				t.Errorf("java create2: %+v", r)
			}
		}},
		{"java/req_multi/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*MultiRequest)
			if len(r.Ops) != 5 || r.Ops[1].Type != OpCreateTTL || r.Ops[1].Req.(*CreateTTLRequest).Ttl != 1000 || r.IsRead() {
				t.Errorf("java multi: %+v", r)
			}
		}},
		{"java/resp_multi/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*MultiResponse)
			// ZooKeeper reports a createTTL result as create2.
			types := []int32{OpCreate, OpCreate2, OpCheck, OpSetData, OpDelete}
			if len(r.Results) != len(types) {
				t.Fatalf("java multi reply: %+v", r)
			}
			for i, res := range r.Results {
				if res.Type != types[i] {
					t.Errorf("result %d type %d, want %d", i, res.Type, types[i])
				}
			}
			if p := r.Results[0].Resp.(*CreateResponse).Path; p != "/jv/m-0000000002" {
				t.Errorf("sequential create path %q", p)
			}
		}},
		{"java/req_multiRead/0", func(t *testing.T, df decodedFrame) {
			if r := df.body.(*MultiRequest); len(r.Ops) != 3 || !r.IsRead() {
				t.Errorf("multiRead: %+v", r)
			}
		}},
		{"java/resp_multiRead/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*MultiResponse)
			if len(r.Results) != 3 || r.Results[0].Type != OpGetData || r.Results[1].Type != OpGetChildren ||
				r.Results[2] != (MultiResult{Type: OpError, Err: CodeNoNode}) || df.reply.Err != CodeOK {
				t.Errorf("multiRead reply: %+v %+v", df.reply, r)
			}
			if d := r.Results[0].Resp.(*GetDataResponse); string(d.Data) != "x" {
				t.Errorf("multiRead getData: %+v", d)
			}
		}},
		{"java/req_checkWatches/0", func(t *testing.T, df decodedFrame) {
			if r := df.body.(*CheckWatchesRequest); r.Path != "/jv" || r.Type != WatcherTypeChildren {
				t.Errorf("checkWatches: %+v", r)
			}
		}},
		{"java/req_connect/1", func(t *testing.T, df decodedFrame) {
			if r := df.body.(*ConnectRequest); !r.HasReadOnly || r.SessionId == 0 || r.LastZxidSeen == 0 {
				t.Errorf("java reconnect: %+v", r)
			}
		}},
		{"java/req_setWatches2/0", func(t *testing.T, df decodedFrame) {
			r := df.body.(*SetWatches2)
			want := &SetWatches2{RelativeZxid: r.RelativeZxid, DataWatches: []string{"/jv"}, ExistWatches: []string{"/jv/nope"},
				ChildWatches: []string{}, PersistentWatches: []string{}, PersistentRecursiveWatches: []string{"/jv"}}
			if r.RelativeZxid == 0 || !reflect.DeepEqual(r, want) {
				t.Errorf("setWatches2: %+v", r)
			}
		}},
		{"zkcli/resp_whoAmI/0", func(t *testing.T, df decodedFrame) {
			want := []ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}}
			if r := df.body.(*WhoAmIResponse); !reflect.DeepEqual(r.ClientInfo, want) {
				t.Errorf("whoAmI reply: %+v", r)
			}
		}},
		{"zkcli/req_removeWatches/0", func(t *testing.T, df decodedFrame) {
			if r := df.body.(*RemoveWatchesRequest); r.Path != "/zc" || r.Type != WatcherTypeAny {
				t.Errorf("removeWatches: %+v", r)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			g, ok := byKey[tc.key]
			if !ok {
				t.Fatalf("golden frame %s missing", tc.key)
			}
			tc.check(t, decodeGolden(t, g))
		})
	}
}
