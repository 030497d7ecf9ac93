package main

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
)

// reply encodes one reply frame.
func reply(xid int32, zxid int64, code jute.Code, body jute.Record) []byte {
	return jute.AppendFrame(nil, &jute.ReplyHeader{Xid: xid, Zxid: zxid, Err: code}, body)
}

// readFrameFrom reads one length-prefixed frame the way go-zk does: the
// length, then the body, through io.ReadFull.
func readFrameFrom(t *testing.T, r io.Reader) []byte {
	t.Helper()
	body, err := readBody(r)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// readBody reads one frame's body; safe off the test goroutine.
func readBody(r io.Reader) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(l[:]))
	_, err := io.ReadFull(r, body)
	return body, err
}

// TestWireConn checks the frame splicing the shell relies on: the handshake
// reply and go-zk's replies pass through untouched, replies to the shell's
// xids reach their waiters and never go-zk, zxids are noted from replies but
// not from pings or notifications, and a broken connection wakes waiters.
func TestWireConn(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	var lastZxid atomic.Int64
	w := newWireConn(client, func(z int64) { lastZxid.Store(z) })

	handshake := jute.AppendFrame(nil, &jute.ConnectResponse{TimeOut: 4000, SessionId: 7, Passwd: make([]byte, 16)})
	ours := rawXidBase + 1
	serverDone := make(chan error, 1)
	go func() {
		// The shell's request arrives whole, with its xid and opcode.
		body, err := readBody(server)
		if err != nil {
			serverDone <- err
			return
		}
		var hdr jute.RequestHeader
		var req jute.GetDataRequest
		d := jute.NewDecoder(body)
		hdr.Decode(d)
		req.Decode(d)
		if hdr.Xid != ours || hdr.Type != jute.OpGetData || req.Path != "/x" || !req.Watch {
			t.Errorf("request %+v %+v", hdr, req)
		}
		var out bytes.Buffer
		out.Write(handshake)
		out.Write(reply(5, 0x10, 0, &jute.ExistsResponse{}))                      // go-zk's
		out.Write(reply(ours, 0x11, 0, &jute.GetDataResponse{Data: []byte("d")})) // ours
		out.Write(reply(jute.XidPing, 0x99, 0, nil))                              // ping: zxid ignored
		out.Write(reply(jute.XidNotification, -1, 0, &jute.WatcherEvent{Type: jute.EventNodeDataChanged, State: 3, Path: "/x"}))
		_, err = server.Write(out.Bytes())
		serverDone <- err
	}()

	ch, err := w.send(ours, jute.OpGetData, &jute.GetDataRequest{Path: "/x", Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFrameFrom(t, w); !bytes.Equal(got, handshake[4:]) {
		t.Fatalf("handshake = %x, want %x", got, handshake[4:])
	}
	var hdr jute.ReplyHeader
	if err := jute.Decode(readFrameFrom(t, w)[:16], &hdr); err != nil || hdr.Xid != 5 {
		t.Fatalf("go-zk's reply: %+v %v", hdr, err)
	}
	// go-zk reads on (as its receive loop always does): our reply is taken
	// out of the stream on the way to the ping and the notification.
	for _, want := range []int32{jute.XidPing, jute.XidNotification} {
		if err := jute.Decode(readFrameFrom(t, w)[:16], &hdr); err != nil || hdr.Xid != want {
			t.Fatalf("next frame for go-zk: %+v %v, want xid %d", hdr, err, want)
		}
	}
	select {
	case r := <-ch:
		var resp jute.GetDataResponse
		if r.hdr.Xid != ours || r.hdr.Zxid != 0x11 || jute.Decode(r.body, &resp) != nil || string(resp.Data) != "d" {
			t.Fatalf("our reply: %+v %q", r.hdr, resp.Data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("our reply was not delivered")
	}
	if err := <-serverDone; err != nil {
		t.Fatal(err)
	}
	if got := lastZxid.Load(); got != 0x11 {
		t.Errorf("last zxid = %#x, want 0x11", got)
	}

	// A waiter is woken when the connection fails.
	got := make(chan struct{})
	go func() { readBody(server); close(got) }()
	ch, err = w.send(ours+1, jute.OpSync, &jute.SyncRequest{Path: "/"})
	if err == nil {
		<-got
		server.Close()
		buf := make([]byte, 4)
		if _, err := w.Read(buf); err == nil {
			t.Fatal("read from a closed connection succeeded")
		}
		if _, ok := <-ch; ok {
			t.Fatal("waiter got a reply from a closed connection")
		}
	}
	if _, err := w.send(ours+2, jute.OpSync, &jute.SyncRequest{Path: "/"}); err == nil {
		t.Error("send on a failed connection succeeded")
	}
}
