package quorum

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Peer is one server.N line of zoo.cfg.
type Peer struct {
	// ID is N, the member's myid (1..254).
	ID int64
	// Host is the member's address for the quorum and election ports.
	Host string
	// QuorumPort carries raft traffic.
	QuorumPort int
	// ElectionPort carries forwarded writes, touches and syncs.
	ElectionPort int
	// Observer marks a raft non-voter that serves clients and forwards.
	Observer bool
	// ClientAddr is the optional client address after ';' (host:port); ""
	// when the line has none.
	ClientAddr string
}

// QuorumAddr is host:quorumPort.
func (p Peer) QuorumAddr() string { return net.JoinHostPort(p.Host, strconv.Itoa(p.QuorumPort)) }

// ElectionAddr is host:electionPort.
func (p Peer) ElectionAddr() string { return net.JoinHostPort(p.Host, strconv.Itoa(p.ElectionPort)) }

// String renders the peer in zoo.cfg's form, as /zookeeper/config shows it.
func (p Peer) String() string {
	role := "participant"
	if p.Observer {
		role = "observer"
	}
	s := fmt.Sprintf("server.%d=%s:%d:%d:%s", p.ID, p.Host, p.QuorumPort, p.ElectionPort, role)
	if p.ClientAddr != "" {
		s += ";" + p.ClientAddr
	}
	return s
}

// ParsePeer parses the value of a server.N line:
// host:quorumPort:electionPort[:participant|:observer][;[clientAddr:]clientPort].
func ParsePeer(id int64, spec string) (Peer, error) {
	if err := checkPeerID(id); err != nil {
		return Peer{}, fmt.Errorf("quorum: server.%d=%s: %w", id, spec, err)
	}
	return parsePeerSpec(id, spec)
}

// checkPeerID refuses a server id zkd cannot run: ZooKeeper takes any
// long, zkd 1..254 (a member's id is the high byte of its session ids).
func checkPeerID(id int64) error {
	if id < 1 || id > 254 {
		return fmt.Errorf("id must be 1..254")
	}
	return nil
}

// parsePeerSpec is ParsePeer without the id range check, as ZooKeeper's
// QuorumServer parses a reconfig's server strings.
func parsePeerSpec(id int64, spec string) (Peer, error) {
	p := Peer{ID: id}
	bad := func(format string, a ...any) (Peer, error) {
		return Peer{}, fmt.Errorf("quorum: server.%d=%s: %s", id, spec, fmt.Sprintf(format, a...))
	}
	addrs, client, hasClient := strings.Cut(strings.TrimSpace(spec), ";")
	if hasClient {
		client = strings.TrimSpace(client)
		host, port := "0.0.0.0", client
		if i := strings.LastIndex(client, ":"); i >= 0 {
			host, port = client[:i], client[i+1:]
		}
		n, err := strconv.Atoi(port)
		if err != nil || n <= 0 || n > 65535 {
			return bad("client port %q", port)
		}
		p.ClientAddr = net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(n))
	}
	var host, rest string
	if strings.HasPrefix(addrs, "[") {
		end := strings.Index(addrs, "]")
		if end < 0 || end+1 >= len(addrs) || addrs[end+1] != ':' {
			return bad("bad IPv6 address")
		}
		host, rest = addrs[1:end], addrs[end+2:]
	} else {
		var ok bool
		host, rest, ok = strings.Cut(addrs, ":")
		if !ok {
			return bad("want host:quorumPort:electionPort")
		}
	}
	if host == "" {
		return bad("empty host")
	}
	p.Host = host
	parts := strings.Split(rest, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return bad("want host:quorumPort:electionPort[:participant|:observer]")
	}
	for i, dst := range []*int{&p.QuorumPort, &p.ElectionPort} {
		n, err := strconv.Atoi(parts[i])
		if err != nil || n <= 0 || n > 65535 {
			return bad("port %q", parts[i])
		}
		*dst = n
	}
	if len(parts) == 3 {
		switch strings.ToLower(parts[2]) {
		case "participant":
		case "observer":
			p.Observer = true
		default:
			return bad("role %q: want participant or observer", parts[2])
		}
	}
	return p, nil
}

// ParsePeers parses every server.N line (keyed by N), sorted by id.
func ParsePeers(lines map[int]string) ([]Peer, error) {
	ids := make([]int, 0, len(lines))
	for id := range lines {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	peers := make([]Peer, 0, len(ids))
	for _, id := range ids {
		p, err := ParsePeer(int64(id), lines[id])
		if err != nil {
			return nil, err
		}
		peers = append(peers, p)
	}
	return peers, nil
}

// Config is the ensemble as zoo.cfg describes it.
type Config struct {
	// MyID is this member's id (dataDir/myid).
	MyID int64
	// Peers is every server.N line; empty or one entry means standalone.
	Peers []Peer
	// TickTime is ZooKeeper's tick. Default 2s.
	TickTime time.Duration
	// InitLimit is in ticks: the raft transport's per-RPC timeout.
	// Default 10.
	InitLimit int
	// SyncLimit is in ticks: how long a follower may go without hearing
	// from a leader before it stops serving; raft's timeouts are derived
	// from it (see the package doc). Default 5.
	SyncLimit int
	// ReadOnlyMode (readonlymode.enabled) lets a member that lost the
	// quorum serve read-only clients.
	ReadOnlyMode bool
	// ReconfigEnabled (reconfigEnabled) versions the initial
	// configuration as ZooKeeper 3.8 does with reconfig on: the first
	// leader gives /zookeeper/config the version <its term>00000000
	// (100000000 on a fresh ensemble), where it keeps version 0 with
	// reconfig off.
	ReconfigEnabled bool
	// PeerTLS, when set (sslQuorum=true), secures the quorum and election
	// ports with mutual TLS. Default nil: plaintext.
	PeerTLS PeerTLS
	// PortUnification (ZooKeeper's quorum portUnification=true) makes the
	// quorum and election ports take plaintext members beside TLS ones,
	// told apart by the first byte: the window of a rolling upgrade from
	// plaintext to TLS. A TLS member must still present a certificate
	// PeerTLS trusts. It needs PeerTLS.
	PortUnification bool
	// DialPlaintext (portUnification=true with sslQuorum=false) makes
	// this member dial the others in plaintext though PeerTLS is set for
	// its listeners. It needs PortUnification.
	DialPlaintext bool
	// PeerAuth, when set (quorum.auth.enableSasl=true), runs ZooKeeper's
	// quorum SASL on member connections, inside TLS when PeerTLS is set:
	// this member authenticates on the connections it dials when
	// PeerAuth.Learner gives a client (quorum.auth.learnerRequireSasl),
	// and checks those that authenticate on the connections it accepts,
	// refusing those that do not when PeerAuth.Required
	// (quorum.auth.serverRequireSasl). Default nil: no quorum SASL.
	PeerAuth PeerAuth
	// Logger receives the package's logs. Default: no logs.
	Logger *zap.Logger
}

// DefaultConfig returns ZooKeeper's defaults for a standalone member.
func DefaultConfig() Config {
	return Config{MyID: 1, TickTime: 2 * time.Second, InitLimit: 10, SyncLimit: 5, Logger: zap.NewNop()}
}

// Standalone reports whether the configuration is a single member.
func (c *Config) Standalone() bool { return len(c.Peers) <= 1 }

// Self returns this member's server.N entry.
func (c *Config) Self() (Peer, bool) { return c.Peer(c.MyID) }

// Peer returns the entry of member id.
func (c *Config) Peer(id int64) (Peer, bool) {
	for _, p := range c.Peers {
		if p.ID == id {
			return p, true
		}
	}
	return Peer{}, false
}

// Validate names the first bad field or server line.
func (c *Config) Validate() error {
	switch {
	case c.TickTime <= 0:
		return fmt.Errorf("quorum: config: tickTime %v must be positive", c.TickTime)
	case c.InitLimit < 1:
		return fmt.Errorf("quorum: config: initLimit %d must be at least 1", c.InitLimit)
	case c.SyncLimit < 1:
		return fmt.Errorf("quorum: config: syncLimit %d must be at least 1", c.SyncLimit)
	case c.Logger == nil:
		return errors.New("quorum: config: Logger is nil")
	case c.PortUnification && c.PeerTLS == nil:
		return errors.New("quorum: config: portUnification needs the members' TLS stores (ssl.quorum.*)")
	case c.DialPlaintext && !c.PortUnification:
		return errors.New("quorum: config: DialPlaintext without PortUnification")
	}
	if c.Standalone() {
		return nil
	}
	seen := map[int64]bool{}
	addrs := map[string]int64{}
	voters := 0
	for _, p := range c.Peers {
		if seen[p.ID] {
			return fmt.Errorf("quorum: config: %s: server id %d appears twice", p, p.ID)
		}
		seen[p.ID] = true
		if p.QuorumPort == p.ElectionPort {
			return fmt.Errorf("quorum: config: %s: quorum and election ports are the same", p)
		}
		for _, a := range []string{p.QuorumAddr(), p.ElectionAddr()} {
			if other, dup := addrs[a]; dup {
				return fmt.Errorf("quorum: config: %s: address %s is also used by server.%d", p, a, other)
			}
			addrs[a] = p.ID
		}
		if !p.Observer {
			voters++
		}
	}
	if voters == 0 {
		return errors.New("quorum: config: no participant among the server lines")
	}
	if _, ok := c.Self(); !ok {
		return fmt.Errorf("quorum: config: myid %d has no server.%d line", c.MyID, c.MyID)
	}
	return nil
}

// Timing is what the config's ticks become (see the package doc).
type Timing struct {
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// ServingLease is how long a follower serves without hearing from a
	// leader.
	ServingLease time.Duration
	// TransportTimeout bounds one raft RPC.
	TransportTimeout time.Duration
	// HoldTimeout bounds how long a follower holds a request while no
	// leader is reachable.
	HoldTimeout time.Duration
	// TouchInterval is how often followers send batched session touches.
	TouchInterval time.Duration
	// CommitTimeout is how often the leader tells followers its commit
	// index in raft's own messages when no new entry does (raft's
	// CommitTimeout). Client writes and syncs do not wait for it: the
	// leader's commit notices (commitnotice.go) tell followers at once.
	// It bounds how late a follower learns of the rest (session expiries,
	// a new leader's first entries). Always 10ms: at 1ms an idle
	// 3-member ensemble spent 17.5% of a core on it, at 10ms 5%.
	CommitTimeout time.Duration
}

// Timing derives raft's and forwarding's timeouts from the ticks.
func (c *Config) Timing() Timing {
	sync := time.Duration(c.SyncLimit) * c.TickTime
	hb := sync / 5
	if hb < 20*time.Millisecond {
		hb = 20 * time.Millisecond
	}
	touch := c.TickTime / 2
	if touch <= 0 {
		touch = time.Millisecond
	}
	return Timing{
		HeartbeatTimeout:   hb,
		ElectionTimeout:    hb,
		LeaderLeaseTimeout: hb,
		ServingLease:       sync,
		TransportTimeout:   time.Duration(c.InitLimit) * c.TickTime,
		HoldTimeout:        sync,
		TouchInterval:      touch,
		CommitTimeout:      10 * time.Millisecond,
	}
}
