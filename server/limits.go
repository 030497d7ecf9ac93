package server

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

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

// overFDHeadroom reports whether accepting nc would leave the process fewer
// than a 64th of RLIMIT_NOFILE (at least 4) descriptors besides its client
// connections, and then logs the refusal (at most slowLinesPerSecond lines
// a second, each with the count left out). The headroom is for the member
// itself: raft's connections to its peers, the forward streams, log
// segments and Pebble's tables. Without it a reconnect storm took every
// descriptor (100,000 sessions on 6 members, one killed: its 16,667
// clients came to the 5 others, each at 16,667 of 20,000), raft could no
// longer dial its peers ("socket: too many open files") and the members
// lost touch with each other. Called with s.mu held.
func (s *Server) overFDHeadroom(nc net.Conn) bool {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return false
	}
	limit := int(rl.Cur)
	headroom := max(limit/64, 4)
	used := s.fdBase + len(s.mu.conns) + 1 // nc is open already
	if used+headroom <= limit {
		return false
	}
	s.stats.connectionRejected.Add(1)
	if ok, suppressed := s.fdLog.admit(time.Now()); ok {
		s.log.Warn("connection refused: out of file descriptors (RLIMIT_NOFILE), keeping a headroom for the ensemble's own connections and files",
			zap.String("remote", nc.RemoteAddr().String()), zap.Uint64("RLIMIT_NOFILE", rl.Cur),
			zap.Int("connections", len(s.mu.conns)), zap.Int("headroom", headroom), zap.Int64("unloggedRefusals", suppressed))
	}
	return true
}

// openFDs counts the descriptors the process has open (0 where
// /proc/self/fd cannot be read).
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents) - 1 // ReadDir's own descriptor
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
