package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkd/zkd/jute"
)

// -fault fd-limit drives one member to its file descriptor limit while
// the fleet runs, as a machine that ran out of descriptors would: it
// lowers the member's RLIMIT_NOFILE soft limit (prlimit, fdlimit_linux.go)
// to leave it fdLimitHeadroom free descriptors (limitFor), opens sessions on
// it until one is refused, holds them fdLimitHold, closes them and times
// how long until the member grants a session again; then it puts the
// limit back. The member is the first observer of -servers, else the
// first follower. The fleet's own sessions are not touched.

// fdLimitHeadroom is how many descriptors over those open the member's
// lowered limit leaves: what zkbench's sessions then fill.
const fdLimitHeadroom = 16

// fdLimitHold is how long zkbench holds the member at its limit.
const fdLimitHold = 5 * time.Second

// fdLimitAnswer is how long a new session waits for the member's answer
// before it counts as refused by silence.
const fdLimitAnswer = 5 * time.Second

// fdLimitSource is the source address of zkbench's filling sessions, out
// of the fleet's range (127.0.0.1 up), so maxClientCnxns counts them
// apart.
var fdLimitSource = net.IPv4(127, 0, 250, 1)

// fdLimitReport is what -fault fd-limit did to its member.
type fdLimitReport struct {
	Member  string `json:"member"`
	Mode    string `json:"mode"`
	PID     int    `json:"pid"`
	Limit   uint64 `json:"limit"` // the soft RLIMIT_NOFILE it set
	Was     uint64 `json:"was"`   // the soft limit before
	Held    int    `json:"held"`  // sessions zkbench opened before one was refused
	Refusal string `json:"refusal,omitempty"`
	// FillMs is the time from the first of zkbench's sessions to the
	// refusal.
	FillMs float64 `json:"fill_ms"`
	// ServedAgainMs is the time from closing the held sessions until the
	// member granted a session again; -1 if it did not within 15 s.
	ServedAgainMs float64 `json:"served_again_ms"`
	Err           string  `json:"error,omitempty"`
}

func (r *fdLimitReport) String() string {
	if r.Err != "" {
		return "not done: " + r.Err
	}
	again := "did not serve again within 15s"
	if r.ServedAgainMs >= 0 {
		again = fmt.Sprintf("served again %.0f ms after they closed", r.ServedAgainMs)
	}
	return fmt.Sprintf("fd limit on %s %s (pid %d): RLIMIT_NOFILE %d (was %d); %d new sessions in %.0f ms, then refused (%s); held %v, %s",
		r.Mode, r.Member, r.PID, r.Limit, r.Was, r.Held, r.FillMs, r.Refusal, fdLimitHold, again)
}

// fdLimitFault is -fault fd-limit; see above.
func fdLimitFault(ctx context.Context, cfg config) *fdLimitReport {
	r := &fdLimitReport{ServedAgainMs: -1}
	for _, want := range []string{"observer", "follower"} {
		for i, addr := range cfg.servers {
			if r.Member == "" && memberMode(addr) == want {
				r.Member, r.Mode, r.PID = addr, want, pidListening(addr)
				if i < len(cfg.pids) {
					r.PID = cfg.pids[i]
				}
			}
		}
	}
	switch {
	case r.Member == "":
		r.Err = "no member answered srvr with Mode: observer or follower"
		return r
	case r.PID == 0:
		r.Err = "no local process found for " + r.Mode + " " + r.Member
		return r
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", r.PID))
	if err != nil {
		r.Err = fmt.Sprintf("list the descriptors of pid %d: %v", r.PID, err)
		return r
	}
	var open []int
	for _, fd := range fds {
		if n, err := strconv.Atoi(fd.Name()); err == nil {
			open = append(open, n)
		}
	}
	r.Limit = uint64(limitFor(open, fdLimitHeadroom))
	if r.Was, err = setNoFile(r.PID, r.Limit); err != nil {
		r.Err = fmt.Sprintf("lower RLIMIT_NOFILE of pid %d to %d: %v", r.PID, r.Limit, err)
		return r
	}
	defer setNoFile(r.PID, r.Was)
	var held []*rawSession
	defer func() {
		for _, s := range held {
			closeRawSession(s)
		}
	}()
	fill := time.Now()
	for len(held) < 20*fdLimitHeadroom && ctx.Err() == nil {
		type opened struct {
			s   *rawSession
			err error
		}
		ch := make(chan opened, 1)
		go func() {
			s, err := openSession(r.Member, fdLimitSource, cfg.sessionTimeout, 0, nil, 0, 0, "")
			ch <- opened{s, err}
		}()
		var o opened
		select {
		case o = <-ch:
		case <-time.After(fdLimitAnswer):
			// Left waiting (in the listen queue, for a server that
			// cannot accept): that is its refusal. Close it if it
			// ever opens.
			go func() {
				if o := <-ch; o.err == nil {
					closeRawSession(o.s)
				}
			}()
			o.err = fmt.Errorf("no answer within %v", fdLimitAnswer)
		}
		if o.err != nil {
			r.Refusal = refusalKind(o.err)
			break
		}
		held = append(held, o.s)
	}
	r.Held = len(held)
	r.FillMs = float64(time.Since(fill).Microseconds()) / 1e3
	if r.Refusal == "" {
		r.Err = fmt.Sprintf("%d sessions opened on %s under a limit of %d descriptors, none refused", r.Held, r.Member, r.Limit)
		return r
	}
	select {
	case <-time.After(fdLimitHold):
	case <-ctx.Done():
	}
	for _, s := range held {
		closeRawSession(s)
	}
	held = nil
	closed := time.Now()
	for deadline := closed.Add(15 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; {
		if probe(r.Member, time.Second) == nil {
			r.ServedAgainMs = float64(time.Since(closed).Microseconds()) / 1e3
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return r
}

// limitFor is the lowest RLIMIT_NOFILE that leaves exactly free new
// descriptors to a process holding open: the limit bounds descriptor
// numbers, not their count, and a new descriptor takes the lowest free
// number, so descriptors open above the limit leave their numbers below
// it free (a JVM's are scattered so).
func limitFor(open []int, free int) int {
	slices.Sort(open)
	below := 0 // descriptors open below the limit
	for _, fd := range open {
		if fd-below >= free {
			break // free numbers enough below fd
		}
		below++
	}
	return below + free
}

// refusalKind says how a refused session ended: the connection closed
// (what zkd does at its limit) or something else.
func refusalKind(err error) string {
	var ne net.Error
	switch {
	case strings.HasPrefix(err.Error(), "no answer"):
		return err.Error()
	case errors.As(err, &ne) && ne.Timeout():
		return "no answer: " + err.Error()
	case strings.Contains(err.Error(), "EOF"), strings.Contains(err.Error(), "reset by peer"):
		return "connection closed: " + err.Error()
	}
	return err.Error()
}

// closeRawSession closes s's session and its connection.
func closeRawSession(s *rawSession) {
	s.nc.SetDeadline(time.Now().Add(2 * time.Second))
	if writeRecords(s.nc, &jute.RequestHeader{Xid: 1, Type: jute.OpCloseSession}) == nil {
		var b [1]byte
		s.nc.Read(b[:])
	}
	s.nc.Close()
}
