//go:build !linux

package main

import "syscall"

// bindNoPort does nothing off Linux, which has no IP_BIND_ADDRESS_NO_PORT.
func bindNoPort(network, address string, c syscall.RawConn) error { return nil }

// childProcAttr is the default elsewhere.
func childProcAttr() *syscall.SysProcAttr { return nil }
