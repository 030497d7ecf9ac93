package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/quorum"
	"github.com/zkd/zkd/quorum/zkfollow"
	"github.com/zkd/zkd/zab"
	"github.com/zkd/zkd/zab/zkformat"
)

// followedSuffix names the file beside a data dir that `zkd follow`
// seeded: it holds the last zxid followed, so that a later `zkd follow`
// resumes only from a directory nothing else has written since.
const followedSuffix = ".followed"

// followMain runs `zkd follow`; it returns the exit code. It follows a
// ZooKeeper ensemble as an observer until SIGTERM or SIGINT, then seeds
// zoo.cfg's data dir with the followed state (the cutover) and exits.
func followMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("zkd follow", flag.ContinueOnError)
	fs.SetOutput(stderr)
	zkAddrs := fs.String("zk", "", "the ZooKeeper members' quorum addresses, host:port,... (the first port of each server.N line; only the leader accepts)")
	sid := fs.Int64("sid", 0, "this observer's id in the ZooKeeper ensemble (its server.N=host:port:port:observer line); default the zkd member's myid")
	serve := fs.Bool("serve", true, "serve read-only clients the followed tree on zoo.cfg's client port meanwhile")
	every := fs.Duration("status-every", 10*time.Second, "how often to print the follower's status (0: never)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: zkd follow -zk HOST:QUORUMPORT,... [-sid N] zoo.cfg\n\n"+
			"Follows a running ZooKeeper 3.8 ensemble as an observer. On SIGTERM or SIGINT\n"+
			"it writes the followed tree, zxid and sessions into the data dir of zoo.cfg\n"+
			"and exits; `zkd zoo.cfg` then serves them (the cutover). zoo.cfg's tickTime,\n"+
			"initLimit and syncLimit should be the ZooKeeper ensemble's.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *zkAddrs == "" {
		fs.Usage()
		return 2
	}
	c, err := parseZooCfg(fs.Arg(0), os.Environ())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if *sid == 0 {
		*sid = c.MyID
	}
	if *sid <= 0 {
		fmt.Fprintln(stderr, "zkd follow: give the observer's server id with -sid (zoo.cfg's dataDir has no myid)")
		return 2
	}
	// quorum.auth.* are the follower's, toward ZooKeeper's leader; the
	// zkd member's configuration (seedConfig, the read-only server) has
	// no quorum SASL, and refuses those keys.
	sasl, saslHow, err := followQuorumSASL(c)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	for _, k := range []string{"quorum.auth.enableSasl", "quorum.auth.learnerRequireSasl", "quorum.auth.serverRequireSasl"} {
		delete(c.Props, k)
		delete(c.Props, "zookeeper."+k)
	}
	nc, err := seedConfig(c)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(stdout, "%s  "+format+"\n", append([]any{time.Since(start).Round(time.Millisecond)}, args...)...)
	}
	resume, err := resumeState(nc)
	if err != nil {
		fmt.Fprintf(stderr, "zkd follow: %v\n", err)
		return 1
	}
	if resume != nil {
		say("resuming from %s at zxid 0x%x: %d znodes, %d sessions", nc.Dir, resume.LastZxid, resume.Len(), len(resume.Sessions))
	}
	zl, _ := zap.NewProduction()
	if zl == nil {
		zl = zap.NewNop()
	}
	var closeServer func() error
	replica := newFollowReplica(nc.Tree, zl.Named("readonly"))
	fc := zkfollow.Config{
		SID:       *sid,
		Addrs:     strings.Split(*zkAddrs, ","),
		TickTime:  c.TickTime,
		InitLimit: c.InitLimit,
		SyncLimit: c.SyncLimit,
		Tree:      resume,
		Logger:    zl.Named("zkfollow"),
	}
	// sslQuorum=true: the ZooKeeper leader takes learners over mutual TLS
	// only, with the member's ssl.quorum.* certificate.
	var qc quorum.Config
	if err := quorumTLS(c, &qc, zl.Named("zkfollow")); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if qc.PeerTLS != nil && !qc.DialPlaintext {
		fc.TLS = qc.PeerTLS.ClientConfig
		say("dialing the ZooKeeper leader over TLS (sslQuorum=true)")
	}
	if sasl != nil {
		fc.SASL = sasl
		say("%s", saslHow)
	}
	if *serve {
		fc.Synced, fc.Applied = replica.rebuild, replica.applied
		srv, addr, err := serveFollowed(c, replica, zl.Named("server"))
		if err != nil {
			fmt.Fprintf(stderr, "zkd follow: %v\n", err)
			return 1
		}
		defer srv.Close()
		say("serving read-only clients on %s once synced", addr)
		// The client port is zkd's after the cutover: free it first.
		closeServer = srv.Close
	}
	f, err := zkfollow.New(fc)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	say("following ZooKeeper at %s as observer %d", *zkAddrs, *sid)
	var tick <-chan time.Time
	if *every > 0 {
		t := time.NewTicker(*every)
		defer t.Stop()
		tick = t.C
	}
	synced := 0
	for running := true; running; {
		select {
		case err = <-done:
			running = false
		case <-tick:
		case <-time.After(100 * time.Millisecond):
			if st := f.Status(); st.Syncs > synced {
				synced = st.Syncs
				say("synced by %s with %s in %s: zxid 0x%x, %d znodes, %d sessions", st.SyncMode, st.Leader, st.SyncTime.Round(time.Millisecond), st.LastZxid, st.Nodes, st.Sessions)
			}
			continue
		}
		st := f.Status()
		say("leader %q synced=%v zxid 0x%x znodes %d sessions %d txns %d digests checked %d", st.Leader, st.Synced, st.LastZxid, st.Nodes, st.Sessions, st.Txns, st.DigestsChecked)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "zkd follow: %v; nothing written\n", err)
		return 1
	}
	st := f.Status()
	t := f.Tree()
	if t == nil || st.Syncs == 0 {
		fmt.Fprintf(stderr, "zkd follow: stopped before any sync with a ZooKeeper leader; nothing written\n")
		return 1
	}
	if st.DigestsChecked == 0 && !st.DigestExact {
		say("NOTE: the leader sent no digests since the last sync, so the tree was not checked against ZooKeeper's")
	} else if !st.DigestExact {
		fmt.Fprintf(stderr, "zkd follow: the tree's digest never matched the leader's since the last sync; nothing written\n")
		return 1
	}
	if closeServer != nil {
		closeServer()
	}
	if err := cutover(nc, t, stdout); err != nil {
		fmt.Fprintf(stderr, "zkd follow: %v\n", err)
		return 1
	}
	say("cutover: wrote %s at zxid 0x%x (%d znodes, %d sessions, %d transactions followed, last sync %s in %s); start zkd with this zoo.cfg",
		nc.Dir, t.LastZxid, t.Len(), len(t.Sessions), st.Txns, st.SyncMode, st.SyncTime.Round(time.Millisecond))
	return 0
}

// resumeState returns the state an earlier `zkd follow` left in nc.Dir,
// nil for an empty one. A data dir with other zkd state, or one written to
// since it was followed, is refused: its zxids are no longer ZooKeeper's.
func resumeState(nc zab.Config) (*zkformat.Tree, error) {
	ents, err := os.ReadDir(nc.Dir)
	if err != nil || len(ents) == 0 {
		return nil, nil
	}
	b, err := os.ReadFile(nc.Dir + followedSuffix)
	if err != nil {
		return nil, fmt.Errorf("%w: %s, and not from an earlier zkd follow; follow into a new member (move it aside first)", zab.ErrHasState, nc.Dir)
	}
	want, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nc.Dir+followedSuffix, err)
	}
	st, err := zab.Load(nc)
	if err != nil {
		return nil, err
	}
	if got := st.Tree.LastZxid(); got != want {
		return nil, fmt.Errorf("%s was written by zkd since zkd follow left it at zxid 0x%x (now 0x%x): it cannot follow ZooKeeper again", nc.Dir, want, got)
	}
	var images []datatree.NodeImage
	st.Tree.Images(func(im *datatree.NodeImage) error {
		images = append(images, *im)
		return nil
	})
	sessions := make(map[int64]int32, len(st.Sessions))
	for i, id := range st.Sessions {
		sessions[id] = st.Timeouts[i]
	}
	return zkformat.TreeFromImages(images, sessions, want)
}

// cutover writes the followed state into nc.Dir (replacing what an
// earlier zkd follow left there) and notes its zxid beside it.
func cutover(nc zab.Config, t *zkformat.Tree, out io.Writer) error {
	_, st, err := zkState(nc, t)
	if err != nil {
		return err
	}
	old := nc.Dir + ".old"
	os.RemoveAll(old)
	if _, err := os.Stat(nc.Dir); err == nil {
		if err := os.Rename(nc.Dir, old); err != nil {
			return err
		}
	}
	if err := seedDir(nc, st); err != nil {
		os.Rename(old, nc.Dir)
		return err
	}
	os.RemoveAll(old)
	return os.WriteFile(nc.Dir+followedSuffix, []byte(fmt.Sprintf("0x%x\n", t.LastZxid)), 0o644)
}
