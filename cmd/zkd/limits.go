package main

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/server"
)

// raiseFileLimit raises the RLIMIT_NOFILE soft limit to the hard limit, so
// that a member can hold as many connections as the system lets it, and
// logs both: when descriptors run out, the log says at what count.
func raiseFileLimit(log *zap.Logger) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		log.Warn("cannot read the file descriptor limit", zap.Error(err))
		return
	}
	soft := rl.Cur
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			log.Warn("cannot raise the file descriptor limit", zap.Uint64("soft", soft), zap.Uint64("hard", rl.Max), zap.Error(err))
			return
		}
	}
	log.Info("file descriptor limit (RLIMIT_NOFILE)", zap.Uint64("soft", rl.Cur), zap.Uint64("hard", rl.Max),
		zap.Uint64("softAtStart", soft))
}

// limitConfig applies the connection and throttling keys: maxCnxns,
// zookeeper.globalOutstandingLimit and RequestThrottler's
// zookeeper.request_throttle_max_requests, _stall_time and _drop_stale,
// zookeeper.throttled_op_wait_time and the connection throttle's
// zookeeper.connection_throttle_* (connThrottleConfig). As on a ZooKeeper leader or
// follower, the outstanding limit of a member of n > 2 voters is the
// configured one divided by n-1.
func limitConfig(c *zooCfg, sc *server.Config) error {
	ints := []struct {
		name string
		def  int64
		dst  *int64
	}{
		{"maxCnxns", 0, new(int64)},
		{"zookeeper.globalOutstandingLimit", 1000, new(int64)},
		{"zookeeper.request_throttle_max_requests", 0, new(int64)},
		{"zookeeper.request_throttle_stall_time", 100, new(int64)},
		{"zookeeper.throttled_op_wait_time", 0, new(int64)},
	}
	for _, k := range ints {
		v, err := c.propInt(k.name, k.def)
		if err != nil {
			return err
		}
		*k.dst = v
	}
	sc.MaxCnxns = int(*ints[0].dst)
	sc.GlobalOutstandingLimit = int(*ints[1].dst)
	if voters := votingMembers(c); voters > 2 {
		sc.GlobalOutstandingLimit /= voters - 1
	}
	sc.ThrottleMaxRequests = int(*ints[2].dst)
	sc.ThrottleStallTime = time.Duration(*ints[3].dst) * time.Millisecond
	sc.ThrottledOpWaitTime = time.Duration(*ints[4].dst) * time.Millisecond
	sc.ThrottleDropStale = true
	if v, ok := c.prop("zookeeper.request_throttle_drop_stale"); ok {
		// Boolean.parseBoolean: "true" in any case, anything else false.
		sc.ThrottleDropStale = strings.EqualFold(strings.TrimSpace(v), "true")
	}
	ct, err := connThrottleConfig(c)
	if err != nil {
		return err
	}
	sc.ConnThrottle = ct
	if sc.GlobalOutstandingLimit < 0 || sc.MaxCnxns < 0 || sc.ThrottleMaxRequests < 0 {
		return fmt.Errorf("zkd: maxCnxns, globalOutstandingLimit and request_throttle_max_requests must not be negative")
	}
	return nil
}

// votingMembers counts the server.N lines that are not observers.
func votingMembers(c *zooCfg) int {
	n := 0
	for _, v := range c.Servers {
		if !strings.Contains(v, ":observer") {
			n++
		}
	}
	return n
}
