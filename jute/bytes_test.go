package jute

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// unhex decodes hex written with spaces for readability.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExactBytes checks encodings against bytes worked out by hand from
// zookeeper.jute and the multi framing, independent of the golden frames.
func TestExactBytes(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
		hex  string
	}{
		{"ConnectRequest/no readOnly", &ConnectRequest{ProtocolVersion: 0, LastZxidSeen: 0x0102, TimeOut: 4000, SessionId: 0x0a, Passwd: []byte{0xaa, 0xbb}},
			"00000000 0000000000000102 00000fa0 000000000000000a 00000002 aabb"},
		{"ConnectRequest/readOnly", &ConnectRequest{TimeOut: 1, Passwd: []byte{}, ReadOnly: true, HasReadOnly: true},
			"00000000 0000000000000000 00000001 0000000000000000 00000000 01"},
		{"ConnectResponse/readOnly false", &ConnectResponse{TimeOut: 2, SessionId: -1, Passwd: nil, HasReadOnly: true},
			"00000000 00000002 ffffffffffffffff ffffffff 00"},
		{"CreateRequest", &CreateRequest{Path: "/a", Data: []byte("x"), Acl: []ACL{{Perms: 31, Id: Id{Scheme: "world", Id: "anyone"}}}, Flags: 3},
			"00000002 2f61 00000001 78 00000001 0000001f 00000005 776f726c64 00000006 616e796f6e65 00000003"},
		{"CreateTTLRequest/null acl", &CreateTTLRequest{Path: "/t", Data: nil, Acl: nil, Flags: 5, Ttl: 1000},
			"00000002 2f74 ffffffff ffffffff 00000005 00000000000003e8"},
		{"WatcherEvent", &WatcherEvent{Type: EventNodeDeleted, State: StateSyncConnected, Path: "/x"},
			"00000002 00000003 00000002 2f78"},
		{"ReplyHeader", &ReplyHeader{Xid: -2, Zxid: 0x10, Err: CodeNoNode},
			"fffffffe 0000000000000010 ffffff9b"},
		{"GetChildrenResponse", &GetChildrenResponse{Children: []string{"a", ""}},
			"00000002 00000001 61 00000000"},
		{"SetWatches2/nil vectors", &SetWatches2{RelativeZxid: 1},
			"0000000000000001 ffffffff ffffffff ffffffff ffffffff ffffffff"},
		{"AuthPacket", &AuthPacket{Type: 0, Scheme: "ip", Auth: []byte{}},
			"00000000 00000002 6970 00000000"},
		{"MultiRequest/delete", &MultiRequest{Ops: []MultiOp{{Type: OpDelete, Req: &DeleteRequest{Path: "/d", Version: -1}}}},
			"00000002 00 ffffffff 00000002 2f64 ffffffff   ffffffff 01 ffffffff"},
		{"MultiRequest/empty", &MultiRequest{},
			"ffffffff 01 ffffffff"},
		{"MultiResponse/failed", &MultiResponse{Results: []MultiResult{{Type: OpError, Err: CodeOK}, {Type: OpError, Err: CodeNodeExists}}},
			"ffffffff 00 00000000 00000000   ffffffff 00 ffffff92 ffffff92   ffffffff 01 ffffffff"},
		{"MultiResponse/create and check", &MultiResponse{Results: []MultiResult{{Type: OpCreate, Resp: &CreateResponse{Path: "/c"}}, {Type: OpCheck}}},
			"00000001 00 00000000 00000002 2f63   0000000d 00 00000000   ffffffff 01 ffffffff"},
		{"ErrorResponse", &ErrorResponse{Err: CodeRuntimeInconsistency}, "fffffffe"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			if got := Encode(tc.rec); !bytes.Equal(got, want) {
				t.Fatalf("Encode:\n got %x\nwant %x", got, want)
			}
			got := newLike(tc.rec)
			if err := Decode(want, got); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.rec) {
				t.Fatalf("Decode:\n got %#v\nwant %#v", got, tc.rec)
			}
		})
	}
}

// TestLenientDecode covers inputs ZooKeeper accepts that the Encoder never
// writes: they decode, but Canonical reports false.
func TestLenientDecode(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
		hex  string
		want Record
	}{
		{"bool byte 2", &GetDataRequest{}, "00000001 2f 02", &GetDataRequest{Path: "/", Watch: true}},
		{"null path", &SyncRequest{}, "ffffffff", &SyncRequest{Path: ""}},
		{"multi op header err 0", &MultiRequest{}, "00000002 00 00000000 00000001 2f 00000001 ffffffff 01 ffffffff",
			&MultiRequest{Ops: []MultiOp{{Type: OpDelete, Req: &DeleteRequest{Path: "/", Version: 1}}}}},
		{"multi end header type 0", &MultiRequest{}, "00000000 01 00000000", &MultiRequest{}},
		{"multi result header err on success", &MultiResponse{}, "0000000d 00 00000005 ffffffff 01 ffffffff",
			&MultiResponse{Results: []MultiResult{{Type: OpCheck}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(unhex(t, tc.hex))
			tc.rec.Decode(d)
			if d.Err() != nil || d.Remaining() != 0 {
				t.Fatalf("decode: err %v, %d left", d.Err(), d.Remaining())
			}
			if d.Canonical() {
				t.Fatalf("Canonical() = true for a lenient form")
			}
			if !reflect.DeepEqual(tc.rec, tc.want) {
				t.Fatalf("got %#v, want %#v", tc.rec, tc.want)
			}
		})
	}
}
