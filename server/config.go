package server

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Config holds the client-side settings of a zkd member. Build it with
// DefaultConfig, change what zoo.cfg says, and call Validate (New does).
type Config struct {
	// ClientAddr is the host:port the client listener binds, for
	// ListenAndServe ("127.0.0.1:2181", ":2181"). Default ":2181".
	ClientAddr string
	// TickTime is ZooKeeper's basic time unit. Default 2s.
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the negotiated session
	// timeout. Zero means 2×TickTime and 20×TickTime.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxClientCnxns limits concurrent connections from one IP address;
	// 0 means unlimited. Default 60.
	MaxClientCnxns int
	// MaxCnxns (maxCnxns) limits concurrent connections in all; 0 means
	// unlimited, the default. See limits.go for these limits.
	MaxCnxns int
	// GlobalOutstandingLimit (zookeeper.globalOutstandingLimit) throttles
	// reading: past this many requests in process, a connection with
	// requests of its own outstanding is not read until they are
	// answered. 0 disables it. Default 1000.
	GlobalOutstandingLimit int
	// ThrottleMaxRequests (zookeeper.request_throttle_max_requests) holds a
	// new request back while this many are in process, rechecking every
	// ThrottleStallTime; 0 (the default) disables it. Pings pass.
	ThrottleMaxRequests int
	// ThrottleStallTime is zookeeper.request_throttle_stall_time. Default
	// 100ms.
	ThrottleStallTime time.Duration
	// ThrottleDropStale (zookeeper.request_throttle_drop_stale) drops a
	// held-back request whose connection closed meanwhile. Default true.
	ThrottleDropStale bool
	// ThrottledOpWaitTime (zookeeper.throttled_op_wait_time): a request
	// held back longer than this is answered ThrottledOp without running
	// (pings, createSession and closeSession excepted). 0, the default,
	// disables it.
	ThrottledOpWaitTime time.Duration
	// ConnThrottle is ZooKeeper's connection throttle
	// (zookeeper.connection_throttle_*); off by default.
	ConnThrottle ConnThrottleConfig
	// MaxBuffer is jute.maxbuffer: the largest frame, in bytes, a client may
	// send; a larger (or negative) length closes the connection. Default
	// 0xfffff.
	MaxBuffer int
	// MaxOutQueueBytes caps the bytes of replies and events waiting to be
	// written to one connection; past it the connection is closed so the
	// apply goroutine never waits for a slow client. Default 64 MiB.
	MaxOutQueueBytes int
	// MaxPendingRequests is how many requests of one connection may wait in
	// its pipeline before the server stops reading from it. Default 1000.
	MaxPendingRequests int
	// FourLetterWhitelist lists the 4-letter words that are answered
	// (4lw.commands.whitelist); "*" allows all. Default ["srvr"].
	FourLetterWhitelist []string
	// SuperDigest is "super:<base64 sha1>" from
	// zookeeper.DigestAuthenticationProvider.superDigest; a client that adds
	// digest auth matching it becomes the superuser. "" disables it.
	SuperDigest string
	// SASL configures SASL authentication and enforce.auth; the zero value
	// is ZooKeeper without a JAAS file (see SASLConfig).
	SASL SASLConfig
	// ReconfigEnabled (reconfigEnabled) lets the reconfig op through to
	// the Backend; otherwise it is answered ReconfigDisabled, as ZooKeeper
	// does. Default false.
	ReconfigEnabled bool
	// Version is the version reported by srvr, stat, mntr and envi, before
	// ", built on". Default "3.8.4-zkd".
	Version string
	// BuiltOn is the build date reported after Version, in ZooKeeper's
	// "2006-01-02 15:04 UTC" form. Empty (the default) means the commit
	// time recorded in the binary, else the executable's modification
	// time, else "unknown".
	BuiltOn string
	// Metrics receives ZooKeeper's monitoring figures; give it the
	// ZKMetrics whose Observer feeds the log's figures. Nil makes a fresh
	// one. One ZKMetrics serves one Server.
	Metrics *ZKMetrics
	// DataDir and DataLogDir are reported by conf, envi and dirs, whose sizes
	// are the total bytes of the files below them.
	DataDir, DataLogDir string
	// ServerID is myid, reported by conf as serverId. Default 0.
	ServerID int64
	// ClientPort is reported by conf; 0 means the listener's port.
	ClientPort int
	// SecureClientPort is reported by conf; 0 means none (-1 in conf).
	SecureClientPort int
	// SlowRequestThreshold is zkd.slowRequestMs: a request answered this
	// long or more after it arrived is logged at warn with its session,
	// op, path and latency. 0 disables the log. Default 1s.
	SlowRequestThreshold time.Duration
	// SessionlessTimeout is zookeeper.nio.sessionlessCnxnTimeout: a
	// connection must complete its TLS handshake and send its first packet
	// (ConnectRequest or 4-letter word) within it or be closed. Default 10s.
	SessionlessTimeout time.Duration
	// X509Auth reports that ZooKeeper's X509AuthenticationProvider is
	// active: configured (authProvider.N=…X509AuthenticationProvider), or
	// implied, as ZooKeeper implies it, by a secureClientPort or
	// client.portUnification. A verified client certificate gives the
	// connection the x509 id of its subject. Without it a connection
	// presenting a certificate is closed. Default false.
	X509Auth bool
	// X509SuperUser is zookeeper.X509AuthenticationProvider.superUser: a
	// client whose certificate subject equals it is the superuser.
	X509SuperUser string
	// Logger receives the server's logs. Default zap.NewNop().
	Logger *zap.Logger
}

// DefaultConfig returns ZooKeeper's defaults.
func DefaultConfig() Config {
	return Config{
		ClientAddr:             ":2181",
		TickTime:               2 * time.Second,
		MinSessionTimeout:      4 * time.Second,
		MaxSessionTimeout:      40 * time.Second,
		MaxClientCnxns:         60,
		GlobalOutstandingLimit: 1000,
		ThrottleStallTime:      100 * time.Millisecond,
		ThrottleDropStale:      true,
		ConnThrottle:           DefaultConnThrottle(),
		MaxBuffer:              0xfffff,
		MaxOutQueueBytes:       64 << 20,
		MaxPendingRequests:     1000,
		FourLetterWhitelist:    []string{"srvr"},
		Version:                "3.8.4-zkd",
		SlowRequestThreshold:   time.Second,
	}
}

// Validate reports the first bad field.
func (c *Config) Validate() error {
	switch {
	case c.TickTime <= 0:
		return fmt.Errorf("server: TickTime must be positive, got %v", c.TickTime)
	case c.MinSessionTimeout < 0:
		return fmt.Errorf("server: MinSessionTimeout must not be negative, got %v", c.MinSessionTimeout)
	case c.MaxSessionTimeout < 0:
		return fmt.Errorf("server: MaxSessionTimeout must not be negative, got %v", c.MaxSessionTimeout)
	case c.minTimeout() > c.maxTimeout():
		return fmt.Errorf("server: MinSessionTimeout %v exceeds MaxSessionTimeout %v", c.minTimeout(), c.maxTimeout())
	case c.maxTimeout() > time.Duration(1<<31-1)*time.Millisecond:
		return fmt.Errorf("server: MaxSessionTimeout %v does not fit in int32 ms", c.maxTimeout())
	case c.MaxClientCnxns < 0:
		return fmt.Errorf("server: MaxClientCnxns must not be negative, got %d", c.MaxClientCnxns)
	case c.MaxCnxns < 0:
		return fmt.Errorf("server: MaxCnxns must not be negative, got %d", c.MaxCnxns)
	case c.GlobalOutstandingLimit < 0:
		return fmt.Errorf("server: GlobalOutstandingLimit must not be negative, got %d", c.GlobalOutstandingLimit)
	case c.ThrottleMaxRequests < 0:
		return fmt.Errorf("server: ThrottleMaxRequests must not be negative, got %d", c.ThrottleMaxRequests)
	case c.ThrottledOpWaitTime < 0:
		return fmt.Errorf("server: ThrottledOpWaitTime must not be negative, got %v", c.ThrottledOpWaitTime)
	case c.ThrottleMaxRequests > 0 && c.ThrottleStallTime <= 0:
		return fmt.Errorf("server: ThrottleStallTime must be positive, got %v", c.ThrottleStallTime)
	case c.ConnThrottle.validate() != nil:
		return c.ConnThrottle.validate()
	case c.MaxBuffer <= 0:
		return fmt.Errorf("server: MaxBuffer must be positive, got %d", c.MaxBuffer)
	case c.MaxOutQueueBytes <= 0:
		return fmt.Errorf("server: MaxOutQueueBytes must be positive, got %d", c.MaxOutQueueBytes)
	case c.MaxPendingRequests <= 0:
		return fmt.Errorf("server: MaxPendingRequests must be positive, got %d", c.MaxPendingRequests)
	case c.SlowRequestThreshold < 0:
		return fmt.Errorf("server: SlowRequestThreshold must not be negative, got %v", c.SlowRequestThreshold)
	case c.SuperDigest != "" && !strings.Contains(c.SuperDigest, ":"):
		return fmt.Errorf("server: SuperDigest must be user:base64digest, got %q", c.SuperDigest)
	}
	if err := c.SASL.validate(); err != nil {
		return err
	}
	for _, w := range c.FourLetterWhitelist {
		if w != "*" && len(w) != 4 {
			return fmt.Errorf("server: FourLetterWhitelist entry %q is not a 4-letter word", w)
		}
	}
	return nil
}

// sessionlessTimeout is the effective SessionlessTimeout.
func (c *Config) sessionlessTimeout() time.Duration {
	if c.SessionlessTimeout <= 0 {
		return 10 * time.Second
	}
	return c.SessionlessTimeout
}

// minTimeout is the effective minimum session timeout.
func (c *Config) minTimeout() time.Duration {
	if c.MinSessionTimeout == 0 {
		return 2 * c.TickTime
	}
	return c.MinSessionTimeout
}

// maxTimeout is the effective maximum session timeout.
func (c *Config) maxTimeout() time.Duration {
	if c.MaxSessionTimeout == 0 {
		return 20 * c.TickTime
	}
	return c.MaxSessionTimeout
}

// builtOn guesses the build date of the running binary, as BuiltOn
// describes.
func builtOn() string {
	const layout = "2006-01-02 15:04 UTC"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range bi.Settings {
			if kv.Key == "vcs.time" {
				if t, err := time.Parse(time.RFC3339, kv.Value); err == nil {
					return t.UTC().Format(layout)
				}
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			return fi.ModTime().UTC().Format(layout)
		}
	}
	return "unknown"
}
