package server

import (
	"fmt"
	"testing"

	"github.com/zkd/zkd/jute"
)

// BenchmarkGetData measures the request path of getData over loopback with
// the fake backend: frame decode, tree read, reply encode and write. With
// depth > 1 the client keeps that many requests in flight.
func BenchmarkGetData(b *testing.B) {
	for _, size := range []int{16, 1024} {
		for _, depth := range []int{1, 32} {
			b.Run(fmt.Sprintf("size=%dB/depth=%d", size, depth), func(b *testing.B) {
				ts := startServer(b, nil)
				c := dialRaw(b, ts.addr)
				c.session()
				c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/bench", Data: make([]byte, size), Acl: openACL}, &jute.CreateResponse{})
				b.SetBytes(int64(size))
				benchGetData(b, c, "/bench", depth)
			})
		}
	}
}

// benchGetData times b.N getData requests of path on c, depth of them in
// flight at a time.
func benchGetData(b *testing.B, c *rawClient, path string, depth int) {
	e := jute.NewEncoder(nil)
	(&jute.RequestHeader{Xid: 2, Type: jute.OpGetData}).Encode(e)
	(&jute.GetDataRequest{Path: path}).Encode(e)
	req := frameOf(e.Bytes())
	batch := make([]byte, 0, len(req)*depth)
	for range depth {
		batch = append(batch, req...)
	}
	var resp jute.GetDataResponse
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += depth {
		c.write(batch)
		for range depth {
			if h := c.reply(&resp); h.Err != 0 {
				b.Fatal(h)
			}
		}
	}
}
