package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/compat/zkwire"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server"
)

// rawSession opens a session from source address ip: the connection, or
// the error that ended the handshake (io.EOF when the server closed it).
func rawSession(addr, ip string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	req := jute.Encode(&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)})
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(req)))
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(append(frame, req...)); err != nil {
		nc.Close()
		return nil, err
	}
	var resp jute.ConnectResponse
	if err := readFrameInto(nc, &resp); err != nil {
		nc.Close()
		return nil, err
	}
	if resp.SessionId == 0 {
		nc.Close()
		return nil, errors.New("no session id")
	}
	return nc, nil
}

// readFrameInto reads one frame and decodes it into r.
func readFrameInto(nc net.Conn, r jute.Record) error {
	b, err := zkwire.ReadFrame(nc)
	if err != nil {
		return err
	}
	return jute.Decode(b, r)
}

// awaitSession opens a session from ip, retrying while the server refuses:
// it notices a freed connection or descriptor asynchronously.
func awaitSession(t *testing.T, addr, ip string) net.Conn {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		nc, err := rawSession(addr, ip)
		if err == nil {
			return nc
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session from %s once a slot was freed: %v", ip, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ping sends a ping on a raw session and waits for its reply.
func ping(nc net.Conn) error {
	e := jute.NewEncoder(nil)
	(&jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing}).Encode(e)
	b := e.Bytes()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)); err != nil {
		return err
	}
	var h jute.ReplyHeader
	if err := readFrameInto(nc, &h); err != nil {
		return err
	}
	if h.Xid != jute.XidPing {
		return fmt.Errorf("ping reply xid %d", h.Xid)
	}
	return nil
}

// TestIntegration_ConnectionLimits checks maxClientCnxns (per source
// address) and maxCnxns (in all) on zkd and on ZooKeeper 3.8 alike: a
// connection past a limit is closed before its handshake is answered, the
// established sessions go on, and a freed slot is taken again.
func TestIntegration_ConnectionLimits(t *testing.T) {
	cfg := map[string]string{"maxClientCnxns": "2", "maxCnxns": "3"}
	for _, kind := range []zkproc.Kind{zkproc.KindZkd, zkproc.KindZooKeeper} {
		t.Run(string(kind), func(t *testing.T) {
			var srv *zkproc.Server
			if kind == zkproc.KindZkd {
				srv = zkproc.StartZkd(t, zkproc.Options{ExtraCfg: cfg})
			} else {
				srv = zkproc.StartZooKeeper(t, zkproc.Options{ExtraCfg: cfg})
			}
			steps := []struct {
				name, ip string
				ok       bool
			}{
				{"first from .1", "127.0.0.1", true},
				{"second from .1", "127.0.0.1", true},
				{"third from .1 is over maxClientCnxns", "127.0.0.1", false},
				{"first from .2", "127.0.0.2", true},
				{"first from .3 is over maxCnxns", "127.0.0.3", false},
			}
			var open []net.Conn
			defer func() {
				for _, nc := range open {
					nc.Close()
				}
			}()
			// The start-up probe's session is closed, but the server may
			// not have seen its socket end yet: it would count against
			// maxClientCnxns (it did once, refusing "second from .1").
			waitConnections(t, srv.Addr, 1)
			for _, st := range steps {
				nc, err := rawSession(srv.Addr, st.ip)
				if st.ok != (err == nil) {
					t.Fatalf("%s: err = %v, want ok=%v", st.name, err, st.ok)
				}
				// A server that closes before reading the connect request
				// may make the client's write fail with EPIPE instead.
				if err == nil {
					open = append(open, nc)
				} else if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
					t.Fatalf("%s: refused with %v, want the connection closed", st.name, err)
				}
			}
			for i, nc := range open {
				if err := ping(nc); err != nil {
					t.Fatalf("established session %d after the refusals: %v", i, err)
				}
			}
			// Freeing one connection lets .3 in.
			open[0].Close()
			open = open[1:]
			open = append(open, awaitSession(t, srv.Addr, "127.0.0.3"))
			if kind == zkproc.KindZkd {
				// Each refusal is logged as its connection closes, maybe
				// after the client saw it close.
				for _, want := range []string{"maxClientCnxns", "maxCnxns", "RLIMIT_NOFILE"} {
					srv.AwaitLog(t, want, 10*time.Second)
				}
			}
		})
	}
}

// TestIntegration_OutstandingBounds floods a real zkd with pipelined
// writes from many sessions and checks, through mntr, that the requests in
// process stay bounded by globalOutstandingLimit and by
// request_throttle_max_requests (each reader may pass one request over the
// bound before it stops), that every write completes (or, past
// throttled_op_wait_time, is answered ThrottledOp and counted in mntr's
// zk_throttled_ops), and that an idle session with the smallest timeout is
// not expired meanwhile. Unbounded, the flood keeps hundreds in process.
func TestIntegration_OutstandingBounds(t *testing.T) {
	const clients, depth, perClient = 12, 32, 160
	tests := []struct {
		name      string
		cfg       map[string]string
		bound     int
		throttled bool // some writes wait past throttled_op_wait_time
	}{
		{"globalOutstandingLimit", map[string]string{"globalOutstandingLimit": "16"}, 16, false},
		{"request_throttle_max_requests", map[string]string{"globalOutstandingLimit": "0",
			"request_throttle_max_requests": "8", "request_throttle_stall_time": "20"}, 8, false},
		{"throttled_op_wait_time", map[string]string{"globalOutstandingLimit": "0",
			"request_throttle_max_requests": "1", "request_throttle_stall_time": "5", "throttled_op_wait_time": "1"}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := zkproc.StartZkd(t, zkproc.Options{ExtraCfg: tt.cfg})
			idle, ev, err := zk.Connect([]string{srv.Addr}, 4*time.Second, zk.WithLogger(nopLogger{}))
			if err != nil {
				t.Fatal(err)
			}
			defer idle.Close()
			var expired atomic.Bool
			go func() {
				for e := range ev {
					if e.State == zk.StateExpired {
						expired.Store(true)
					}
				}
			}()
			conns := make([]*zk.Conn, clients)
			for i := range conns {
				c, _, err := zk.Connect([]string{srv.Addr}, 10*time.Second, zk.WithLogger(nopLogger{}))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				conns[i] = c
			}
			if _, err := conns[0].Create("/flood", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			var (
				wg     sync.WaitGroup
				failed atomic.Int64
				ok     atomic.Int64
				done   = make(chan struct{})
				peak   atomic.Int64
			)
			go func() { // sample the requests in process
				for {
					select {
					case <-done:
						return
					default:
					}
					out, err := zkproc.FourLetter(srv.Addr, "mntr", 5*time.Second)
					if err == nil {
						if n := mntrInt(out, "zk_outstanding_requests"); n > peak.Load() {
							peak.Store(n)
						}
					}
				}
			}()
			for _, c := range conns {
				for g := 0; g < depth; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range perClient / depth {
							_, err := c.Create("/flood/n", make([]byte, 32), zk.FlagSequence, zk.WorldACL(zk.PermAll))
							switch {
							case err == nil:
								ok.Add(1)
							case tt.throttled && err.Error() == "unknown error: -127": // go-zk has no name for ThrottledOp
							default:
								if failed.Add(1) == 1 {
									t.Logf("first failed write: %v", err)
								}
							}
						}
					}()
				}
			}
			wg.Wait()
			close(done)
			if n := failed.Load(); n != 0 {
				t.Fatalf("%d writes failed under the bound", n)
			}
			_, st, err := conns[0].Get("/flood")
			if err != nil || int64(st.NumChildren) != ok.Load() {
				t.Fatalf("/flood has %d children (%v), want %d", st.NumChildren, err, ok.Load())
			}
			throttled := int64(clients*perClient) - ok.Load()
			got := awaitMntrInt(t, srv.Addr, "zk_throttled_ops", throttled)
			if got != throttled || tt.throttled != (throttled > 0) {
				t.Errorf("%d writes answered ThrottledOp, mntr zk_throttled_ops %d, want some: %v", throttled, got, tt.throttled)
			}
			if max := int64(tt.bound + clients + 1); peak.Load() > max {
				t.Errorf("peak requests in process %d, want at most %d", peak.Load(), max)
			}
			if _, _, err := idle.Get("/flood"); err != nil || expired.Load() {
				t.Errorf("idle session during the flood: err=%v expired=%v", err, expired.Load())
			}
			t.Logf("peak requests in process %d (bound %d + %d readers)", peak.Load(), tt.bound, clients)
		})
	}
}

// mntrInt returns a numeric mntr value, -1 when absent.
// awaitMntrInt polls mntr on addr until key reads want, for at most 10s,
// and returns the last value read (a counter may be bumped just after the
// reply the test saw).
func awaitMntrInt(t *testing.T, addr, key string, want int64) int64 {
	t.Helper()
	got := int64(-1)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, err := zkproc.FourLetter(addr, "mntr", 5*time.Second)
		if err == nil {
			if got = mntrInt(out, key); got == want {
				return got
			}
		}
		if time.Now().After(deadline) {
			return got
		}
	}
}

func mntrInt(out, key string) int64 {
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

func TestLimitConfig(t *testing.T) {
	tests := []struct {
		name    string
		props   map[string]string
		servers int
		want    server.Config
		wantErr bool
	}{
		{"defaults", nil, 0, server.Config{GlobalOutstandingLimit: 1000, ThrottleStallTime: 100 * time.Millisecond,
			ThrottleDropStale: true}, false},
		{"set", map[string]string{"zookeeper.maxCnxns": "50", "zookeeper.globalOutstandingLimit": "10",
			"zookeeper.request_throttle_max_requests": "7", "zookeeper.request_throttle_stall_time": "5",
			"zookeeper.request_throttle_drop_stale": "FALSE", "zookeeper.throttled_op_wait_time": "30"}, 0,
			server.Config{MaxCnxns: 50, GlobalOutstandingLimit: 10, ThrottleMaxRequests: 7,
				ThrottleStallTime: 5 * time.Millisecond, ThrottledOpWaitTime: 30 * time.Millisecond}, false},
		{"3 voters divide by 2", map[string]string{"zookeeper.globalOutstandingLimit": "1000"}, 3,
			server.Config{GlobalOutstandingLimit: 500, ThrottleStallTime: 100 * time.Millisecond, ThrottleDropStale: true}, false},
		{"negative", map[string]string{"zookeeper.maxCnxns": "-1"}, 0, server.Config{}, true},
		{"not a number", map[string]string{"zookeeper.globalOutstandingLimit": "lots"}, 0, server.Config{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultZooCfg()
			for k, v := range tt.props {
				c.Props[k] = v
			}
			for i := 1; i <= tt.servers; i++ {
				c.Servers[i] = "127.0.0.1:2888:3888"
			}
			var got server.Config
			err := limitConfig(c, &got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && (got.MaxCnxns != tt.want.MaxCnxns || got.GlobalOutstandingLimit != tt.want.GlobalOutstandingLimit ||
				got.ThrottleMaxRequests != tt.want.ThrottleMaxRequests || got.ThrottleStallTime != tt.want.ThrottleStallTime ||
				got.ThrottleDropStale != tt.want.ThrottleDropStale || got.ThrottledOpWaitTime != tt.want.ThrottledOpWaitTime) {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

// TestIntegration_OutOfFiles runs zkd under a hard RLIMIT_NOFILE of 64 and
// opens sessions until one is refused: the refused client sees its
// connection closed, not a hang; zkd logs the limit; the sessions already
// established go on; and once some close, new ones get in.
func TestIntegration_OutOfFiles(t *testing.T) {
	bin := zkproc.BuildZkd(t)
	wrapper := filepath.Join(t.TempDir(), "zkd-nofile")
	script := "#!/bin/sh\nulimit -n 64 || exit 1\nexec " + bin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := zkproc.StartZkd(t, zkproc.Options{Binary: wrapper, ExtraCfg: map[string]string{"maxClientCnxns": "0"}})
	var open []net.Conn
	defer func() {
		for _, nc := range open {
			nc.Close()
		}
	}()
	var refused error
	for i := 0; i < 200 && refused == nil; i++ {
		nc, err := rawSession(srv.Addr, "127.0.0.1")
		if err != nil {
			refused = err
			break
		}
		open = append(open, nc)
	}
	if refused == nil {
		t.Fatalf("200 sessions under a limit of 64 descriptors")
	}
	if !errors.Is(refused, io.EOF) && !errors.Is(refused, syscall.ECONNRESET) {
		t.Fatalf("refused with %v, want the connection closed", refused)
	}
	// The refusal is logged as the connection closes, maybe after the
	// client saw it close.
	srv.AwaitLog(t, "out of file descriptors (RLIMIT_NOFILE)", 10*time.Second)
	for i, nc := range open {
		if err := ping(nc); err != nil {
			t.Fatalf("session %d of %d after the refusal: %v", i, len(open), err)
		}
	}
	for _, nc := range open[:4] {
		nc.Close()
	}
	open = open[4:]
	open = append(open, awaitSession(t, srv.Addr, "127.0.0.1"))
	t.Logf("%d sessions held at 64 descriptors", len(open))
}

// waitConnections polls srvr until addr counts want client connections
// (srvr's own among them).
func waitConnections(t *testing.T, addr string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := zkproc.FourLetter(addr, "srvr", time.Second)
		got := -1
		for line := range strings.SplitSeq(out, "\n") {
			if v, ok := strings.CutPrefix(line, "Connections:"); ok {
				got, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: srvr counts %d connections (err %v), want %d", addr, got, err, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
