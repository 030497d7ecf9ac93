package jute

import (
	"bytes"
	"errors"
	"reflect"
	"runtime"
	"testing"
)

// checkDecode decodes b into r and, when that succeeds, checks that the
// result re-encodes to the bytes consumed (when the decoder saw only
// canonical forms) and that the re-encoding decodes to an equal record.
func checkDecode(t *testing.T, b []byte, r Record) {
	d := NewDecoder(b)
	r.Decode(d)
	if d.Err() != nil {
		return
	}
	used := b[:d.Offset()]
	out := Encode(r)
	if d.Canonical() && !bytes.Equal(out, used) {
		t.Fatalf("%T: canonical input re-encodes differently:\n  in %x\n out %x", r, used, out)
	}
	r2 := newLike(r)
	d2 := NewDecoder(out)
	r2.Decode(d2)
	if d2.Err() != nil || d2.Remaining() != 0 || !d2.Canonical() {
		t.Fatalf("%T: re-encoding does not decode cleanly: err %v, %d left, canonical %v", r, d2.Err(), d2.Remaining(), d2.Canonical())
	}
	if !reflect.DeepEqual(r, r2) {
		t.Fatalf("%T: decode(encode(x)) != x:\n%#v\n%#v", r, r, r2)
	}
}

// goldenRequests returns (opcode, body) of every golden request frame.
func goldenRequests(f *testing.F) (ops []int32, bodies [][]byte) {
	for _, g := range loadGolden(f) {
		if !g.toSrv || g.op == "connect" {
			continue
		}
		d := NewDecoder(g.body)
		var h RequestHeader
		h.Decode(d)
		ops = append(ops, h.Type)
		bodies = append(bodies, g.body[d.Offset():])
	}
	return ops, bodies
}

func goldenBodies(f *testing.F, toSrv bool, op string) [][]byte {
	var out [][]byte
	for _, g := range loadGolden(f) {
		if g.toSrv != toSrv || g.op != op {
			continue
		}
		body := g.body
		if op != "connect" {
			if toSrv {
				body = body[8:]
			} else {
				body = body[16:]
			}
		}
		out = append(out, body)
	}
	return out
}

func FuzzDecodeConnectRequest(f *testing.F) {
	for _, b := range goldenBodies(f, true, "connect") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, b, &ConnectRequest{}) })
}

// FuzzDecodeRequest decodes a body the way the server does: a fresh record
// from NewRequest for the header's opcode.
func FuzzDecodeRequest(f *testing.F) {
	ops, bodies := goldenRequests(f)
	for i := range ops {
		f.Add(ops[i], bodies[i])
	}
	for op := int32(-12); op <= 110; op++ {
		if r, known := NewRequest(op); known && r != nil {
			f.Add(op, Encode(r))
		}
	}
	f.Fuzz(func(t *testing.T, op int32, b []byte) {
		if got, err := DecodeRequest(op, b); err == nil && got != nil {
			if _, known := NewRequest(op); !known {
				t.Fatalf("DecodeRequest accepted unknown op %d", op)
			}
		}
		r, known := NewRequest(op)
		if !known || r == nil {
			return
		}
		checkDecode(t, b, r)
	})
}

func FuzzDecodeMultiRequest(f *testing.F) {
	for _, op := range []string{"multi", "multiRead"} {
		for _, b := range goldenBodies(f, true, op) {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, b, &MultiRequest{}) })
}

func FuzzDecodeSetWatches2(f *testing.F) {
	for _, b := range goldenBodies(f, true, "setWatches2") {
		f.Add(b)
	}
	for _, b := range goldenBodies(f, true, "setWatches") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, b, &SetWatches2{}) })
}

func FuzzDecodeAuthPacket(f *testing.F) {
	for _, b := range goldenBodies(f, true, "auth") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, b, &AuthPacket{}) })
}

// FuzzDecodeResponse decodes a reply body the way a client does, with a
// record from NewResponse; compat's clients and zkcli rely on it.
func FuzzDecodeResponse(f *testing.F) {
	for _, g := range loadGolden(f) {
		if g.toSrv || g.op == "connect" || g.op == "event" || g.err != 0 {
			continue
		}
		if op, ok := OpByName(g.op); ok {
			f.Add(op, g.body[16:])
		}
	}
	f.Fuzz(func(t *testing.T, op int32, b []byte) {
		r, known := NewResponse(op)
		if !known || r == nil {
			return
		}
		checkDecode(t, b, r)
	})
}

func FuzzDecodeConnectResponse(f *testing.F) {
	for _, b := range goldenBodies(f, false, "connect") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, b, &ConnectResponse{}) })
}

// TestVectorBounds feeds every vector-bearing record a huge length prefix
// with few bytes behind it: decoding must fail with ErrBadLength before
// allocating for the claimed length.
func TestVectorBounds(t *testing.T) {
	huge := func(prefix []byte) []byte {
		e := NewEncoder(append([]byte(nil), prefix...))
		e.WriteInt(0x7fffffff)
		e.WriteInt(0)
		return e.Bytes()
	}
	str := func(s string) []byte { return Encode(&SyncRequest{Path: s}) }
	tests := []struct {
		name string
		rec  Record
		in   []byte
	}{
		{"GetChildrenResponse", &GetChildrenResponse{}, huge(nil)},
		{"GetACLResponse", &GetACLResponse{}, huge(nil)},
		{"CreateRequest/acl", &CreateRequest{}, huge(append(str("/a"), 0, 0, 0, 0))},
		{"SetACLRequest", &SetACLRequest{}, huge(str("/a"))},
		{"SetWatches", &SetWatches{}, huge([]byte{0, 0, 0, 0, 0, 0, 0, 1})},
		{"SetWatches2/last", &SetWatches2{}, huge([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})},
		{"WhoAmIResponse", &WhoAmIResponse{}, huge(nil)},
		{"GetEphemeralsResponse", &GetEphemeralsResponse{}, huge(nil)},
		{"GetDataResponse/data", &GetDataResponse{}, huge(nil)},
		{"SyncRequest/path", &SyncRequest{}, huge(nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := Decode(tc.in, newLike(tc.rec))
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrBadLength) {
				t.Fatalf("Decode = %v, want ErrBadLength", err)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
				t.Fatalf("decoding a bogus length allocated %d bytes", n)
			}
		})
	}
}
