package main

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// fakeServer answers every connection's first frame with reply.
func fakeServer(t *testing.T, reply []byte) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			var hdr [4]byte
			if _, err := io.ReadFull(c, hdr[:]); err == nil {
				io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(hdr[:])))
				c.Write(reply)
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}

func connectResponse(timeout int32, session uint64) []byte {
	body := binary.BigEndian.AppendUint32(nil, 0)
	body = binary.BigEndian.AppendUint32(body, uint32(timeout))
	body = binary.BigEndian.AppendUint64(body, session)
	body = binary.BigEndian.AppendUint32(body, 16)
	body = append(body, make([]byte, 16)...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestProbe(t *testing.T) {
	granted := fakeServer(t, connectResponse(4000, 7))
	tests := []struct {
		name    string
		addrs   []string
		wantErr string
	}{
		{"granted", []string{granted}, ""},
		{"refused session", []string{fakeServer(t, connectResponse(0, 0))}, "session refused"},
		{"closed", []string{fakeServer(t, nil)}, "EOF"},
		{"bad length", []string{fakeServer(t, []byte{0, 0, 0, 2, 0, 0})}, "bad ConnectResponse length"},
		{"no listener", []string{"127.0.0.1:1"}, "refused"},
		{"second server answers", []string{"127.0.0.1:1", granted}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := probeAny(tt.addrs, time.Second)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("probeAny: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("probeAny error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
