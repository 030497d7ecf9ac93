package zkproc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// below the kernel's ephemeral range (see freePort). The port is not
// reserved: StartZkd and StartZooKeeper retry with another port
// if a server finds theirs taken.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("zkproc: %v", err)
	}
	return port
}

// FreePorts returns n distinct ports that were free a moment ago, drawn
// as FreePort's. Each stays bound until all are drawn, so none is handed
// out twice.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for len(ports) < n {
		p, err := freePort()
		if err != nil {
			t.Fatalf("zkproc: %v", err)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // taken since freePort looked: draw again
		}
		defer l.Close()
		ports = append(ports, p)
	}
	return ports
}

// pickPort chooses a standalone server's client port; tests replace it to
// force a port collision.
var pickPort = freePort

// pickAdminPort chooses a zkd's admin server port, as pickPort the client
// port.
var pickAdminPort = freePort

// freePort picks a free port below the kernel's ephemeral range: a server
// killed and restarted on its port must not find it taken by an outgoing
// connection in between, which can happen to a port the kernel handed out
// for port 0. Outside Linux, or when nothing below the range is free, it
// falls back to port 0.
func freePort() (int, error) {
	if lo, hi, ok := belowEphemeral(); ok {
		for range 200 {
			p := lo + rand.IntN(hi-lo+1)
			if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
				l.Close()
				return p, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// belowEphemeral returns the port range tests draw from: from 10000 up to
// the start of Linux's ip_local_port_range.
func belowEphemeral() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil || first <= 11000 {
		return 0, 0, false
	}
	return 10000, first - 1, true
}

// FourLetter sends a 4-letter word to addr and returns the reply, read until
// the server closes the connection.
func FourLetter(addr, cmd string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", fmt.Errorf("zkproc: %s: %w", cmd, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", fmt.Errorf("zkproc: %s: %w", cmd, err)
	}
	b, err := io.ReadAll(c)
	if err != nil && len(b) == 0 {
		return "", fmt.Errorf("zkproc: %s: %w", cmd, err)
	}
	return string(b), nil
}

// connectRequestLen is the body of a ConnectRequest without the optional
// readOnly byte: protocolVersion int, lastZxidSeen long, timeOut int,
// sessionId long, passwd buffer of 16 bytes.
const connectRequestLen = 4 + 8 + 4 + 8 + 4 + 16

// Handshake opens a client session on addr, as a client would, and closes
// it again. It succeeds only when the server granted a session (positive
// timeout, nonzero id), which a ZooKeeper that is still loading its data, or
// a member without a quorum, does not do.
func Handshake(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return fmt.Errorf("zkproc: handshake: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))

	req := make([]byte, 4+connectRequestLen)
	binary.BigEndian.PutUint32(req[0:], connectRequestLen)
	// protocolVersion 0 at 4, lastZxidSeen 0 at 8.
	binary.BigEndian.PutUint32(req[16:], uint32(timeout.Milliseconds()*4)) // timeOut
	// sessionId 0 at 20.
	binary.BigEndian.PutUint32(req[28:], 16) // passwd length, 16 zero bytes follow
	if _, err := c.Write(req); err != nil {
		return fmt.Errorf("zkproc: handshake: %w", err)
	}
	body, err := readFrame(c)
	if err != nil {
		return fmt.Errorf("zkproc: handshake: %w", err)
	}
	if len(body) < 4+4+8 {
		return fmt.Errorf("zkproc: handshake: short ConnectResponse of %d bytes", len(body))
	}
	negotiated := int32(binary.BigEndian.Uint32(body[4:]))
	session := int64(binary.BigEndian.Uint64(body[8:]))
	if negotiated <= 0 || session == 0 {
		return errors.New("zkproc: handshake: session refused")
	}
	// closeSession: RequestHeader {xid 1, type -11}, no body.
	closeReq := make([]byte, 12)
	binary.BigEndian.PutUint32(closeReq[0:], 8)
	binary.BigEndian.PutUint32(closeReq[4:], 1)
	binary.BigEndian.PutUint32(closeReq[8:], uint32(0xFFFFFFF5)) // -11
	if _, err := c.Write(closeReq); err == nil {
		_, _ = readFrame(c) // the server's ReplyHeader; best effort
	}
	return nil
}

func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	if n < 0 || n > 1<<20 {
		return nil, fmt.Errorf("bad frame length %d", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// WaitServing polls addr with Handshake until it grants a session, failing
// t after timeout. Use it after Resume, or after a member of an ensemble
// lost its leader, to wait until clients can be served again.
func WaitServing(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := Handshake(addr, time.Second)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("zkproc: %s not serving after %v: %v", addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
