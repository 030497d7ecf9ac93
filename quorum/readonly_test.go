package quorum_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/jute"
)

// roClient is a minimal Jute client that can ask for a read-only session,
// which go-zk cannot.
type roClient struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialReadOnly(t *testing.T, addr string) (*roClient, jute.ConnectResponse, error) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, jute.ConnectResponse{}, err
	}
	t.Cleanup(func() { nc.Close() })
	c := &roClient{t: t, nc: nc, br: bufio.NewReader(nc)}
	req := &jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16), HasReadOnly: true, ReadOnly: true}
	if _, err := nc.Write(jute.AppendFrame(nil, req)); err != nil {
		return nil, jute.ConnectResponse{}, err
	}
	b, err := c.frame()
	if err != nil {
		return nil, jute.ConnectResponse{}, err
	}
	resp := jute.ConnectResponse{HasReadOnly: true}
	if err := jute.Decode(b, &resp); err != nil {
		return nil, resp, err
	}
	return c, resp, nil
}

func (c *roClient) frame() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var hdr [4]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	_, err := io.ReadFull(c.br, b)
	return b, err
}

// call sends one request and returns the reply header and body decoder.
func (c *roClient) call(xid, op int32, req jute.Record) (jute.ReplyHeader, *jute.Decoder) {
	c.t.Helper()
	if _, err := c.nc.Write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: xid, Type: op}, req)); err != nil {
		c.t.Fatal(err)
	}
	b, err := c.frame()
	if err != nil {
		c.t.Fatal(err)
	}
	d := jute.NewDecoder(b)
	var h jute.ReplyHeader
	h.Decode(d)
	return h, d
}

// TestIntegration_ReadOnlyMode: with readonlymode.enabled, a member left
// alone serves read-only clients (isro answers ro, reads answered, writes
// refused with NotReadOnly) and refuses read-write ones; when the quorum
// is back it answers rw again.
func TestIntegration_ReadOnlyMode(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200, Env: []string{"JVMFLAGS=-Dreadonlymode.enabled=true"}})
	c, _ := dial(t, 4*time.Second, zkproc.Addrs(servers)...)
	if _, err := c.Create("/ro", []byte("data"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	alone := servers[2]
	if out, err := alone.FourLetter("isro"); err != nil || strings.TrimSpace(out) != "rw" {
		t.Fatalf("isro with quorum = %q, %v", out, err)
	}
	// Let the write reach the member left alone.
	c3, _ := dial(t, 4*time.Second, alone.Addr)
	if _, err := c3.Sync("/ro"); err != nil {
		t.Fatal(err)
	}
	c3.Close()
	servers[0].Kill()
	servers[1].Kill()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := alone.FourLetter("isro")
		if strings.TrimSpace(out) == "ro" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("isro still %q 10s after the quorum was lost", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// srvr agrees (polled: under load one 4-letter exchange can time
	// out, which mode reports as "").
	for m := alone.Mode(); m != "read-only"; m = alone.Mode() {
		if time.Now().After(deadline) {
			t.Fatalf("srvr Mode = %q, want read-only", m)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ro, resp, err := dialReadOnly(t, alone.Addr)
	if err != nil || !resp.ReadOnly || resp.SessionId == 0 {
		t.Fatalf("read-only connect: %+v, %v", resp, err)
	}
	h, d := ro.call(1, jute.OpGetData, &jute.GetDataRequest{Path: "/ro"})
	var gd jute.GetDataResponse
	gd.Decode(d)
	if h.Err != 0 || string(gd.Data) != "data" {
		t.Fatalf("read-only getData: %+v %q", h, gd.Data)
	}
	if h, _ := ro.call(2, jute.OpSetData, &jute.SetDataRequest{Path: "/ro", Data: []byte("x"), Version: -1}); h.Err != jute.CodeNotReadOnly {
		t.Fatalf("read-only setData: err %d, want %d", h.Err, jute.CodeNotReadOnly)
	}
	if err := zkproc.Handshake(alone.Addr, time.Second); err == nil {
		t.Fatal("a read-write handshake succeeded on a member without quorum")
	}
	servers[0].Restart(t)
	servers[1].Restart(t)
	deadline = time.Now().Add(20 * time.Second)
	for {
		out, _ := alone.FourLetter("isro")
		if strings.TrimSpace(out) == "rw" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("isro still %q after the quorum came back", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := ro.frame(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read-only connection still open after the quorum came back: %v", err)
	}
}
