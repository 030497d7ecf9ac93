package main

import (
	"encoding/binary"
	"net"
	"os"
	"slices"
	"testing"
	"time"
)

// frame is a ZooKeeper frame: length, then xid and the rest of the body.
func frame(xid int32, rest int) []byte {
	b := make([]byte, 8+rest)
	binary.BigEndian.PutUint32(b, uint32(4+rest))
	binary.BigEndian.PutUint32(b[4:], uint32(xid))
	return b
}

// TestFleetConnTimesPings checks that the wrapper finds ping frames in a
// stream cut anywhere (go-zk reads a frame's length and body separately,
// and a read may end mid-header), skips the connect frames, and counts a
// ping's round trip once and the gap between two ping writes.
func TestFleetConnTimesPings(t *testing.T) {
	for _, cut := range []int{1, 3, 4, 5, 7, 64} {
		w := &fleetWorker{pingHist: NewHistogram()}
		s := &fleetSession{w: w}
		client, server := net.Pipe()
		c := &fleetConn{Conn: client, s: s}
		// The server side answers: the connect response (whose first body
		// bytes read as xid -2 here: it must not count), a reply, a
		// watch event, then the ping reply.
		connectResp := frame(-2, 30)
		stream := slices.Concat(connectResp, frame(5, 100), frame(-1, 20), frame(-2, 8))
		go func() {
			for p := stream; len(p) > 0; {
				k := min(cut, len(p))
				server.Write(p[:k])
				p = p[k:]
			}
		}()
		// Client writes: the connect request, then two pings.
		go func() {
			buf := make([]byte, 1024)
			for {
				if _, err := server.Read(buf); err != nil {
					return
				}
			}
		}()
		c.Write(frame(0, 40)) // connect request
		c.Write(frame(-2, 4))
		time.Sleep(2 * time.Millisecond)
		c.Write(frame(-2, 4))
		buf := make([]byte, 512)
		var got int
		for got < len(stream) {
			n, err := c.Read(buf[:min(len(buf), cut+3)])
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
		client.Close()
		server.Close()
		if w.pingHist.Count() != 1 {
			t.Errorf("cut %d: %d ping round trips recorded, want 1", cut, w.pingHist.Count())
		}
		if gap := time.Duration(s.maxGap.Load()); gap < 2*time.Millisecond {
			t.Errorf("cut %d: ping gap %v, want at least 2ms", cut, gap)
		}
		if s.pingSent.Load() != 0 {
			t.Errorf("cut %d: a ping is still outstanding after its reply", cut)
		}
	}
}

// TestFleetHosts checks that sessions start on their own member and go
// round the list, signalling each full round.
func TestFleetHosts(t *testing.T) {
	h := &fleetHosts{servers: []string{"a", "b", "c"}, next: 4}
	var got []string
	var retries []bool
	for range 5 {
		s, r := h.Next()
		got = append(got, s)
		retries = append(retries, r)
	}
	if !slices.Equal(got, []string{"b", "c", "a", "b", "c"}) || !slices.Equal(retries, []bool{false, false, false, true, false}) {
		t.Errorf("Next gave %v, retries %v", got, retries)
	}
	h.Connected()
	if _, r := h.Next(); r {
		t.Errorf("retry right after Connected")
	}
}

// TestFleetPhaseMerge checks that phases merge as their histograms would,
// through the JSON form children send.
func TestFleetPhaseMerge(t *testing.T) {
	a, b := NewHistogram(), NewHistogram()
	for i := range 100 {
		a.Record(time.Duration(i) * time.Millisecond)
		b.Record(time.Duration(i) * time.Second)
	}
	p := fleetPhase{Offered: 10, Acquired: 9, Acquire: toSparse(a), MaxPingGap: 5, Expired: 1}
	p.merge(fleetPhase{Offered: 5, Acquired: 5, Acquire: toSparse(b), MaxPingGap: 7, Discon: 2})
	all := NewHistogram()
	all.Merge(a)
	all.Merge(b)
	h := p.Acquire.hist()
	if p.Offered != 15 || p.Acquired != 14 || p.MaxPingGap != 7 || p.Expired != 1 || p.Discon != 2 {
		t.Errorf("merged counters %+v", p)
	}
	for _, q := range []float64{0, 0.5, 0.99, 0.999, 1} {
		if h.Quantile(q) != all.Quantile(q) {
			t.Errorf("q%v: %v, want %v", q, h.Quantile(q), all.Quantile(q))
		}
	}
	if h.Count() != 200 || h.Mean() != all.Mean() {
		t.Errorf("count %d mean %v, want 200, %v", h.Count(), h.Mean(), all.Mean())
	}
}

func TestFleetPath(t *testing.T) {
	if got := fleetPath("/f", 123456); got != "/f/d0123/p0123456" {
		t.Errorf("fleetPath = %s", got)
	}
}

// TestPidListening finds this process by the port it listens on, which is
// how the fleet samples and kills local members given only addresses.
func TestPidListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got := pidListening(ln.Addr().String()); got != os.Getpid() {
		t.Errorf("pidListening(%s) = %d, want %d", ln.Addr(), got, os.Getpid())
	}
	addr := ln.Addr().String()
	ln.Close()
	if got := pidListening(addr); got != 0 {
		t.Errorf("pidListening(%s) after close = %d, want 0", addr, got)
	}
}

func TestLimitFor(t *testing.T) {
	tests := []struct {
		name string
		open []int
		free int
		want int
	}{
		{"compact", []int{0, 1, 2, 3}, 16, 20},
		{"one far above", []int{0, 1, 2, 500}, 16, 19},
		{"holes below", []int{0, 1, 2, 10, 11, 40}, 16, 21},
		{"unsorted", []int{40, 2, 11, 0, 10, 1}, 16, 21},
		{"none open", nil, 4, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := limitFor(tt.open, tt.free); got != tt.want {
				t.Fatalf("limitFor(%v, %d) = %d, want %d", tt.open, tt.free, got, tt.want)
			}
		})
	}
}
