// Package zkproc runs real coordination servers as child processes for
// tests and benchmarks: zkd itself (built from ./cmd/zkd) and, for
// differential runs, Apache ZooKeeper 3.8 from Debian's `zookeeper` package.
//
// Every server gets its own directory with a zoo.cfg, a data directory and a
// log file, listens on 127.0.0.1 on a free port, and is stopped by PID when
// the test ends (t.Cleanup). When the test failed, the tail of the server's
// log is printed. A server counts as ready once a client handshake on its
// port yields a session, which is the moment a real client could use it.
//
// A typical test:
//
//	s := zkproc.StartZkd(t, zkproc.Options{})
//	conn, _, err := zk.Connect([]string{s.Addr}, 10*time.Second)
//	...
//	s.Kill()       // SIGKILL, as a crash
//	s.Restart(t)   // same directory and port
//
// Ensembles of three members are started with StartZkdEnsemble or
// StartZooKeeperEnsemble; each member is a *Server of its own, so one can be
// paused (SIGSTOP), killed or restarted while the others run; WaitServing
// waits until a member grants sessions again.
//
// StartProxy puts a TCP proxy in front of a server for client-side network
// faults: Blackhole (connections stay open, no byte passes), Reject (new
// connections closed at once), Reset (every connection cut), Heal.
//
// Environment: ZKD_BIN names a prebuilt zkd to use instead of building one
// (make test sets it); ZKD_BUILDFLAGS adds go build flags (e.g. -race);
// CI=true turns a missing ZooKeeper installation from a skip into a failure.
package zkproc
