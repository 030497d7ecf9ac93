package server

import (
	"io"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
)

// FuzzRequests sends arbitrary bytes after a handshake. Whatever they are,
// the server must not panic, must close or keep the connection cleanly once
// the client stops sending, and must keep serving others.
func FuzzRequests(f *testing.F) {
	seed := func(op int32, r jute.Record) []byte {
		e := jute.NewEncoder(nil)
		(&jute.RequestHeader{Xid: 1, Type: op}).Encode(e)
		if r != nil {
			r.Encode(e)
		}
		return frameOf(e.Bytes())
	}
	f.Add(seed(jute.OpGetData, &jute.GetDataRequest{Path: "/", Watch: true}))
	f.Add(seed(jute.OpCreate, &jute.CreateRequest{Path: "/a", Acl: openACL}))
	f.Add(seed(jute.OpMultiRead, &jute.MultiRequest{Ops: []jute.MultiOp{{Type: jute.OpGetData, Req: &jute.GetDataRequest{Path: "/"}}}}))
	f.Add(seed(jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{{Type: jute.OpDelete, Req: &jute.DeleteRequest{Path: "/a"}}}}))
	f.Add(seed(jute.OpSetWatches2, &jute.SetWatches2{DataWatches: []string{"/"}, PersistentRecursiveWatches: []string{"/"}}))
	f.Add(seed(jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: []byte("a:b")}))
	f.Add(seed(jute.OpAddWatch, &jute.AddWatchRequest{Path: "/", Mode: 1}))
	f.Add(seed(jute.OpWhoAmI, nil))
	f.Add(seed(jute.OpCloseSession, nil))
	f.Add([]byte{0, 0, 0, 3, 1, 2, 3})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})

	ts := startServer(f, func(c *Config) { c.MaxBuffer = 4096 })
	f.Fuzz(func(t *testing.T, in []byte) {
		c := dialRaw(t, ts.addr)
		c.session()
		c.write(in)
		c.nc.(interface{ CloseWrite() error }).CloseWrite()
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.Copy(io.Discard, c.nc); err != nil {
			t.Fatalf("server did not close the connection after the client's EOF: %v", err)
		}
		if n := ts.stats.panics.Load(); n != 0 {
			t.Fatalf("%d panics recovered", n)
		}
	})
}
