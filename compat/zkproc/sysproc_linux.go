package zkproc

import "syscall"

// sysProcAttr puts the server in its own process group and asks the kernel
// to kill it if the test process dies first, so no server outlives a
// crashed or interrupted test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
