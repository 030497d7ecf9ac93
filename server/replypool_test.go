package server

import (
	"bytes"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
)

// TestRecycledRepliesIntact checks that a reply frame goes back to
// replyBufs only once the socket took all of it: a client that stops
// reading makes the server queue the rest of a frame, and the frames after
// it, while another connection's reads take frames from the pool and fill
// them. Every queued reply must still carry its own node's data when the
// slow client reads at last; a frame recycled too early would carry
// another reply's bytes.
func TestRecycledRepliesIntact(t *testing.T) {
	cases := []struct {
		name  string
		sizes []int
	}{
		{"1 KiB", []int{1024, 1024, 1024}},
		{"8 KiB", []int{8 << 10, 8 << 10, 8 << 10}},
		{"mixed up to 40 KiB", []int{40 << 10, 10, 40 << 10, 5000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, nil)
			setup := dialRaw(t, ts.addr)
			setup.session()
			want := make(map[string][]byte)
			var paths []string
			for i, size := range tc.sizes {
				path := fmt.Sprintf("/n%d", i)
				data := bytes.Repeat([]byte{byte('a' + i)}, size)
				if h := setup.call(int32(i+1), jute.OpCreate, &jute.CreateRequest{Path: path, Data: data, Acl: openACL}, &jute.CreateResponse{}); h.Err != 0 {
					t.Fatalf("create %s: %v", path, h.Err)
				}
				want[path], paths = data, append(paths, path)
			}

			// The other connection churns the pool until the slow one
			// has read everything.
			busy := dialRaw(t, ts.addr)
			busy.session()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := busy.getData(int32(i+1), paths[i%len(paths)]); err != nil {
						t.Errorf("busy connection: %v", err)
						return
					}
				}
			})
			defer wg.Wait()
			defer close(stop)

			// Enough replies in flight to fill the socket's buffers many
			// times over, sent without reading any, to a client whose
			// small receive buffer makes the server's writes stop short
			// of a frame's end.
			slow := dialSmallWindow(t, ts.addr)
			slow.session()
			const n = 3000
			var batch []byte
			for i := range n {
				e := jute.NewEncoder(nil)
				(&jute.RequestHeader{Xid: int32(i + 1), Type: jute.OpGetData}).Encode(e)
				(&jute.GetDataRequest{Path: paths[i%len(paths)]}).Encode(e)
				batch = append(batch, frameOf(e.Bytes())...)
			}
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				slow.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
				if _, err := slow.nc.Write(batch); err != nil {
					t.Errorf("send %d requests: %v", n, err)
				}
			}()
			// Let the server back up before the slow client reads: wait
			// for the busy connection to cycle the pool meanwhile.
			deadline := time.Now().Add(10 * time.Second)
			for ts.stats.packetsSent.Load() < n/2 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			var resp jute.GetDataResponse
			for i := range n {
				h := slow.reply(&resp)
				path := paths[i%len(paths)]
				if h.Xid != int32(i+1) || h.Err != 0 {
					t.Fatalf("reply %d: xid %d err %v, want xid %d and no error", i, h.Xid, h.Err, i+1)
				}
				if !bytes.Equal(resp.Data, want[path]) {
					at := 0
					for at < min(len(resp.Data), len(want[path])) && resp.Data[at] == want[path][at] {
						at++
					}
					t.Fatalf("reply %d (getData %s): %d bytes, want %d; they differ from byte %d on",
						i, path, len(resp.Data), len(want[path]), at)
				}
			}
			<-sent
		})
	}
}

// dialSmallWindow connects a rawClient whose socket has a receive buffer
// of a few KiB, set before the connection opens so the window stays small.
func dialSmallWindow(t *testing.T, addr string) *rawClient {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		}); err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc}
}

// getData sends a getData of path and reads its reply, returning what went
// wrong rather than failing the test: it runs on a goroutine of its own.
func (c *rawClient) getData(xid int32, path string) error {
	e := jute.NewEncoder(nil)
	(&jute.RequestHeader{Xid: xid, Type: jute.OpGetData}).Encode(e)
	(&jute.GetDataRequest{Path: path}).Encode(e)
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(frameOf(e.Bytes())); err != nil {
		return fmt.Errorf("getData %s: write: %w", path, err)
	}
	b, err := c.readFrame()
	if err != nil {
		return fmt.Errorf("getData %s: read: %w", path, err)
	}
	var h jute.ReplyHeader
	d := jute.NewDecoder(b)
	h.Decode(d)
	if d.Err() != nil || h.Xid != xid || h.Err != 0 {
		return fmt.Errorf("getData %s: reply xid %d err %v (decode: %v), want xid %d", path, h.Xid, h.Err, d.Err(), xid)
	}
	return nil
}
