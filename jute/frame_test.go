package jute

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestAppendFrame(t *testing.T) {
	tests := []struct {
		name string
		pre  []byte
		recs []Record
		hex  string
	}{
		{"ping reply", nil, []Record{&ReplyHeader{Xid: XidPing, Zxid: 5}},
			"00000010 fffffffe 0000000000000005 00000000"},
		{"header and body after existing bytes", []byte{0xee}, []Record{&ReplyHeader{Xid: 1, Zxid: 2}, &SyncResponse{Path: "/"}},
			"ee 00000015 00000001 0000000000000002 00000000 00000001 2f"},
		{"error reply skips nil body", nil, []Record{&ReplyHeader{Xid: 3, Zxid: 4, Err: CodeNoNode}, nil},
			"00000010 00000003 0000000000000004 ffffff9b"},
		{"empty", nil, nil, "00000000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := AppendFrame(tc.pre, tc.recs...), unhex(t, tc.hex); !bytes.Equal(got, want) {
				t.Fatalf("got %x, want %x", got, want)
			}
		})
	}
}

// TestDecodeConnectRequest mirrors what a real ZooKeeper 3.8 accepted when
// probed with raw connect frames: trailing bytes after readOnly are
// ignored, short passwords are fine, truncated fields are not.
func TestDecodeConnectRequest(t *testing.T) {
	base := "00000000 0000000000000007 00002710 0000000000000000 00000002 abcd"
	tests := []struct {
		name     string
		hex      string
		readOnly bool
		has      bool
		err      error
	}{
		{"no readOnly", base, false, false, nil},
		{"readOnly 1", base + "01", true, true, nil},
		{"readOnly and extra bytes", base + "00 0000000000", false, true, nil},
		{"null passwd", "00000000 0000000000000007 00002710 0000000000000000 ffffffff", false, false, nil},
		{"truncated", "00000000 0000000000000007 00002710 00000000", false, false, ErrShort},
		{"passwd longer than frame", "00000000 0000000000000007 00002710 0000000000000000 00000010 abcd", false, false, ErrBadLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeConnectRequest(unhex(t, tc.hex))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.LastZxidSeen != 7 || r.TimeOut != 10000 || r.ReadOnly != tc.readOnly || r.HasReadOnly != tc.has {
				t.Fatalf("got %+v", r)
			}
		})
	}
}

// TestDecodeRequest follows what a real ZooKeeper 3.8 did with raw request
// bodies: unknown opcodes are ErrUnknownOp, trailing bytes are ignored, and
// multi kinds must match the opcode.
func TestDecodeRequest(t *testing.T) {
	end := "ffffffff 01 ffffffff"
	getData := "00000004 00 ffffffff 00000001 2f 00"
	del := "00000002 00 ffffffff 00000005 2f6e6f7065 ffffffff"
	tests := []struct {
		name string
		op   int32
		hex  string
		want Record
		err  error
	}{
		{"getData", OpGetData, "00000001 2f 01", &GetDataRequest{Path: "/", Watch: true}, nil},
		{"getData trailing bytes", OpGetData, "00000001 2f 00 6a756e6b", &GetDataRequest{Path: "/"}, nil},
		{"ping", OpPing, "", nil, nil},
		{"closeSession", OpCloseSession, "", nil, nil},
		{"unknown 23", 23, "", nil, ErrUnknownOp},
		{"unknown 10", 10, "", nil, ErrUnknownOp},
		{"notification", OpNotification, "", nil, ErrUnknownOp},
		{"truncated exists", OpExists, "0000", nil, ErrShort},
		{"multi empty", OpMulti, end, &MultiRequest{}, nil},
		{"multiRead empty", OpMultiRead, end, &MultiRequest{}, nil},
		{"multi delete", OpMulti, del + end, &MultiRequest{Ops: []MultiOp{{Type: OpDelete, Req: &DeleteRequest{Path: "/nope", Version: -1}}}}, nil},
		{"multi trailing bytes", OpMulti, del + end + "7a7a", &MultiRequest{Ops: []MultiOp{{Type: OpDelete, Req: &DeleteRequest{Path: "/nope", Version: -1}}}}, nil},
		{"multi mixed", OpMulti, getData + del + end, nil, ErrMixedMulti},
		{"multi with reads only", OpMulti, getData + end, nil, ErrMixedMulti},
		{"multiRead with delete", OpMultiRead, del + end, nil, ErrMixedMulti},
		{"multi exists op", OpMulti, "00000003 00 ffffffff 00000001 2f 00" + end, nil, ErrBadMultiOp},
		{"multi no end", OpMulti, del, nil, ErrShort},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeRequest(tc.op, unhex(t, tc.hex))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}
