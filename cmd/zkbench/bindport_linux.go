package main

import "syscall"

// ipBindAddressNoPort is Linux's IP_BIND_ADDRESS_NO_PORT (linux/in.h),
// which package syscall does not name.
const ipBindAddressNoPort = 24

// bindNoPort asks the kernel to pick a dialing socket's local port at
// connect, not at bind. Binding a source address with port 0 makes the
// kernel choose a port unused by every other socket on that address, a
// search that grows with the sockets already open: at 10,000 sessions it
// cost zkbench seconds of system CPU per thousand connects and starved its
// own pinger (and the server beside it) of CPU. Chosen at connect, the
// port only has to be unique for the destination, a cheap hashed check.
func bindNoPort(network, address string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
	}); err != nil {
		return err
	}
	return serr
}

// childProcAttr has a -procs child killed if zkbench dies first.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
