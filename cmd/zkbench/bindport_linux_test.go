package main

import (
	"net"
	"syscall"
	"testing"
)

// TestSessionDialerBindsNoPort dials loopback listeners from each source
// address zkbench uses and checks that every socket was bound without a
// port (IP_BIND_ADDRESS_NO_PORT set), so its port is chosen at connect.
func TestSessionDialerBindsNoPort(t *testing.T) {
	tests := []struct {
		name string
		src  net.IP
	}{
		{"first address", net.IPv4(127, 0, 0, 1)},
		{"second address", net.IPv4(127, 0, 0, 2)},
		{"far address", net.IPv4(127, 0, 1, 44)},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := sessionDialer(tt.src).Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if got := nc.LocalAddr().(*net.TCPAddr).IP; !got.Equal(tt.src) {
				t.Fatalf("dialed from %v, want %v", got, tt.src)
			}
			rc, err := nc.(*net.TCPConn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var v int
			var gerr error
			if err := rc.Control(func(fd uintptr) {
				v, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort)
			}); err != nil {
				t.Fatal(err)
			}
			if gerr != nil || v != 1 {
				t.Fatalf("IP_BIND_ADDRESS_NO_PORT on a socket from %v = %d (%v), want 1", tt.src, v, gerr)
			}
		})
	}
}
