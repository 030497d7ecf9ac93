package zkfollow

import (
	"bufio"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab/zkformat"
)

// createTxn encodes a TxnHeader and CreateTxn as a leader sends them, with
// a digest when digest is not nil.
func createTxn(zxid int64, path string, parentCVersion int32, digest *uint64) []byte {
	e := jute.NewEncoder(nil)
	e.WriteLong(0x1234) // clientId
	e.WriteInt(1)       // cxid
	e.WriteLong(zxid)
	e.WriteLong(1700000000000 + zxid) // time
	e.WriteInt(jute.OpCreate)
	e.WriteString(path)
	e.WriteBuffer([]byte("v"))
	e.WriteACLs([]jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}})
	e.WriteBool(false)
	e.WriteInt(parentCVersion)
	if digest != nil {
		e.WriteInt(zkformat.DigestVersion)
		e.WriteLong(int64(*digest))
	}
	return e.Bytes()
}

// syncSnapshot encodes a leader's SNAP stream: one session, no ACL cache
// entries, the root, /zookeeper and /a, the terminator and the signature.
func syncSnapshot(zxid int64) []byte {
	e := jute.NewEncoder(nil)
	e.WriteInt(1)
	e.WriteLong(0x99)
	e.WriteInt(30000)
	e.WriteInt(0) // ACL cache
	node := func(path string, czxid int64, cversion int32) {
		e.WriteString(path)
		e.WriteBuffer([]byte{})
		e.WriteLong(-1) // world:anyone ALL
		e.WriteLong(czxid)
		e.WriteLong(czxid)
		e.WriteLong(0)
		e.WriteLong(0)
		e.WriteInt(0)
		e.WriteInt(cversion)
		e.WriteInt(0)
		e.WriteLong(0)
		e.WriteLong(czxid)
	}
	node("", 0, 2)
	node("/zookeeper", 0, 0)
	node("/a", zxid, 0)
	e.WriteString("/")
	e.WriteString("BenWasHere")
	return e.Bytes()
}

// step is one move of a scripted leader: send a packet (and raw bytes
// after it), or expect one of a type from the follower.
type step struct {
	send   *packet
	raw    []byte
	expect int32
}

func send(typ int32, zxid int64, data []byte) step {
	return step{send: &packet{Type: typ, Zxid: zxid, Data: data}}
}

func expect(typ int32) step { return step{expect: typ} }

// fakeLeader accepts one learner, answers OBSERVERINFO with LEADERINFO for
// epoch 2, takes ACKEPOCH, then plays steps and closes. Errors go to errc.
func fakeLeader(t *testing.T, steps []step) (string, <-chan error, <-chan packet) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	errc := make(chan error, 1)
	ackEpoch := make(chan packet, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		ln.Close()
		r := zkformat.NewStreamReader(c)
		w := bufio.NewWriter(c)
		p, err := readPacket(r)
		if err != nil || p.Type != pktObserverInfo || len(p.Data) != 20 {
			errc <- errors.New("want OBSERVERINFO with a 20-byte LearnerInfo")
			return
		}
		writePacket(w, packet{Type: pktLeaderInfo, Zxid: 2 << 32, Data: []byte{0, 1, 0, 0}})
		if p, err = readPacket(r); err != nil || p.Type != pktAckEpoch {
			errc <- errors.New("want ACKEPOCH")
			return
		}
		ackEpoch <- p
		for _, s := range steps {
			if s.send != nil {
				if _, err := w.Write(append(s.send.encode(), s.raw...)); err != nil {
					errc <- err
					return
				}
				w.Flush()
				continue
			}
			p, err := readPacket(r)
			if err != nil {
				errc <- err
				return
			}
			if p.Type != s.expect {
				errc <- errors.New("got " + packetName(p.Type) + ", want " + packetName(s.expect))
				return
			}
		}
		errc <- nil
		// Hold the connection until the follower closes it.
		r.Int()
	}()
	return ln.Addr().String(), errc, ackEpoch
}

func TestFollower(t *testing.T) {
	const snapZxid = 1<<32 | 5
	// The digest after /b in an empty database, to check that digests
	// are compared.
	empty := zkformat.NewInitialTree()
	tx, err := zkformat.DecodeTxn(createTxn(1<<32|1, "/b", 1, nil))
	if err != nil {
		t.Fatal(err)
	}
	empty.Apply(&tx)
	good, bad := empty.Digest(), empty.Digest()+1
	snapPacket := send(pktSnap, snapZxid, nil)
	snapPacket.raw = syncSnapshot(snapZxid)
	for _, tc := range []struct {
		name    string
		resume  *zkformat.Tree
		steps   []step
		wantErr error
		zxid    int64
		nodes   []string
		mode    string
		digests int64
	}{
		{
			name: "SNAP then INFORM",
			steps: []step{
				snapPacket,
				send(pktInform, snapZxid+1, createTxn(snapZxid+1, "/a/x", 1, nil)),
				send(pktNewLeader, 2<<32, []byte("server.1=127.0.0.1:1:2:participant\nversion=0")),
				expect(pktAck),
				send(pktUpToDate, -1, nil),
				expect(pktAck),
				send(pktPing, snapZxid+1, nil),
				expect(pktPing),
				send(pktInform, 2<<32|1, createTxn(2<<32|1, "/c", 3, nil)),
			},
			zxid:  2<<32 | 1,
			nodes: []string{"/a", "/a/x", "/c"},
			mode:  "SNAP",
		},
		{
			name: "DIFF from an empty database",
			steps: []step{
				send(pktDiff, 1<<32|1, nil),
				send(pktProposal, 1<<32|1, createTxn(1<<32|1, "/b", 1, &good)),
				send(pktCommit, 1<<32|1, nil),
				send(pktNewLeader, 2<<32, nil),
				expect(pktAck),
				send(pktUpToDate, -1, nil),
				expect(pktAck),
			},
			zxid:    1<<32 | 1,
			nodes:   []string{"/zookeeper/config", "/b"},
			mode:    "DIFF",
			digests: 1,
		},
		{
			name: "digest disagrees",
			steps: []step{
				send(pktDiff, 1<<32|1, nil),
				send(pktProposal, 1<<32|1, createTxn(1<<32|1, "/b", 1, &good)),
				send(pktCommit, 1<<32|1, nil),
				send(pktInform, 1<<32|2, createTxn(1<<32|2, "/c", 2, &bad)),
			},
			wantErr: ErrDiverged,
		},
		{
			name:    "TRUNC below the followed zxid",
			resume:  empty,
			steps:   []step{send(pktTrunc, 1, nil)},
			wantErr: ErrDiverged,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, errc, ackEpoch := fakeLeader(t, tc.steps)
			f, err := New(Config{SID: 4, Addrs: []string{addr}, TickTime: 100 * time.Millisecond, Tree: tc.resume})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- f.Run(ctx) }()
			if tc.wantErr != nil {
				if err := <-done; !errors.Is(err, tc.wantErr) {
					t.Fatalf("Run: %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err := <-errc; err != nil {
				t.Fatalf("leader: %v", err)
			}
			if p := <-ackEpoch; p.Zxid != 0 || len(p.Data) != 4 {
				t.Errorf("ACKEPOCH zxid 0x%x, %d bytes; want 0 and the current epoch", p.Zxid, len(p.Data))
			}
			if err := f.WaitZxid(ctx, tc.zxid); err != nil {
				t.Fatalf("zxid 0x%x not reached: %+v", tc.zxid, f.Status())
			}
			cancel()
			<-done
			st, tree := f.Status(), f.Tree()
			if st.SyncMode != tc.mode || st.Syncs != 1 || tree.LastZxid != tc.zxid || st.DigestsChecked != tc.digests {
				t.Errorf("status %+v, want mode %s, zxid 0x%x, %d digests", st, tc.mode, tc.zxid, tc.digests)
			}
			for _, p := range tc.nodes {
				if tree.Node(p) == nil {
					t.Errorf("%s missing", p)
				}
			}
			if tc.mode == "SNAP" && tree.Sessions[0x99] != 30000 {
				t.Errorf("sessions %v, want 0x99 from the snapshot", tree.Sessions)
			}
		})
	}
}

func TestPacketRoundTrip(t *testing.T) {
	for _, p := range []packet{
		{Type: pktPing, Zxid: 7},
		{Type: pktInform, Zxid: 1 << 32, Data: []byte{1, 2, 3}, Auth: []jute.Id{{Scheme: "digest", Id: "a:b"}}},
		{Type: pktAck, Zxid: -1, Data: []byte{}, Auth: []jute.Id{}},
	} {
		c1, c2 := net.Pipe()
		go func() {
			c1.Write(p.encode())
			c1.Close()
		}()
		got, err := readPacket(zkformat.NewStreamReader(c2))
		if err != nil {
			t.Fatalf("%s: %v", packetName(p.Type), err)
		}
		if got.Type != p.Type || got.Zxid != p.Zxid || string(got.Data) != string(p.Data) || len(got.Auth) != len(p.Auth) || (p.Data == nil) != (got.Data == nil) {
			t.Errorf("round trip of %+v gave %+v", p, got)
		}
	}
}
