package server

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"

	"go.uber.org/zap"
)

// overMaxCnxns reports whether accepting nc would exceed MaxCnxns, and
// then logs the refusal. As ZooKeeper's limitTotalNumberOfCnxns, every open
// connection counts (4-letter words too) and the total is checked before
// the per-address limit. Called with s.mu held.
func (s *Server) overMaxCnxns(nc net.Conn) bool {
	limit := s.cfg.MaxCnxns
	if limit <= 0 || len(s.mu.conns) < limit {
		return false
	}
	s.stats.connectionRejected.Add(1)
	s.log.Warn("connection refused: too many connections in all",
		zap.String("remote", nc.RemoteAddr().String()), zap.Int("connections", len(s.mu.conns)),
		zap.Int("maxCnxns", limit))
	return true
}

// fdReserve is a file descriptor held back so that, when the process runs
// out, a pending connection can still be accepted and closed: otherwise
// it would wait in the listen queue, and the accept loop would spin on
// EMFILE, until some descriptor is freed.
type fdReserve struct {
	mu sync.Mutex
	f  *os.File
}

// hold opens the reserve descriptor if it is not open.
func (r *fdReserve) hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		r.f, _ = os.Open(os.DevNull)
	}
}

// free closes the reserve descriptor; false if there was none.
func (r *fdReserve) free() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return false
	}
	r.f.Close()
	r.f = nil
	return true
}

// refuseOutOfFiles handles an accept error: when the process (EMFILE) or
// the system (ENFILE) is out of file descriptors, it spends the reserve
// descriptor to accept one pending connection and close it at once, with a
// log line naming the limit, so the client sees a refusal rather than a
// hang. Established connections are not touched. It returns false for
// other errors.
func (s *Server) refuseOutOfFiles(ln net.Listener, err error) bool {
	if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) {
		return false
	}
	var rl syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	fields := []zap.Field{zap.Error(err), zap.Uint64("RLIMIT_NOFILE", rl.Cur), zap.Int("connections", s.connectionCount())}
	if !s.reserve.free() {
		s.log.Warn("accept failed: out of file descriptors", fields...)
		return false
	}
	nc, aerr := ln.Accept()
	if aerr == nil {
		s.stats.connectionRejected.Add(1)
		fields = append(fields, zap.String("remote", nc.RemoteAddr().String()))
		nc.Close()
	}
	s.log.Warn("connection refused: out of file descriptors (RLIMIT_NOFILE)", fields...)
	s.reserve.hold()
	return true
}

// connectionCount is the number of open client connections.
func (s *Server) connectionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.conns)
}
