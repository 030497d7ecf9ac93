package jute

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var testStat = Stat{
	Czxid: 0x100000002, Mzxid: 0x100000003, Ctime: 1700000000123, Mtime: 1700000000456,
	Version: 3, Cversion: 4, Aversion: 5, EphemeralOwner: 0x1234567890, DataLength: 6,
	NumChildren: 7, Pzxid: 0x100000004,
}

var testACLs = []ACL{
	{Perms: PermAll, Id: Id{Scheme: "world", Id: "anyone"}},
	{Perms: PermRead | PermWrite, Id: Id{Scheme: "digest", Id: "u:Xy+0="}},
}

// sampleRecords returns one populated value of every record type, keyed by a
// name, for round-trip tests, fuzz seeds and benchmarks.
func sampleRecords() []struct {
	name string
	rec  Record
} {
	return []struct {
		name string
		rec  Record
	}{
		{"Id", &Id{Scheme: "ip", Id: "10.0.0.0/8"}},
		{"ACL", &ACL{Perms: PermAdmin, Id: Id{Scheme: "world", Id: "anyone"}}},
		{"Stat", &testStat},
		{"WatcherEvent", &WatcherEvent{Type: EventNodeDataChanged, State: StateSyncConnected, Path: "/a/b"}},
		{"RequestHeader", &RequestHeader{Xid: 7, Type: OpGetData}},
		{"ReplyHeader", &ReplyHeader{Xid: 7, Zxid: 0x300000001, Err: CodeNoNode}},
		{"ConnectRequest", &ConnectRequest{ProtocolVersion: 0, LastZxidSeen: 42, TimeOut: 30000, SessionId: 0x100, Passwd: make([]byte, 16)}},
		{"ConnectRequest/readOnly", &ConnectRequest{LastZxidSeen: 42, TimeOut: 30000, Passwd: []byte("0123456789abcdef"), ReadOnly: true, HasReadOnly: true}},
		{"ConnectResponse", &ConnectResponse{TimeOut: 4000, SessionId: 0x1000001, Passwd: []byte("0123456789abcdef")}},
		{"ConnectResponse/readOnly", &ConnectResponse{TimeOut: 4000, SessionId: 0x1000001, Passwd: []byte("0123456789abcdef"), HasReadOnly: true}},
		{"SetWatches", &SetWatches{RelativeZxid: 9, DataWatches: []string{"/a"}, ExistWatches: []string{}, ChildWatches: []string{"/b", "/c"}}},
		{"SetWatches2", &SetWatches2{RelativeZxid: 9, DataWatches: []string{"/a"}, ExistWatches: []string{"/x"}, ChildWatches: []string{"/b"}, PersistentWatches: []string{"/p"}, PersistentRecursiveWatches: []string{"/r", "/s"}}},
		{"MultiHeader", &MultiHeader{Type: OpError, Done: false, Err: CodeBadVersion}},
		{"AuthPacket", &AuthPacket{Type: 0, Scheme: "digest", Auth: []byte("user:pw")}},
		{"GetDataRequest", &GetDataRequest{Path: "/a", Watch: true}},
		{"SetDataRequest", &SetDataRequest{Path: "/a", Data: []byte("hello"), Version: -1}},
		{"SetDataRequest/nil", &SetDataRequest{Path: "/a", Data: nil, Version: 2}},
		{"ReconfigRequest", &ReconfigRequest{JoiningServers: "server.2=127.0.0.1:2888:3888", LeavingServers: "3", NewMembers: "", CurConfigId: -1}},
		{"SetDataResponse", &SetDataResponse{Stat: testStat}},
		{"GetSASLRequest", &GetSASLRequest{Token: []byte{1, 2, 3}}},
		{"SetSASLRequest", &SetSASLRequest{Token: []byte{4}}},
		{"SetSASLResponse", &SetSASLResponse{Token: []byte{}}},
		{"CreateRequest", &CreateRequest{Path: "/lock-", Data: []byte("x"), Acl: testACLs, Flags: ModeEphemeralSequential}},
		{"CreateTTLRequest", &CreateTTLRequest{Path: "/t", Data: []byte{}, Acl: testACLs[:1], Flags: ModePersistentWithTTL, Ttl: 60000}},
		{"DeleteRequest", &DeleteRequest{Path: "/a", Version: 5}},
		{"GetChildrenRequest", &GetChildrenRequest{Path: "/", Watch: false}},
		{"GetAllChildrenNumberRequest", &GetAllChildrenNumberRequest{Path: "/a"}},
		{"GetChildren2Request", &GetChildren2Request{Path: "/a", Watch: true}},
		{"CheckVersionRequest", &CheckVersionRequest{Path: "/a", Version: 1}},
		{"SyncRequest", &SyncRequest{Path: "/"}},
		{"SyncResponse", &SyncResponse{Path: "/"}},
		{"GetACLRequest", &GetACLRequest{Path: "/a"}},
		{"SetACLRequest", &SetACLRequest{Path: "/a", Acl: testACLs, Version: -1}},
		{"SetACLResponse", &SetACLResponse{Stat: testStat}},
		{"AddWatchRequest", &AddWatchRequest{Path: "/a", Mode: AddWatchModePersistentRecursive}},
		{"ErrorResponse", &ErrorResponse{Err: CodeNodeExists}},
		{"CreateResponse", &CreateResponse{Path: "/lock-0000000001"}},
		{"Create2Response", &Create2Response{Path: "/lock-0000000001", Stat: testStat}},
		{"ExistsRequest", &ExistsRequest{Path: "/a", Watch: true}},
		{"ExistsResponse", &ExistsResponse{Stat: testStat}},
		{"GetDataResponse", &GetDataResponse{Data: []byte("hello"), Stat: testStat}},
		{"GetChildrenResponse", &GetChildrenResponse{Children: []string{"a", "b"}}},
		{"GetAllChildrenNumberResponse", &GetAllChildrenNumberResponse{TotalNumber: 12}},
		{"GetChildren2Response", &GetChildren2Response{Children: []string{}, Stat: testStat}},
		{"GetACLResponse", &GetACLResponse{Acl: testACLs, Stat: testStat}},
		{"CheckWatchesRequest", &CheckWatchesRequest{Path: "/a", Type: WatcherTypeData}},
		{"RemoveWatchesRequest", &RemoveWatchesRequest{Path: "/a", Type: WatcherTypeAny}},
		{"GetEphemeralsRequest", &GetEphemeralsRequest{PrefixPath: "/"}},
		{"GetEphemeralsResponse", &GetEphemeralsResponse{Ephemerals: []string{"/e1", "/e2"}}},
		{"ClientInfo", &ClientInfo{AuthScheme: "ip", User: "127.0.0.1"}},
		{"WhoAmIResponse", &WhoAmIResponse{ClientInfo: []ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}, {AuthScheme: "digest", User: "u"}}}},
		{"GetMaxChildrenRequest", &GetMaxChildrenRequest{Path: "/a"}},
		{"GetMaxChildrenResponse", &GetMaxChildrenResponse{Max: 3}},
		{"SetMaxChildrenRequest", &SetMaxChildrenRequest{Path: "/a", Max: 3}},
		{"MultiRequest", &MultiRequest{Ops: []MultiOp{
			{Type: OpCreate, Req: &CreateRequest{Path: "/a", Data: []byte("1"), Acl: testACLs[:1], Flags: ModePersistent}},
			{Type: OpCreate2, Req: &CreateRequest{Path: "/b", Data: []byte{}, Acl: testACLs[:1], Flags: ModeEphemeral}},
			{Type: OpCreateContainer, Req: &CreateRequest{Path: "/c", Data: []byte{}, Acl: testACLs[:1], Flags: ModeContainer}},
			{Type: OpCreateTTL, Req: &CreateTTLRequest{Path: "/d", Data: []byte{}, Acl: testACLs[:1], Flags: ModePersistentWithTTL, Ttl: 1000}},
			{Type: OpDelete, Req: &DeleteRequest{Path: "/e", Version: -1}},
			{Type: OpSetData, Req: &SetDataRequest{Path: "/f", Data: []byte("2"), Version: 3}},
			{Type: OpCheck, Req: &CheckVersionRequest{Path: "/g", Version: 4}},
		}}},
		{"MultiRequest/read", &MultiRequest{Ops: []MultiOp{
			{Type: OpGetData, Req: &GetDataRequest{Path: "/a"}},
			{Type: OpGetChildren, Req: &GetChildrenRequest{Path: "/b"}},
		}}},
		{"MultiRequest/empty", &MultiRequest{}},
		{"MultiResponse", &MultiResponse{Results: []MultiResult{
			{Type: OpCreate, Resp: &CreateResponse{Path: "/a"}},
			{Type: OpCreate2, Resp: &Create2Response{Path: "/b", Stat: testStat}},
			{Type: OpDelete},
			{Type: OpSetData, Resp: &SetDataResponse{Stat: testStat}},
			{Type: OpCheck},
		}}},
		{"MultiResponse/failed", &MultiResponse{Results: []MultiResult{
			{Type: OpError, Err: CodeOK},
			{Type: OpError, Err: CodeNoNode},
			{Type: OpError, Err: CodeRuntimeInconsistency},
		}}},
		{"MultiResponse/read", &MultiResponse{Results: []MultiResult{
			{Type: OpGetData, Resp: &GetDataResponse{Data: []byte("x"), Stat: testStat}},
			{Type: OpGetChildren, Resp: &GetChildrenResponse{Children: []string{"c"}}},
			{Type: OpError, Err: CodeNoNode},
		}}},
	}
}

// newLike returns a fresh zero record of r's type.
func newLike(r Record) Record {
	return reflect.New(reflect.TypeOf(r).Elem()).Interface().(Record)
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range sampleRecords() {
		t.Run(tc.name, func(t *testing.T) {
			b := Encode(tc.rec)
			got := newLike(tc.rec)
			d := NewDecoder(b)
			got.Decode(d)
			if d.Err() != nil {
				t.Fatalf("decode: %v", d.Err())
			}
			if d.Remaining() != 0 {
				t.Fatalf("%d bytes left over", d.Remaining())
			}
			if !d.Canonical() {
				t.Fatalf("decoder reports non-canonical input for encoder output")
			}
			if !reflect.DeepEqual(got, tc.rec) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", got, tc.rec)
			}
			if b2 := Encode(got); !bytes.Equal(b, b2) {
				t.Fatalf("re-encode differs:\n got %x\nwant %x", b2, b)
			}
			// Every proper prefix must fail to decode, never panic. Records
			// whose encoding may legally stop early (the optional readOnly
			// byte) are allowed to succeed on exactly that prefix.
			for n := 0; n < len(b); n++ {
				if err := Decode(b[:n], newLike(tc.rec)); err == nil {
					if cr, ok := tc.rec.(*ConnectRequest); ok && cr.HasReadOnly && n == len(b)-1 {
						continue
					}
					if cr, ok := tc.rec.(*ConnectResponse); ok && cr.HasReadOnly && n == len(b)-1 {
						continue
					}
					t.Fatalf("prefix of %d/%d bytes decoded without error", n, len(b))
				}
			}
		})
	}
}

func TestNewRequest(t *testing.T) {
	tests := []struct {
		op    int32
		want  Record
		known bool
	}{
		{OpCreate, &CreateRequest{}, true},
		{OpCreate2, &CreateRequest{}, true},
		{OpCreateContainer, &CreateRequest{}, true},
		{OpCreateTTL, &CreateTTLRequest{}, true},
		{OpDelete, &DeleteRequest{}, true},
		{OpExists, &ExistsRequest{}, true},
		{OpGetData, &GetDataRequest{}, true},
		{OpSetData, &SetDataRequest{}, true},
		{OpGetACL, &GetACLRequest{}, true},
		{OpSetACL, &SetACLRequest{}, true},
		{OpGetChildren, &GetChildrenRequest{}, true},
		{OpSync, &SyncRequest{}, true},
		{OpPing, nil, true},
		{OpGetChildren2, &GetChildren2Request{}, true},
		{OpCheck, &CheckVersionRequest{}, true},
		{OpMulti, &MultiRequest{}, true},
		{OpReconfig, &ReconfigRequest{}, true},
		{OpCheckWatches, &CheckWatchesRequest{}, true},
		{OpRemoveWatches, &RemoveWatchesRequest{}, true},
		{OpMultiRead, &MultiRequest{}, true},
		{OpAuth, &AuthPacket{}, true},
		{OpSetWatches, &SetWatches{}, true},
		{OpSASL, &GetSASLRequest{}, true},
		{OpGetEphemerals, &GetEphemeralsRequest{}, true},
		{OpGetAllChildrenNumber, &GetAllChildrenNumberRequest{}, true},
		{OpSetWatches2, &SetWatches2{}, true},
		{OpAddWatch, &AddWatchRequest{}, true},
		{OpWhoAmI, nil, true},
		{OpCloseSession, nil, true},
		{OpCreateSession, nil, false},
		{OpNotification, nil, false},
		{OpDeleteContainer, nil, false},
		{OpError, nil, false},
		{10, nil, false},
		{23, nil, false},
		{108, nil, false},
	}
	for _, tc := range tests {
		got, known := NewRequest(tc.op)
		if known != tc.known || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("NewRequest(%d) = %#v, %v; want %#v, %v", tc.op, got, known, tc.want, tc.known)
		}
		if got != nil {
			got2, _ := NewRequest(tc.op)
			if reflect.ValueOf(got).Pointer() == reflect.ValueOf(got2).Pointer() {
				t.Errorf("NewRequest(%d) returned a shared record", tc.op)
			}
		}
	}
}

func TestMultiDecodeErrors(t *testing.T) {
	hdr := func(e *Encoder, typ int32, done bool, err int32) {
		(&MultiHeader{Type: typ, Done: done, Err: Code(err)}).Encode(e)
	}
	tests := []struct {
		name  string
		build func(e *Encoder)
		rec   Record
		want  error
	}{
		{"request/unknown op", func(e *Encoder) {
			hdr(e, OpExists, false, -1)
			(&ExistsRequest{Path: "/a"}).Encode(e)
			hdr(e, -1, true, -1)
		}, &MultiRequest{}, ErrBadMultiOp},
		{"request/error type not done", func(e *Encoder) { hdr(e, -1, false, -1) }, &MultiRequest{}, ErrBadMultiOp},
		{"request/mixed", func(e *Encoder) {
			hdr(e, OpGetData, false, -1)
			(&GetDataRequest{Path: "/a"}).Encode(e)
			hdr(e, OpDelete, false, -1)
			(&DeleteRequest{Path: "/a"}).Encode(e)
			hdr(e, -1, true, -1)
		}, &MultiRequest{}, ErrMixedMulti},
		{"request/no end", func(e *Encoder) { hdr(e, OpDelete, false, -1); (&DeleteRequest{Path: "/a"}).Encode(e) }, &MultiRequest{}, ErrShort},
		{"response/unknown type", func(e *Encoder) { hdr(e, OpExists, false, 0); hdr(e, -1, true, -1) }, &MultiResponse{}, ErrBadMultiOp},
		{"response/no end", func(e *Encoder) { hdr(e, OpDelete, false, 0) }, &MultiResponse{}, ErrShort},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &Encoder{}
			tc.build(e)
			if err := Decode(e.Bytes(), tc.rec); !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestNewResponse(t *testing.T) {
	tests := []struct {
		op    int32
		want  Record
		known bool
	}{
		{OpCreate, &CreateResponse{}, true},
		{OpCreate2, &Create2Response{}, true},
		{OpCreateContainer, &Create2Response{}, true},
		{OpCreateTTL, &Create2Response{}, true},
		{OpDelete, nil, true},
		{OpExists, &ExistsResponse{}, true},
		{OpGetData, &GetDataResponse{}, true},
		{OpSetData, &SetDataResponse{}, true},
		{OpGetACL, &GetACLResponse{}, true},
		{OpSetACL, &SetACLResponse{}, true},
		{OpGetChildren, &GetChildrenResponse{}, true},
		{OpSync, &SyncResponse{}, true},
		{OpPing, nil, true},
		{OpGetChildren2, &GetChildren2Response{}, true},
		{OpMulti, &MultiResponse{}, true},
		{OpMultiRead, &MultiResponse{}, true},
		{OpReconfig, &GetDataResponse{}, true},
		{OpCheckWatches, nil, true},
		{OpRemoveWatches, nil, true},
		{OpAuth, nil, true},
		{OpSetWatches, nil, true},
		{OpSetWatches2, nil, true},
		{OpSASL, &SetSASLResponse{}, true},
		{OpGetEphemerals, &GetEphemeralsResponse{}, true},
		{OpGetAllChildrenNumber, &GetAllChildrenNumberResponse{}, true},
		{OpAddWatch, &ErrorResponse{}, true},
		{OpWhoAmI, &WhoAmIResponse{}, true},
		{OpCloseSession, nil, true},
		{OpCreateSession, nil, false},
		{OpNotification, nil, false},
		{99, nil, false},
	}
	for _, tc := range tests {
		got, known := NewResponse(tc.op)
		if known != tc.known || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("NewResponse(%d) = %#v, %v; want %#v, %v", tc.op, got, known, tc.want, tc.known)
		}
	}
}

func TestOpName(t *testing.T) {
	tests := []struct {
		op   int32
		name string
	}{
		{OpCreate, "create"}, {OpGetChildren2, "getChildren2"}, {OpMultiRead, "multiRead"},
		{OpSetWatches2, "setWatches2"}, {OpWhoAmI, "whoAmI"}, {OpCloseSession, "closeSession"},
		{OpError, "error"}, {77, "op77"}, {-3, "op-3"},
	}
	for _, tc := range tests {
		if got := OpName(tc.op); got != tc.name {
			t.Errorf("OpName(%d) = %q, want %q", tc.op, got, tc.name)
		}
		op, ok := OpByName(tc.name)
		if isKnown := !strings.HasPrefix(tc.name, "op"); ok != isKnown || (ok && op != tc.op) {
			t.Errorf("OpByName(%q) = %d, %v", tc.name, op, ok)
		}
	}
}
