package zkfollow

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/quorum/quorumauth"
	"github.com/zkd/zkd/zab/zkformat"
)

// Config configures a Follower.
type Config struct {
	// SID is the follower's server id in the ZooKeeper ensemble: N of the
	// server.N=host:port:port:observer line the operator added. Required.
	SID int64
	// Addrs are the quorum addresses (host:quorumPort, the first port of
	// each server.N line) of the ZooKeeper ensemble's voting members; only
	// the leader accepts on its. Required.
	Addrs []string
	// TickTime is the ZooKeeper ensemble's tickTime; default 2s.
	TickTime time.Duration
	// InitLimit and SyncLimit are the ensemble's, in ticks: how long a sync
	// and then a silent leader are waited for. Defaults 10 and 5.
	InitLimit, SyncLimit int
	// Tree is the state to resume from (a follower's earlier state, at
	// its LastZxid); nil starts from nothing and is synced by SNAP (or by
	// DIFF from an empty database, which a young ensemble may send).
	Tree *zkformat.Tree
	// Synced, when set, is called at the end of each sync (UPTODATE) with
	// the followed tree, and Applied after each transaction applied after
	// one, with the tree it went into. Both run on the follower's
	// goroutine with its lock held: they must not call the Follower, nor
	// change or keep the tree.
	Synced  func(t *zkformat.Tree)
	Applied func(tx *zkformat.Txn, t *zkformat.Tree)
	// Logger receives one line per connection, sync and leader loss.
	// Default: none.
	Logger *zap.Logger
	// TLS, when set, returns the TLS configuration for dialing the
	// ZooKeeper member at host: an ensemble with sslQuorum=true takes
	// learners over mutual TLS only, so the follower presents the zkd
	// member's ssl.quorum.* certificate and verifies the leader's. Nil
	// dials plain TCP.
	TLS func(host string) *tls.Config
	// SASL, when set, makes a client for the quorum SASL exchange the
	// follower starts on each connection to a leader, before anything
	// else (quorum.auth.enableSasl with learnerRequireSasl, ZooKeeper's
	// QuorumLearner login), given the host of the member dialed
	// (Kerberos names the service by it). Nil: no quorum SASL.
	SASL func(host string) (quorumauth.Client, error)
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	switch {
	case c.SID <= 0:
		return errors.New("zkfollow: SID must be the observer's server id (> 0)")
	case len(c.Addrs) == 0:
		return errors.New("zkfollow: Addrs must list the ZooKeeper members' quorum addresses")
	case c.TickTime < 0 || c.InitLimit < 0 || c.SyncLimit < 0:
		return errors.New("zkfollow: TickTime, InitLimit and SyncLimit must not be negative")
	}
	return nil
}

// Status is what the follower did so far.
type Status struct {
	// Leader is the quorum address of the leader followed now, "" when
	// none; Synced reports that its sync ended (UPTODATE).
	Leader string
	Synced bool
	// Syncs counts completed syncs; SyncMode ("SNAP", "DIFF", "TRUNC") and
	// SyncTime (from connecting to UPTODATE) describe the last one,
	// SyncZxid the zxid its SNAP or DIFF was taken at.
	Syncs    int
	SyncMode string
	SyncZxid int64
	SyncTime time.Duration
	// Txns counts transactions applied after syncs (DIFF and INFORM).
	Txns int64
	// LastZxid is the last zxid applied; Nodes and Sessions the tree's
	// size.
	LastZxid int64
	Nodes    int
	Sessions int
	// DigestExact reports that the tree's digest matched the leader's
	// after the last sync, and every one since; DigestsChecked counts the
	// matches. False when the ensemble sends no digests.
	DigestExact    bool
	DigestsChecked int64
	// LastError is why the last connection ended.
	LastError string
}

// ErrDiverged means the followed tree is no longer ZooKeeper's: a digest
// disagreed after matching, or the leader asked to truncate committed
// transactions. The follower stops; start it again from nothing.
var ErrDiverged = errors.New("zkfollow: the followed tree diverged from the leader's")

// Follower follows one ZooKeeper ensemble. Run drives it; Status and
// Tree may be called from any goroutine.
type Follower struct {
	cfg Config
	log *zap.Logger
	// acceptedEpoch and currentEpoch are ZooKeeper's learner epochs, kept
	// in memory: the run goroutine alone uses them.
	acceptedEpoch, currentEpoch int64
	mu                          struct {
		sync.Mutex
		tree   *zkformat.Tree
		status Status
		// applied is signalled (closed and replaced) whenever the tree
		// moves.
		applied chan struct{}
	}
}

// New returns a follower; Run starts it.
func New(cfg Config) (*Follower, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.TickTime == 0 {
		cfg.TickTime = 2 * time.Second
	}
	if cfg.InitLimit == 0 {
		cfg.InitLimit = 10
	}
	if cfg.SyncLimit == 0 {
		cfg.SyncLimit = 5
	}
	f := &Follower{cfg: cfg, log: cfg.Logger}
	if f.log == nil {
		f.log = zap.NewNop()
	}
	f.mu.tree = cfg.Tree
	f.mu.applied = make(chan struct{})
	if cfg.Tree != nil {
		f.acceptedEpoch = cfg.Tree.LastZxid >> 32
		f.currentEpoch = f.acceptedEpoch
		f.mu.status.LastZxid = cfg.Tree.LastZxid
		f.mu.status.Nodes, f.mu.status.Sessions = cfg.Tree.Len(), len(cfg.Tree.Sessions)
	}
	return f, nil
}

// Status returns the follower's figures now.
func (f *Follower) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.status
}

// Tree returns the followed tree, nil before the first sync. It is the
// follower's own: call it once Run has returned, or the tree may change
// underneath.
func (f *Follower) Tree() *zkformat.Tree {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.tree
}

// WaitZxid blocks until the follower has synced and applied zxid, or ctx
// is done.
func (f *Follower) WaitZxid(ctx context.Context, zxid int64) error {
	for {
		f.mu.Lock()
		ok := f.mu.tree != nil && f.mu.status.Synced && f.mu.tree.LastZxid >= zxid
		ch := f.mu.applied
		f.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Run follows the ensemble until ctx is done (it then returns ctx.Err())
// or the tree diverged (ErrDiverged). A lost leader is looked for again
// on every address, a tick apart, so a ZooKeeper leader election is
// followed through.
func (f *Follower) Run(ctx context.Context) error {
	for {
		for _, addr := range f.cfg.Addrs {
			err := f.followOnce(ctx, addr)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, ErrDiverged) {
				return err
			}
			f.mu.Lock()
			wasLeader := f.mu.status.Leader != ""
			f.mu.status.Leader, f.mu.status.Synced = "", false
			if err != nil {
				f.mu.status.LastError = err.Error()
			}
			f.mu.Unlock()
			var he *handshakeError
			var qe *quorumauth.Error
			switch {
			case wasLeader:
				f.log.Warn("lost the ZooKeeper leader", zap.String("peer", addr), zap.Error(err))
			case errors.As(err, &qe):
				f.log.Warn("quorum SASL with the ZooKeeper leader failed", zap.String("peer", addr), zap.Error(err))
			case errors.As(err, &he):
				f.log.Warn("TLS handshake with a ZooKeeper member failed: check the ssl.quorum.* stores in zkd's zoo.cfg against the ensemble's", zap.String("peer", addr), zap.Error(err))
			case err != nil && !isDialError(err):
				// It took the connection, so it leads (only the leader
				// listens on the quorum port), yet it would not sync us.
				f.log.Warn("the ZooKeeper leader did not take this observer", zap.String("peer", addr), zap.Error(err))
			default:
				f.log.Debug("not the ZooKeeper leader, or unreachable", zap.String("peer", addr), zap.Error(err))
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(f.cfg.TickTime):
		}
	}
}

// isDialError reports whether err is a failure to connect at all: a
// member that does not lead has no quorum listener.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// handshakeError is a failed TLS handshake with a ZooKeeper member: a
// configuration problem an operator must see, unlike a member that does
// not lead and so refuses the connection.
type handshakeError struct {
	addr string
	err  error
}

func (e *handshakeError) Error() string {
	return fmt.Sprintf("zkfollow: TLS handshake with %s: %v", e.addr, e.err)
}

func (e *handshakeError) Unwrap() error { return e.err }

// handshake runs the TLS client handshake on nc within timeout, with the
// configuration conf returns for addr's host; it closes nc if that fails.
func handshake(ctx context.Context, nc net.Conn, addr string, conf func(host string) *tls.Config, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("zkfollow: member address %s: %w", addr, err)
	}
	tc := tls.Client(nc, conf(host))
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		nc.Close()
		return nil, &handshakeError{addr: addr, err: err}
	}
	return tc, nil
}

// deadlineConn gives every Read and Write its own deadline, as a Java
// socket's soTimeout does, so a long snapshot is not cut by a total one.
type deadlineConn struct {
	net.Conn
	mu      sync.Mutex
	timeout time.Duration
}

func (c *deadlineConn) setTimeout(d time.Duration) {
	c.mu.Lock()
	c.timeout = d
	c.mu.Unlock()
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	d := c.timeout
	c.mu.Unlock()
	c.Conn.SetReadDeadline(time.Now().Add(d))
	return c.Conn.Read(p)
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	d := c.timeout
	c.mu.Unlock()
	c.Conn.SetWriteDeadline(time.Now().Add(d))
	return c.Conn.Write(p)
}

// followOnce connects to addr and, if it is the leader, syncs and follows
// it until the connection ends.
func (f *Follower) followOnce(ctx context.Context, addr string) error {
	initTimeout := f.cfg.TickTime * time.Duration(f.cfg.InitLimit)
	d := net.Dialer{Timeout: initTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	if f.cfg.TLS != nil {
		if nc, err = handshake(ctx, nc, addr, f.cfg.TLS, initTimeout); err != nil {
			return err
		}
	}
	conn := &deadlineConn{Conn: nc, timeout: initTimeout}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	defer nc.Close()
	if f.cfg.SASL != nil {
		host, _, _ := net.SplitHostPort(addr)
		sc, err := f.cfg.SASL(host)
		if err != nil {
			return &quorumauth.Error{Addr: addr, Err: err}
		}
		if err := quorumauth.Learn(conn, addr, sc); err != nil {
			return err
		}
		f.log.Info("authenticated to the ZooKeeper leader by quorum SASL", zap.String("peer", addr))
	}
	start := time.Now()
	r := zkformat.NewStreamReader(conn)
	w := bufio.NewWriter(conn)

	// OBSERVERINFO: LearnerInfo {sid, protocolVersion, configVersion}.
	li := make([]byte, 20)
	binary.BigEndian.PutUint64(li[0:], uint64(f.cfg.SID))
	binary.BigEndian.PutUint32(li[8:], protocolVersion)
	if err := writePacket(w, packet{Type: pktObserverInfo, Zxid: f.acceptedEpoch << 32, Data: li}); err != nil {
		return err
	}
	p, err := readPacket(r)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			var hints []string
			if f.cfg.TLS == nil {
				hints = append(hints, "if the ensemble has sslQuorum=true, set sslQuorum=true and the ssl.quorum.* stores in zkd's zoo.cfg")
			}
			if f.cfg.SASL == nil {
				hints = append(hints, "if it has quorum.auth.serverRequireSasl=true, set quorum.auth.enableSasl=true, quorum.auth.learnerRequireSasl=true and a JAAS QuorumLearner section")
			}
			if len(hints) > 0 {
				return fmt.Errorf("zkfollow: %s: waiting for LEADERINFO: %w (the leader closed the connection: %s)", addr, err, strings.Join(hints, "; "))
			}
		}
		return fmt.Errorf("zkfollow: %s: waiting for LEADERINFO: %w", addr, err)
	}
	if p.Type != pktLeaderInfo {
		return fmt.Errorf("zkfollow: %s: first packet is %s, want LEADERINFO (a leader older than ZooKeeper 3.4?)", addr, packetName(p.Type))
	}
	newEpoch := p.Zxid >> 32
	epochBytes := make([]byte, 4)
	switch {
	case newEpoch > f.acceptedEpoch:
		binary.BigEndian.PutUint32(epochBytes, uint32(f.currentEpoch))
		f.acceptedEpoch = newEpoch
	case newEpoch == f.acceptedEpoch:
		binary.BigEndian.PutUint32(epochBytes, 0xffffffff) // -1
	default:
		return fmt.Errorf("zkfollow: %s: leader's epoch %d is older than this follower's %d", addr, newEpoch, f.acceptedEpoch)
	}
	last := f.lastZxid()
	if err := writePacket(w, packet{Type: pktAckEpoch, Zxid: last, Data: epochBytes}); err != nil {
		return err
	}
	f.mu.Lock()
	f.mu.status.Leader = addr
	f.mu.Unlock()
	f.log.Info("connected to the ZooKeeper leader", zap.String("peer", addr),
		zap.Int64("epoch", newEpoch), zap.String("zxid", fmt.Sprintf("0x%x", last)))

	// Sync: DIFF, TRUNC or SNAP, proposals and commits, NEWLEADER,
	// UPTODATE; INFORMs of new commits may come in between.
	p, err = readPacket(r)
	if err != nil {
		return fmt.Errorf("zkfollow: %s: waiting for the sync: %w", addr, err)
	}
	mode := packetName(p.Type)
	syncZxid := p.Zxid
	switch p.Type {
	case pktDiff:
		if f.Tree() == nil {
			// An empty database, which the leader diffs against from
			// its first transaction.
			f.install(zkformat.NewInitialTree(), 0)
		}
	case pktTrunc:
		if p.Zxid != last {
			return fmt.Errorf("%w: the leader asks to truncate to 0x%x, below the followed 0x%x", ErrDiverged, p.Zxid, last)
		}
	case pktSnap:
		t, err := zkformat.ReadSyncSnapshot(r, p.Zxid)
		if err != nil {
			return fmt.Errorf("zkfollow: %s: %w", addr, err)
		}
		f.install(t, p.Zxid)
	default:
		return fmt.Errorf("zkfollow: %s: sync starts with %s, want DIFF, TRUNC or SNAP", addr, mode)
	}
	var proposals []zkformat.Txn
	newLeaderZxid := newEpoch << 32
sync:
	for {
		p, err = readPacket(r)
		if err != nil {
			return fmt.Errorf("zkfollow: %s: during %s sync: %w", addr, mode, err)
		}
		switch p.Type {
		case pktProposal:
			tx, err := zkformat.DecodeTxn(p.Data)
			if err != nil {
				return fmt.Errorf("zkfollow: %s: PROPOSAL 0x%x: %w", addr, p.Zxid, err)
			}
			proposals = append(proposals, tx)
		case pktCommit:
			if len(proposals) == 0 || proposals[0].Zxid != p.Zxid {
				return fmt.Errorf("zkfollow: %s: COMMIT 0x%x without its PROPOSAL", addr, p.Zxid)
			}
			if err := f.apply(&proposals[0]); err != nil {
				return err
			}
			proposals = proposals[1:]
		case pktInform, pktInformAndActivate:
			if err := f.inform(p); err != nil {
				return err
			}
		case pktNewLeader:
			f.currentEpoch = newEpoch
			if err := writePacket(w, packet{Type: pktAck, Zxid: newLeaderZxid}); err != nil {
				return err
			}
		case pktUpToDate:
			break sync
		case pktPing:
			if err := f.pong(w, p); err != nil {
				return err
			}
		default:
			return fmt.Errorf("zkfollow: %s: unexpected %s during sync", addr, packetName(p.Type))
		}
	}
	if len(proposals) > 0 {
		// An observer is sent committed proposals only.
		return fmt.Errorf("zkfollow: %s: %d proposals left uncommitted at UPTODATE", addr, len(proposals))
	}
	if err := writePacket(w, packet{Type: pktAck, Zxid: newLeaderZxid}); err != nil {
		return err
	}
	took := time.Since(start)
	f.mu.Lock()
	st := &f.mu.status
	st.Synced, st.Syncs, st.SyncMode, st.SyncZxid, st.SyncTime = true, st.Syncs+1, mode, syncZxid, took
	if f.cfg.Synced != nil {
		f.cfg.Synced(f.mu.tree)
	}
	f.signalLocked()
	nodes, lastZxid := st.Nodes, st.LastZxid
	f.mu.Unlock()
	f.log.Info("synced with the ZooKeeper leader", zap.String("peer", addr), zap.String("mode", mode),
		zap.String("zxid", fmt.Sprintf("0x%x", lastZxid)), zap.Int("znodes", nodes), zap.Duration("took", took))

	// Broadcast: INFORMs and PINGs until the leader goes.
	conn.setTimeout(f.cfg.TickTime * time.Duration(f.cfg.SyncLimit))
	for {
		p, err := readPacket(r)
		if err != nil {
			return fmt.Errorf("zkfollow: %s: %w", addr, err)
		}
		switch p.Type {
		case pktInform, pktInformAndActivate:
			if err := f.inform(p); err != nil {
				return err
			}
		case pktPing:
			if err := f.pong(w, p); err != nil {
				return err
			}
		case pktSync, pktRevalidate:
			// Answers to requests this follower never sends.
			f.log.Warn("ignoring an unrequested packet", zap.String("type", packetName(p.Type)))
		default:
			f.log.Warn("ignoring a packet an observer does not expect", zap.String("type", packetName(p.Type)),
				zap.String("zxid", fmt.Sprintf("0x%x", p.Zxid)))
		}
	}
}

// pong answers a PING as Learner.ping does: the same packet with the
// touch table of the sessions held here, none.
func (f *Follower) pong(w *bufio.Writer, p packet) error {
	return writePacket(w, packet{Type: pktPing, Zxid: p.Zxid, Data: []byte{}, Auth: p.Auth})
}

// inform applies an INFORM or INFORMANDACTIVATE packet.
func (f *Follower) inform(p packet) error {
	data := p.Data
	if p.Type == pktInformAndActivate {
		// The suggested leader id (a long) comes first.
		if len(data) < 8 {
			return fmt.Errorf("zkfollow: INFORMANDACTIVATE 0x%x: %d bytes", p.Zxid, len(data))
		}
		data = data[8:]
	}
	tx, err := zkformat.DecodeTxn(data)
	if err != nil {
		return fmt.Errorf("zkfollow: %s 0x%x: %w", packetName(p.Type), p.Zxid, err)
	}
	return f.apply(&tx)
}

func (f *Follower) lastZxid() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.tree == nil {
		return 0
	}
	return f.mu.tree.LastZxid
}

// install replaces the tree with one received by SNAP (or a fresh one).
func (f *Follower) install(t *zkformat.Tree, zxid int64) {
	t.LastZxid = zxid
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.tree = t
	st := &f.mu.status
	st.LastZxid, st.Nodes, st.Sessions = zxid, t.Len(), len(t.Sessions)
	st.DigestExact = false
	f.signalLocked()
}

// apply applies one committed transaction. One at or below the tree's
// zxid is skipped (a leader may resend what a sync already covered); one
// that does not follow it means a transaction went missing, and the
// connection ends so that the next sync fills the gap.
func (f *Follower) apply(tx *zkformat.Txn) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.mu.tree
	if t == nil {
		return fmt.Errorf("zkfollow: transaction 0x%x before any sync", tx.Zxid)
	}
	if tx.Zxid <= t.LastZxid {
		return nil
	}
	if !follows(t.LastZxid, tx.Zxid) {
		return fmt.Errorf("zkfollow: transaction 0x%x does not follow 0x%x: resyncing", tx.Zxid, t.LastZxid)
	}
	t.Apply(tx)
	st := &f.mu.status
	st.Txns++
	st.LastZxid, st.Nodes, st.Sessions = t.LastZxid, t.Len(), len(t.Sessions)
	if d := tx.Digest; d != nil && d.Version == zkformat.DigestVersion {
		switch {
		case t.Digest() == d.Digest:
			st.DigestExact = true
			st.DigestsChecked++
		case st.DigestExact:
			// ZooKeeper does not have this tree: Run stops, and the
			// cutover refuses it.
			st.DigestExact = false
			return fmt.Errorf("%w: tree digest %016x after zxid 0x%x (type %d), the leader's is %016x",
				ErrDiverged, t.Digest(), tx.Zxid, tx.Type, d.Digest)
		}
	}
	if f.cfg.Applied != nil && st.Synced {
		f.cfg.Applied(tx, t)
	}
	f.signalLocked()
	return nil
}

func (f *Follower) signalLocked() {
	close(f.mu.applied)
	f.mu.applied = make(chan struct{})
}

// follows reports whether zxid b may come right after a: the next counter
// in the same epoch, or the first of a later epoch.
func follows(a, b int64) bool {
	if b == a+1 {
		return true
	}
	return b>>32 > a>>32 && uint32(b) == 1
}
