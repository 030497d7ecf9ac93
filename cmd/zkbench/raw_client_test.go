package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
)

// fakeZK is a ZooKeeper server as far as a raw client needs one: it grants
// every connection a session, answers closeSession, and answers any other
// request with the frames handle returns for it.
type fakeZK struct {
	addr  string
	conns atomic.Int32 // connections accepted
	mu    sync.Mutex
	reqs  []fakeRequest // every request but closeSession, in order
}

type fakeRequest struct {
	hdr  jute.RequestHeader
	body []byte
}

func startFakeZK(t testing.TB, handle func(h jute.RequestHeader, body []byte) [][]byte) *fakeZK {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeZK{addr: l.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	readFrame := func(c net.Conn) ([]byte, error) {
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return nil, err
		}
		b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		_, err := io.ReadFull(c, b)
		return b, err
	}
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			f.conns.Add(1)
			wg.Go(func() {
				defer c.Close()
				go func() { // unblock the reads below once the test ends
					<-t.Context().Done()
					c.Close()
				}()
				if _, err := readFrame(c); err != nil {
					return
				}
				if _, err := c.Write(connectResponse(10000, 1)); err != nil {
					return
				}
				for {
					frame, err := readFrame(c)
					if err != nil {
						return
					}
					var h jute.RequestHeader
					d := jute.NewDecoder(frame)
					h.Decode(d)
					if h.Type == jute.OpCloseSession {
						c.Write(jute.AppendFrame(nil, &jute.ReplyHeader{Xid: h.Xid}))
						return
					}
					f.mu.Lock()
					f.reqs = append(f.reqs, fakeRequest{h, frame[d.Offset():]})
					f.mu.Unlock()
					for _, out := range handle(h, frame[d.Offset():]) {
						if _, err := c.Write(out); err != nil {
							return
						}
					}
				}
			})
		}
	})
	return f
}

func (f *fakeZK) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.reqs...)
}

// reply is a reply frame: a ReplyHeader and an optional body.
func reply(xid int32, code jute.Code, body jute.Record) []byte {
	return jute.AppendFrame(nil, &jute.ReplyHeader{Xid: xid, Zxid: 7, Err: code}, body)
}

// TestRawClientReplies drives a raw get client against fake servers that
// answer in every way a raw client must handle: replies with a nonzero
// error code count as errors and keep the connection, watch events and
// pings before the reply are skipped, and a reply it cannot follow counts
// as an error and makes it dial a new session.
func TestRawClientReplies(t *testing.T) {
	data := []byte("hello")
	ok := func(h jute.RequestHeader) []byte { return reply(h.Xid, 0, &jute.GetDataResponse{Data: data}) }
	event := reply(jute.XidNotification, 0, &jute.WatcherEvent{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/x"})
	tests := []struct {
		name       string
		handle     func(h jute.RequestHeader) [][]byte
		wantOps    bool
		wantErr    string // in the last error, with wantOps false
		wantRedial bool
	}{
		{"answered", func(h jute.RequestHeader) [][]byte { return [][]byte{ok(h)} }, true, "", false},
		{"error code", func(h jute.RequestHeader) [][]byte { return [][]byte{reply(h.Xid, jute.CodeNoNode, nil)} },
			false, "getData: no node", false},
		{"watch event first", func(h jute.RequestHeader) [][]byte { return [][]byte{event, ok(h)} }, true, "", false},
		{"ping first", func(h jute.RequestHeader) [][]byte { return [][]byte{reply(jute.XidPing, 0, nil), ok(h)} }, true, "", false},
		{"wrong xid", func(h jute.RequestHeader) [][]byte { return [][]byte{ok(jute.RequestHeader{Xid: h.Xid + 1})} },
			false, "reply xid", true},
		{"short data", func(h jute.RequestHeader) [][]byte {
			return [][]byte{reply(h.Xid, 0, &jute.GetDataResponse{Data: data[:2]})}
		}, false, "get: 2 bytes, want 5", false},
		{"truncated body", func(h jute.RequestHeader) [][]byte { return [][]byte{reply(h.Xid, 0, nil)} },
			false, "protocol error", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startFakeZK(t, func(h jute.RequestHeader, _ []byte) [][]byte { return tt.handle(h) })
			rc := newRawConn(net.DialTimeout, f.addr, 10*time.Second)
			defer rc.close()
			fn, err := rawOp("get", []*rawConn{rc}, func(int) string { return "/n" }, data)
			if err != nil {
				t.Fatal(err)
			}
			c := &client{hist: NewHistogram()}
			drive(context.Background(), []*client{c}, fn, 0, 100*time.Millisecond, 0, io.Discard)
			ops, errs := c.ops.Load(), c.errors.Load()
			if tt.wantOps {
				if ops == 0 || errs != 0 {
					t.Fatalf("ops %d, errors %d (last %v): want ops and no errors", ops, errs, c.last)
				}
			} else if ops != 0 || errs == 0 || !strings.Contains(c.last.Error(), tt.wantErr) {
				t.Fatalf("ops %d, errors %d (last %v): want only errors, %q", ops, errs, c.last, tt.wantErr)
			}
			if tt.name == "error code" && !errors.Is(c.last, jute.CodeNoNode) {
				t.Errorf("last error %v does not wrap jute.CodeNoNode", c.last)
			}
			if redialed := f.conns.Load() > 1; redialed != tt.wantRedial {
				t.Errorf("%d connections: redialed %v, want %v", f.conns.Load(), redialed, tt.wantRedial)
			}
			reqs := f.requests()
			var want jute.GetDataRequest
			if err := jute.Decode(reqs[0].body, &want); err != nil || reqs[0].hdr.Type != jute.OpGetData || want.Path != "/n" || want.Watch {
				t.Errorf("first request %+v %+v (%v): want getData /n without a watch", reqs[0].hdr, want, err)
			}
		})
	}
}

// TestRawClientCreate checks one op of the raw create workload: an
// ephemeral-sequential create under the client's node, then a delete of
// exactly the path the server returned, with increasing xids.
func TestRawClientCreate(t *testing.T) {
	created := "/r/c0000/n-0000000042"
	f := startFakeZK(t, func(h jute.RequestHeader, _ []byte) [][]byte {
		if h.Type == jute.OpCreate {
			return [][]byte{reply(h.Xid, 0, &jute.CreateResponse{Path: created})}
		}
		return [][]byte{reply(h.Xid, 0, nil)}
	})
	rc := newRawConn(net.DialTimeout, f.addr, 10*time.Second)
	defer rc.close()
	fn, err := rawOp("create", []*rawConn{rc}, func(int) string { return "/r/c0000" }, []byte("d"))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := fn(&client{}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := f.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want create, delete, create, delete", len(reqs))
	}
	for i, r := range reqs {
		if r.hdr.Xid != int32(i+1) {
			t.Errorf("request %d has xid %d, want %d", i, r.hdr.Xid, i+1)
		}
		switch i % 2 {
		case 0:
			var cr jute.CreateRequest
			err := jute.Decode(r.body, &cr)
			if err != nil || r.hdr.Type != jute.OpCreate || cr.Path != "/r/c0000/n-" || string(cr.Data) != "d" ||
				cr.Flags != jute.ModeEphemeralSequential || len(cr.Acl) != 1 || cr.Acl[0] != worldAll[0] {
				t.Errorf("request %d: %+v %+v (%v), want an ephemeral-sequential create", i, r.hdr, cr, err)
			}
		case 1:
			want := jute.Encode(&jute.DeleteRequest{Path: created, Version: -1})
			if r.hdr.Type != jute.OpDelete || !bytes.Equal(r.body, want) {
				t.Errorf("request %d: %+v %x, want delete of %s: %x", i, r.hdr, r.body, created, want)
			}
		}
	}
}

// startLeanFakeZK is a fake server that answers every create with
// leanCreated, every getData with data and anything else with a bare
// header, reusing its buffers, so that its own allocations do not hide a
// raw client's.
func startLeanFakeZK(tb testing.TB, data []byte) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				go func() {
					<-tb.Context().Done()
					c.Close()
				}()
				replies := map[int32][]byte{
					jute.OpCreate:  reply(0, 0, &jute.CreateResponse{Path: leanCreated}),
					jute.OpGetData: reply(0, 0, &jute.GetDataResponse{Data: data}),
				}
				bare := reply(0, 0, nil)
				buf := make([]byte, 1<<16)
				var hdr [4]byte
				for n := 0; ; n++ {
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					body := buf[:binary.BigEndian.Uint32(hdr[:])]
					if _, err := io.ReadFull(c, body); err != nil {
						return
					}
					if n == 0 {
						c.Write(connectResponse(10000, 1))
						continue
					}
					out, ok := replies[int32(binary.BigEndian.Uint32(body[4:]))]
					if !ok {
						out = bare
					}
					copy(out[4:8], body[:4]) // the request's xid
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			})
		}
	})
	return l.Addr().String()
}

// leanCreated is the path startLeanFakeZK's creates return.
const leanCreated = "/c/n-0000000001"

// TestRawClientAllocs checks that a raw client's operations allocate
// nothing once its buffers have grown.
func TestRawClientAllocs(t *testing.T) {
	for _, workload := range rawWorkloads {
		t.Run("workload="+workload, func(t *testing.T) {
			data := make([]byte, 1024)
			rc := newRawConn(net.DialTimeout, startLeanFakeZK(t, data), 10*time.Second)
			defer rc.close()
			fn, err := rawOp(workload, []*rawConn{rc}, func(int) string { return "/c" }, data)
			if err != nil {
				t.Fatal(err)
			}
			c := &client{}
			allocs := testing.AllocsPerRun(200, func() {
				if _, err := fn(c); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%.1f allocations per operation, want 0", allocs)
			}
		})
	}
}

// BenchmarkRawClient measures a raw client's operations against a fake
// server on loopback, whose own work counts too.
func BenchmarkRawClient(b *testing.B) {
	for _, workload := range rawWorkloads {
		b.Run("workload="+workload+"/size=1KiB", func(b *testing.B) {
			data := make([]byte, 1024)
			rc := newRawConn(net.DialTimeout, startLeanFakeZK(b, data), 10*time.Second)
			defer rc.close()
			fn, err := rawOp(workload, []*rawConn{rc}, func(int) string { return "/c" }, data)
			if err != nil {
				b.Fatal(err)
			}
			c := &client{}
			if _, err := fn(c); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for b.Loop() {
				if _, err := fn(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
