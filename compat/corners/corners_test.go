package corners

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/jute"
)

// wire is a raw session: frames written and read by hand, so that a test
// sees exactly the bytes a server answers and how it ends the connection.
type wire struct {
	t  *testing.T
	nc net.Conn
}

func dial(t *testing.T, addr string) *wire {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	w := &wire{t: t, nc: nc}
	w.write(jute.Encode(&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)}))
	if _, err := w.read(); err != nil {
		t.Fatalf("handshake with %s: %v", addr, err)
	}
	return w
}

// lastZxid asks the server for its last zxid (the header of an exists).
func (w *wire) lastZxid() int64 {
	w.t.Helper()
	w.request(0, jute.OpExists, jute.Encode(&jute.ExistsRequest{Path: "/"}))
	f, err := w.read()
	if err != nil || len(f) < 16 {
		w.t.Fatalf("exists: %v", err)
	}
	return int64(binary.BigEndian.Uint64(f[4:]))
}

func (w *wire) write(b []byte) {
	w.t.Helper()
	f := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	if _, err := w.nc.Write(append(f, b...)); err != nil {
		w.t.Fatal(err)
	}
}

func (w *wire) read() ([]byte, error) {
	w.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var l [4]byte
	if _, err := io.ReadFull(w.nc, l[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(l[:]))
	_, err := io.ReadFull(w.nc, b)
	return b, err
}

// request sends one request frame: header then body.
func (w *wire) request(xid, op int32, body []byte) {
	w.t.Helper()
	h := binary.BigEndian.AppendUint32(nil, uint32(xid))
	w.write(append(binary.BigEndian.AppendUint32(h, uint32(op)), body...))
}

// reply reads one reply and describes it; lastZxid is the zxid before the
// request, so the description says whether the reply consumed a fresh one.
func (w *wire) reply(lastZxid int64) (string, int64) {
	f, err := w.read()
	if err != nil {
		return "connection " + endOf(err), lastZxid
	}
	if len(f) < 16 {
		return fmt.Sprintf("short reply %x", f), lastZxid
	}
	zxid := int64(binary.BigEndian.Uint64(f[4:]))
	z := "same zxid"
	if zxid > lastZxid {
		z = "fresh zxid"
	}
	return fmt.Sprintf("err=%d %s body=%s", int32(binary.BigEndian.Uint32(f[12:])), z, hex.EncodeToString(f[16:])), zxid
}

// endOf names how a read ended: a clean close (FIN) or a reset.
func endOf(err error) string {
	switch {
	case errors.Is(err, io.EOF):
		return "closed (EOF)"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	}
	return err.Error()
}

var openACL = []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}

// step is one request of a case and the outcome recorded from ZooKeeper
// 3.8; a step without one sets the case up and is not compared.
type step struct {
	op   int32
	body []byte
	want string
}

func multi(ops ...jute.MultiOp) []byte { return jute.Encode(&jute.MultiRequest{Ops: ops}) }

// multiAtMax is a multi of one create of /big whose frame (request header
// included) is maxBuf bytes.
func multiAtMax() []byte {
	req := &jute.CreateRequest{Path: "/big", Acl: openACL}
	req.Data = make([]byte, maxBuf-8-len(multi(jute.MultiOp{Type: jute.OpCreate, Req: req})))
	return multi(jute.MultiOp{Type: jute.OpCreate, Req: req})
}

// frameOf returns a request frame whose length prefix declares n bytes
// and which carries the first send of them (a header of xid 1 and setData,
// then zeros).
func frameOf(n, send int) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+send), uint32(n))
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, uint32(jute.OpSetData))
	return append(b, make([]byte, send-8)...)
}

// The connection's end as ZooKeeper 3.8 shows it.
const (
	serving = "serving"      // an exists after the steps is answered
	closed  = "closed (EOF)" // a FIN, no reset
	maxBuf  = 0xfffff        // jute.maxbuffer's default
	// atMax is the data of a setData of /missing whose frame is maxBuf
	// bytes: request header 8, path 4+8, data 4+atMax, version 4.
	atMax = maxBuf - 28
)

func TestIntegration_ProtocolCorners(t *testing.T) {
	endOnly := hex.EncodeToString(jute.Encode(&jute.MultiResponse{})) // MultiHeader{-1, true, -1}
	create := jute.MultiOp{Type: jute.OpCreate, Req: &jute.CreateRequest{Path: "/corner", Acl: openACL}}
	check := jute.MultiOp{Type: jute.OpCheck, Req: &jute.CheckVersionRequest{Path: "/", Version: 0}}
	getRoot := jute.MultiOp{Type: jute.OpGetData, Req: &jute.GetDataRequest{Path: "/zookeeper"}}
	deleteMissing := jute.MultiOp{Type: jute.OpDelete, Req: &jute.DeleteRequest{Path: "/missing", Version: -1}}
	cases := []struct {
		name  string
		steps []step
		raw   []byte // written after the steps, as is
		end   string // how the connection ends
	}{
		{name: "multiRead of writes only answers MarshallingError with an empty multi body", steps: []step{
			{jute.OpMultiRead, multi(create), "err=-5 same zxid body=" + endOnly},
			{jute.OpMultiRead, multi(check, deleteMissing), "err=-5 same zxid body=" + endOnly},
			{jute.OpExists, jute.Encode(&jute.ExistsRequest{Path: "/corner"}), "err=-101 same zxid body="},
		}, end: serving},
		{name: "multiRead mixing reads and writes answers MarshallingError without body", steps: []step{
			{jute.OpMultiRead, multi(getRoot, deleteMissing), "err=-5 same zxid body="},
			{jute.OpMultiRead, multi(create, getRoot), "err=-5 same zxid body="},
		}, end: serving},
		{name: "empty multiRead answers an empty multi body", steps: []step{
			{jute.OpMultiRead, multi(), "err=0 same zxid body=" + endOnly},
		}, end: serving},
		{name: "client deleteContainer answers BadArguments through the log", steps: []step{
			{jute.OpCreateContainer, jute.Encode(&jute.CreateRequest{Path: "/box", Acl: openACL, Flags: jute.ModeContainer}), ""},
			{jute.OpDeleteContainer, jute.Encode(&jute.DeleteRequest{Path: "/box"}), "err=-8 fresh zxid body="},
			{jute.OpDeleteContainer, jute.Encode(&jute.DeleteRequest{Path: "/missing"}), "err=-8 fresh zxid body="},
			{jute.OpDeleteContainer, nil, "err=-8 fresh zxid body="},
			{jute.OpDelete, jute.Encode(&jute.DeleteRequest{Path: "/box", Version: -1}), "err=0 fresh zxid body="},
		}, end: serving},
		// ZooKeeper 3.8 closes the connection after the Unimplemented
		// reply of an opcode it does not know, but sometimes answers one
		// more request first, so the end of these is not compared.
		{name: "notification opcode answers Unimplemented", steps: []step{{jute.OpNotification, nil, "err=-6 same zxid body="}}, end: ""},
		{name: "error opcode answers Unimplemented", steps: []step{{jute.OpError, nil, "err=-6 same zxid body="}}, end: ""},
		{name: "unknown opcode 999 answers Unimplemented", steps: []step{{999, nil, "err=-6 same zxid body="}}, end: ""},
		{name: "unknown opcode 127 with a body answers Unimplemented", steps: []step{{127, []byte{1, 2, 3, 4}, "err=-6 same zxid body="}}, end: ""},
		{name: "ping with a body is answered", steps: []step{{jute.OpPing, []byte("garbage"), "err=0 same zxid body="}}, end: serving},
		{name: "setAuth with a garbage body closes cleanly", steps: []step{{jute.OpAuth, []byte{0, 0, 0}, "connection " + closed}}, end: closed},
		{name: "setWatches with null lists answers MarshallingError", steps: []step{
			{jute.OpSetWatches, jute.Encode(&jute.SetWatches{}), "err=-5 same zxid body="},
		}, end: serving},
		{name: "setWatches with a null list after set ones answers MarshallingError", steps: []step{
			{jute.OpSetWatches, jute.Encode(&jute.SetWatches{RelativeZxid: 1 << 62, DataWatches: []string{"/"}, ExistWatches: []string{"/missing"}}), "err=-5 same zxid body="},
		}, end: serving},
		{name: "setWatches keeps the watches of the lists before a null one", steps: []step{
			// The create is answered after the NodeCreated event of /w.
			{jute.OpSetWatches, jute.Encode(&jute.SetWatches{RelativeZxid: 1 << 62, DataWatches: []string{}, ExistWatches: []string{"/w"}}), "err=-5 same zxid body="},
			{jute.OpCreate, jute.Encode(&jute.CreateRequest{Path: "/w", Acl: openACL}), "err=0 same zxid body=0000000100000003000000022f77"},
			{jute.OpDelete, jute.Encode(&jute.DeleteRequest{Path: "/w", Version: -1}), "err=0 fresh zxid body=000000022f77"},
		}, end: serving},
		{name: "setWatches with lists is answered", steps: []step{
			{jute.OpSetWatches, jute.Encode(&jute.SetWatches{RelativeZxid: 1 << 62, DataWatches: []string{"/"}, ExistWatches: []string{"/missing"}, ChildWatches: []string{"/"}}), "err=0 same zxid body="},
		}, end: serving},
		{name: "setWatches2 with null lists answers MarshallingError", steps: []step{
			{jute.OpSetWatches2, jute.Encode(&jute.SetWatches2{}), "err=-5 same zxid body="},
		}, end: serving},
		{name: "setWatches2 with a null persistent list answers MarshallingError", steps: []step{
			{jute.OpSetWatches2, jute.Encode(&jute.SetWatches2{RelativeZxid: 1 << 62, DataWatches: []string{"/"}, ExistWatches: []string{}, ChildWatches: []string{}, PersistentRecursiveWatches: []string{"/"}}), "err=-5 same zxid body="},
		}, end: serving},
		{name: "setWatches2 with lists is answered", steps: []step{
			{jute.OpSetWatches2, jute.Encode(&jute.SetWatches2{RelativeZxid: 1 << 62, DataWatches: []string{"/"}, ExistWatches: []string{}, ChildWatches: []string{}, PersistentWatches: []string{}, PersistentRecursiveWatches: []string{"/"}}), "err=0 same zxid body="},
		}, end: serving},
		{name: "multi with getChildren2 answers MarshallingError through the log", steps: []step{{jute.OpMulti, multi(jute.MultiOp{Type: jute.OpGetChildren2, Req: &jute.GetChildren2Request{Path: "/"}}), "err=-5 fresh zxid body="}}, end: serving},
		{name: "multi with exists answers MarshallingError through the log", steps: []step{{jute.OpMulti, multi(jute.MultiOp{Type: jute.OpExists, Req: &jute.ExistsRequest{Path: "/"}}), "err=-5 fresh zxid body="}}, end: serving},
		{name: "multi with sync answers MarshallingError through the log", steps: []step{{jute.OpMulti, multi(jute.MultiOp{Type: jute.OpSync, Req: &jute.SyncRequest{Path: "/"}}), "err=-5 fresh zxid body="}}, end: serving},
		{name: "multi with ping answers MarshallingError through the log", steps: []step{{jute.OpMulti, multi(jute.MultiOp{Type: jute.OpPing}), "err=-5 fresh zxid body="}}, end: serving},
		{name: "multi with auth answers MarshallingError through the log", steps: []step{{jute.OpMulti, multi(jute.MultiOp{Type: jute.OpAuth, Req: &jute.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}}), "err=-5 fresh zxid body="}}, end: serving},
		{name: "multi with closeSession answers MarshallingError through the log", steps: []step{{jute.OpMulti, multi(jute.MultiOp{Type: jute.OpCloseSession}), "err=-5 fresh zxid body="}}, end: serving},
		{name: "multi with setWatches answers MarshallingError through the log", steps: []step{{jute.OpMulti, multi(jute.MultiOp{Type: jute.OpSetWatches, Req: &jute.SetWatches{}}), "err=-5 fresh zxid body="}}, end: serving},
		{name: "multi with reconfig answers MarshallingError through the log", steps: []step{{jute.OpMulti, multi(jute.MultiOp{Type: jute.OpReconfig, Req: &jute.ReconfigRequest{CurConfigId: -1}}), "err=-5 fresh zxid body="}}, end: serving},
		{name: "multi with setACL answers MarshallingError through the log", steps: []step{{jute.OpMulti, multi(jute.MultiOp{Type: jute.OpSetACL, Req: &jute.SetACLRequest{Path: "/", Acl: openACL, Version: -1}}), "err=-5 fresh zxid body="}}, end: serving},
		{name: "multi with a truncated body answers MarshallingError through the log", steps: []step{{jute.OpMulti, multi(create)[:12], "err=-5 fresh zxid body="}}, end: serving},
		{name: "multi with create2 creates", steps: []step{
			{jute.OpMulti, multi(jute.MultiOp{Type: jute.OpCreate2, Req: &jute.CreateRequest{Path: "/c2", Acl: openACL}}), "err=0 fresh zxid body=000000010000000000000000032f6332ffffffff01ffffffff"},
			{jute.OpDelete, jute.Encode(&jute.DeleteRequest{Path: "/c2", Version: -1}), "err=0 fresh zxid body="},
		}, end: serving},
		{name: "multi with createTTL answers Unimplemented per op when TTLs are off", steps: []step{
			{jute.OpMulti, multi(jute.MultiOp{Type: jute.OpCreateTTL, Req: &jute.CreateTTLRequest{Path: "/ttl", Acl: openACL, Flags: 5, Ttl: 1000}}), "err=0 fresh zxid body=ffffffff00fffffffafffffffaffffffff01ffffffff"},
		}, end: serving},
		{name: "multi with createContainer answers per op", steps: []step{
			{jute.OpMulti, multi(jute.MultiOp{Type: jute.OpCreateContainer, Req: &jute.CreateRequest{Path: "/missing/box", Acl: openACL, Flags: jute.ModeContainer}}), "err=0 fresh zxid body=ffffffff00ffffff9bffffff9bffffffff01ffffffff"},
		}, end: serving},
		{name: "multiRead with getChildren2 answers MarshallingError", steps: []step{
			{jute.OpMultiRead, multi(jute.MultiOp{Type: jute.OpGetChildren2, Req: &jute.GetChildren2Request{Path: "/"}}), "err=-5 same zxid body="},
		}, end: serving},
		{name: "multiRead with exists answers MarshallingError", steps: []step{
			{jute.OpMultiRead, multi(jute.MultiOp{Type: jute.OpExists, Req: &jute.ExistsRequest{Path: "/"}}), "err=-5 same zxid body="},
		}, end: serving},
		{name: "multi create of a frame at jute.maxbuffer is served", steps: []step{
			{jute.OpMulti, multiAtMax(), "err=0 fresh zxid body=000000010000000000000000042f626967ffffffff01ffffffff"},
			{jute.OpDelete, jute.Encode(&jute.DeleteRequest{Path: "/big", Version: -1}), "err=0 fresh zxid body="},
		}, end: serving},
		{name: "frame at jute.maxbuffer is served", steps: []step{
			{jute.OpSetData, jute.Encode(&jute.SetDataRequest{Path: "/missing", Data: make([]byte, atMax), Version: -1}), "err=-101 fresh zxid body="},
		}, end: serving},
		{name: "frame one byte over jute.maxbuffer closes cleanly", raw: frameOf(maxBuf+1, maxBuf+1), end: closed},
		{name: "frame header over jute.maxbuffer alone closes cleanly", raw: frameOf(maxBuf+1, 8), end: closed},
		{name: "negative frame length closes cleanly", raw: frameOf(-1, 8), end: closed},
	}
	zk := zkproc.StartZooKeeper(t, zkproc.Options{})
	zkd := zkproc.StartZkd(t, zkproc.Options{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := map[zkproc.Kind][]string{}
			for _, s := range []*zkproc.Server{zk, zkd} {
				w := dial(t, s.Addr)
				last := w.lastZxid()
				for i, st := range tc.steps {
					w.request(int32(i+1), st.op, st.body)
					var out string
					out, last = w.reply(last)
					got[s.Kind] = append(got[s.Kind], out)
				}
				end := serving
				if tc.raw != nil {
					w.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
					if _, err := w.nc.Write(tc.raw); err != nil {
						end = "write: " + err.Error()
					}
				}
				// The probe's write may fail (EPIPE) when the server has
				// already closed and reset the rest of the raw frame; the
				// read below still tells a FIN from a reset, which is what
				// the case pins.
				probe := append(binary.BigEndian.AppendUint32(nil, 100), binary.BigEndian.AppendUint32(nil, uint32(jute.OpExists))...)
				probe = append(probe, jute.Encode(&jute.ExistsRequest{Path: "/"})...)
				w.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(probe))), probe...))
				if _, err := w.read(); err != nil {
					end = endOf(err)
				}
				got[s.Kind] = append(got[s.Kind], end)
			}
			for i := range len(tc.steps) + 1 {
				want, what := tc.end, "connection"
				if i < len(tc.steps) {
					want, what = tc.steps[i].want, fmt.Sprintf("step %d (%s)", i+1, jute.OpName(tc.steps[i].op))
				}
				a, b := got[zkproc.KindZooKeeper][i], got[zkproc.KindZkd][i]
				if want == "" {
					continue
				}
				if a != want {
					t.Errorf("%s: ZooKeeper 3.8 answered %q, recorded %q", what, a, want)
				}
				if a != b {
					t.Errorf("%s: zkd answered %q, ZooKeeper 3.8 %q", what, b, a)
				}
			}
		})
	}
}

// TestIntegration_OversizeConnect: a first frame (the connect request)
// over jute.maxbuffer, or with a negative length, is refused with a clean
// close too.
func TestIntegration_OversizeConnect(t *testing.T) {
	zk := zkproc.StartZooKeeper(t, zkproc.Options{})
	zkd := zkproc.StartZkd(t, zkproc.Options{})
	for _, tc := range []struct {
		name string
		raw  []byte
	}{
		{"one byte over", frameOf(maxBuf+1, maxBuf+1)},
		{"header only", frameOf(maxBuf+1, 8)},
		{"negative", frameOf(-1, 8)},
	} {
		got := map[zkproc.Kind]string{}
		for _, s := range []*zkproc.Server{zk, zkd} {
			nc, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			// A write that fails (EPIPE) because the server closed before
			// the whole frame arrived is fine: the read tells a FIN from
			// a reset, which is what the case pins.
			nc.Write(tc.raw)
			if _, err := io.ReadAll(nc); err != nil {
				got[s.Kind] = endOf(err)
			} else {
				got[s.Kind] = closed
			}
			nc.Close()
		}
		if got[zkproc.KindZooKeeper] != closed || got[zkproc.KindZkd] != closed {
			t.Errorf("%s: ZooKeeper 3.8 %q, zkd %q; want %q", tc.name, got[zkproc.KindZooKeeper], got[zkproc.KindZkd], closed)
		}
	}
}
