package jute

import (
	"bytes"
	"testing"
)

func benchRecords() []struct {
	name string
	rec  Record
} {
	multi := &MultiRequest{}
	for i := 0; i < 10; i++ {
		multi.Ops = append(multi.Ops, MultiOp{Type: OpCreate, Req: &CreateRequest{Path: "/bench/node-0000000001", Data: []byte("0123456789"), Acl: testACLs[:1], Flags: ModePersistent}})
	}
	multiResp := &MultiResponse{}
	for i := 0; i < 10; i++ {
		multiResp.Results = append(multiResp.Results, MultiResult{Type: OpCreate2, Resp: &Create2Response{Path: "/bench/node-0000000001", Stat: testStat}})
	}
	return []struct {
		name string
		rec  Record
	}{
		{"rec=RequestHeader", &RequestHeader{Xid: 42, Type: OpGetData}},
		{"rec=ReplyHeader", &ReplyHeader{Xid: 42, Zxid: 0x100000007, Err: CodeOK}},
		{"rec=Stat", &testStat},
		{"rec=GetDataRequest", &GetDataRequest{Path: "/locks/lock-0000000042", Watch: true}},
		{"rec=GetDataResponse/size=1KiB", &GetDataResponse{Data: bytes.Repeat([]byte("x"), 1024), Stat: testStat}},
		{"rec=CreateRequest", &CreateRequest{Path: "/locks/lock-0000000042", Data: []byte("owner"), Acl: testACLs[:1], Flags: ModeEphemeralSequential}},
		{"rec=SetDataRequest/size=1KiB", &SetDataRequest{Path: "/config/app", Data: bytes.Repeat([]byte("x"), 1024), Version: -1}},
		{"rec=MultiRequest/ops=10", multi},
		{"rec=MultiResponse/ops=10", multiResp},
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, bc := range benchRecords() {
		b.Run(bc.name, func(b *testing.B) {
			e := NewEncoder(make([]byte, 0, 4096))
			b.SetBytes(int64(len(Encode(bc.rec))))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e.Reset()
				bc.rec.Encode(e)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, bc := range benchRecords() {
		b.Run(bc.name, func(b *testing.B) {
			in := Encode(bc.rec)
			r := newLike(bc.rec)
			d := NewDecoder(nil)
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d.Reset(in)
				r.Decode(d)
				if d.Err() != nil {
					b.Fatal(d.Err())
				}
			}
		})
	}
}

func TestDecodeInternsACLStrings(t *testing.T) {
	// A create with the common world:anyone ACL decodes its scheme and id
	// without allocating them: two allocations fewer than the same
	// request with strings that are not interned.
	allocs := func(scheme, id string) float64 {
		in := Encode(&CreateRequest{Path: "/locks/lock-0000000042", Data: []byte("owner"),
			Acl: []ACL{{Perms: PermAll, Id: Id{Scheme: scheme, Id: id}}}, Flags: ModeEphemeralSequential})
		d := NewDecoder(nil)
		return testing.AllocsPerRun(100, func() {
			var r CreateRequest
			d.Reset(in)
			r.Decode(d)
		})
	}
	interned, other := allocs("world", "anyone"), allocs("worle", "anyonf")
	if other-interned != 2 {
		t.Fatalf("allocations decoding a create: %v with world:anyone, %v otherwise; want 2 fewer", interned, other)
	}
}
