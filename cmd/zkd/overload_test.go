package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/jute"
)

// rssBytes reads the resident set size of process pid from /proc.
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// rssPeak samples a process's RSS every 50 ms until stop is called, which
// returns the highest sample.
func rssPeak(t *testing.T, pid int) (stop func() int64) {
	var (
		peak atomic.Int64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if n, err := rssBytes(pid); err == nil && n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// idleSessions opens n go-zk sessions of the smallest timeout the server
// grants, which only ping, and counts the expiries and disconnects they
// see.
func idleSessions(t *testing.T, addr string, n int, timeout time.Duration) (expired, disconnected *atomic.Int64) {
	expired, disconnected = new(atomic.Int64), new(atomic.Int64)
	for range n {
		c, ev, err := zk.Connect([]string{addr}, timeout, zk.WithLogger(nopLogger{}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		for c.State() != zk.StateHasSession {
			<-ev
		}
		go func() {
			for e := range ev {
				switch e.State {
				case zk.StateExpired:
					expired.Add(1)
				case zk.StateDisconnected:
					disconnected.Add(1)
				}
			}
		}()
	}
	return expired, disconnected
}

// TestIntegration_OverloadBoundedMemory floods a real zkd with pipelined
// writes of large data from many connections, far more than fsync takes
// (each connection keeps depth requests in flight, and what is not read
// waits in the sockets), while idle sessions with the smallest timeout
// only ping. It asserts that zkd's RSS stays under a bound derived from
// globalOutstandingLimit, that no idle session expires, and that every
// acknowledged write is readable afterwards.
//
// The bound. Past globalOutstandingLimit (L) a connection with requests
// outstanding is not read, so at most L + clients requests are in process
// (each reader may pass one over the limit before it stops). One holds at
// most four copies of its frame (read buffer, raft command, the log's
// write buffer, the log cache's entry), and Go's heap may grow to twice
// what is live before a collection (GOGC=100): 8 × (L + clients) × frame.
// The rest of the memory a write flood uses, the log cache (at most 16 MiB
// of recent entries), the log's write buffer, Pebble's block cache and the
// tree's copy of the data, is in the baseline, measured after a warm-up
// that writes the same nodes with the same size, one request at a time.
// 96 MiB of slack covers the runtime (with the segment log, a peak of 119
// MiB over a baseline of 73 MiB was seen; with Pebble holding the log,
// 119 to 131 over 85, against 911 MiB with the limit off). Without the
// limit, zkd reads every request in the sockets: clients × depth × frame
// (128 MiB here) on top of the
// baseline, which is over the bound.
func TestIntegration_OverloadBoundedMemory(t *testing.T) {
	const (
		limit    = 8
		clients  = 16
		depth    = 64
		perConn  = 192
		dataSize = 128 << 10
		warmups  = 640 // 640 × 128 KiB = 80 MiB: both memtables cycled
		slack    = 96 << 20
	)
	srv := zkproc.StartZkd(t, zkproc.Options{TickTime: 1000,
		ExtraCfg: map[string]string{"globalOutstandingLimit": strconv.Itoa(limit)}})
	expired, disconnected := idleSessions(t, srv.Addr, 8, 2*time.Second)

	conns := make([]*zk.Conn, clients)
	for i := range conns {
		c, _, err := zk.Connect([]string{srv.Addr}, 20*time.Second, zk.WithLogger(nopLogger{}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	data := func(conn, seq int) []byte {
		b := make([]byte, dataSize)
		binary.BigEndian.PutUint32(b, uint32(conn))
		binary.BigEndian.PutUint32(b[4:], uint32(seq))
		return b
	}
	for i, c := range conns {
		if _, err := c.Create(fmt.Sprintf("/ov%d", i), data(i, 0), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	for w := range warmups {
		if _, err := conns[0].Set(fmt.Sprintf("/ov%d", w%clients), data(w%clients, 0), -1); err != nil {
			t.Fatalf("warm-up write %d: %v", w, err)
		}
	}
	start := make([]int32, clients) // each node's version before the flood
	for i := range start {
		_, st, err := conns[0].Exists(fmt.Sprintf("/ov%d", i))
		if err != nil {
			t.Fatal(err)
		}
		start[i] = st.Version
	}
	base, err := rssBytes(srv.PID())
	if err != nil {
		t.Fatal(err)
	}
	stop := rssPeak(t, srv.PID())

	// Each connection sets its own node: the Stat a set returns gives its
	// version, and the data names (connection, sequence) of the write.
	type acked struct {
		mu      sync.Mutex
		version map[int32]int // version → sequence of the write
		created []string
	}
	acks := make([]acked, clients)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for i, c := range conns {
		acks[i].version = map[int32]int{}
		for g := range depth {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := g + 1; seq <= perConn; seq += depth {
					var err error
					if seq%8 == 0 {
						var p string
						p, err = c.Create(fmt.Sprintf("/ov%d/c", i), []byte("x"), zk.FlagSequence, zk.WorldACL(zk.PermAll))
						if err == nil {
							acks[i].mu.Lock()
							acks[i].created = append(acks[i].created, p)
							acks[i].mu.Unlock()
						}
					} else {
						var st *zk.Stat
						st, err = c.Set(fmt.Sprintf("/ov%d", i), data(i, seq), -1)
						if err == nil {
							acks[i].mu.Lock()
							acks[i].version[st.Version] = seq
							acks[i].mu.Unlock()
						}
					}
					if err != nil && failed.Add(1) == 1 {
						t.Logf("first failed write: connection %d seq %d: %v", i, seq, err)
					}
				}
			}()
		}
	}
	wg.Wait()
	peak := stop()
	bound := base + 8*(limit+clients)*(dataSize+64) + slack
	t.Logf("zkd RSS: baseline %d MiB, peak %d MiB during the flood, bound %d MiB; %d idle sessions disconnected",
		base>>20, peak>>20, bound>>20, disconnected.Load())
	if peak > bound {
		t.Errorf("zkd RSS peaked at %d MiB, over the bound of %d MiB", peak>>20, bound>>20)
	}
	if n := expired.Load(); n != 0 {
		t.Errorf("%d idle sessions expired during the flood", n)
	}
	if n := failed.Load(); n != 0 {
		t.Errorf("%d writes failed", n)
	}
	check, _, err := zk.Connect([]string{srv.Addr}, 20*time.Second, zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	for i := range acks {
		a := &acks[i]
		got, st, err := check.Get(fmt.Sprintf("/ov%d", i))
		if err != nil {
			t.Fatalf("read /ov%d: %v", i, err)
		}
		seq, ok := a.version[st.Version]
		if !ok || int(st.Version-start[i]) != len(a.version) || binary.BigEndian.Uint32(got) != uint32(i) || binary.BigEndian.Uint32(got[4:]) != uint32(seq) {
			t.Errorf("/ov%d: version %d (%d before, %d sets acknowledged), data of write %d, want write %d",
				i, st.Version, start[i], len(a.version), binary.BigEndian.Uint32(got[4:]), seq)
		}
		kids, _, err := check.Children(fmt.Sprintf("/ov%d", i))
		if err != nil || len(kids) != len(a.created) {
			t.Errorf("/ov%d: %d children (%v), %d creates acknowledged", i, len(kids), err, len(a.created))
		}
	}
}

// TestIntegration_ClientNotReading sends a stream of reads of a large
// node on a raw connection that never reads its replies: zkd must cut it
// off once its queued replies pass the output bound (MaxOutQueueBytes,
// 64 MiB) and log that, while another session's requests are answered
// throughout and zkd's RSS stays within that bound of its baseline.
func TestIntegration_ClientNotReading(t *testing.T) {
	const (
		dataSize = 1000 << 10
		outBound = 64 << 20 // server.DefaultConfig().MaxOutQueueBytes
		slack    = 64 << 20
	)
	srv := zkproc.StartZkd(t, zkproc.Options{})
	other, _, err := zk.Connect([]string{srv.Addr}, 10*time.Second, zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Create("/big", make([]byte, dataSize), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	base, err := rssBytes(srv.PID())
	if err != nil {
		t.Fatal(err)
	}
	stop := rssPeak(t, srv.PID())
	nc, err := rawSession(srv.Addr, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	e := jute.NewEncoder(nil)
	(&jute.RequestHeader{Xid: 1, Type: jute.OpGetData}).Encode(e)
	(&jute.GetDataRequest{Path: "/big"}).Encode(e)
	req := append(binary.BigEndian.AppendUint32(nil, uint32(len(e.Bytes()))), e.Bytes()...)
	// Twice the replies the bound holds; the kernel's buffers take a few
	// MiB more. The writes end with an error once zkd closes.
	var werr error
	nc.SetWriteDeadline(time.Now().Add(60 * time.Second))
	for range 2 * outBound / dataSize {
		if _, werr = nc.Write(req); werr != nil {
			break
		}
		if _, _, err := other.Get("/big"); err != nil {
			t.Fatalf("other session held up while a client does not read: %v", err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(srv.Log(), "client does not read its replies") {
		if time.Now().After(deadline) {
			t.Fatalf("zkd did not cut off the client that does not read (last write: %v)", werr)
		}
		if _, _, err := other.Get("/big"); err != nil {
			t.Fatalf("other session: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	peak := stop()
	// Reading now finds the connection closed after what was in flight.
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 1<<20)
	var rerr error
	for rerr == nil {
		_, rerr = nc.Read(buf)
	}
	var ne interface{ Timeout() bool }
	if errors.As(rerr, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after zkd logged cutting it off")
	}
	if _, _, err := other.Get("/big"); err != nil {
		t.Fatalf("other session after the cut-off: %v", err)
	}
	t.Logf("zkd RSS: baseline %d MiB, peak %d MiB", base>>20, peak>>20)
	if bound := base + 2*outBound + slack; peak > int64(bound) {
		t.Errorf("zkd RSS peaked at %d MiB, over %d MiB", peak>>20, bound>>20)
	}
}
