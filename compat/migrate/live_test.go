package migrate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// follower is a running `zkd follow`.
type follower struct {
	cmd  *exec.Cmd
	out  zkproc.SyncBuffer
	done chan error
}

func startFollow(t *testing.T, bin string, zkQuorum []string, sid int, cfg string, env ...string) *follower {
	t.Helper()
	f := &follower{done: make(chan error, 1)}
	f.cmd = exec.Command(bin, "follow", "-zk", strings.Join(zkQuorum, ","), "-sid", strconv.Itoa(sid), "-status-every", "2s", cfg)
	f.cmd.Env = append(os.Environ(), env...)
	f.cmd.Stdout, f.cmd.Stderr = &f.out, &f.out
	must(t, f.cmd.Start())
	go func() { f.done <- f.cmd.Wait() }()
	t.Cleanup(func() {
		if f.cmd.ProcessState == nil {
			f.cmd.Process.Kill()
			<-f.done
		}
	})
	return f
}

// waitOutput waits until the follower printed a line matching re and
// returns the match.
func (f *follower) waitOutput(t *testing.T, re *regexp.Regexp, within time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(f.out.String()); m != nil {
			return m
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("zkd follow printed no %q within %s:\n%s", re, within, f.out.String())
	return nil
}

// cutover stops the follower with SIGTERM and waits for it to write its
// data dir and exit.
func (f *follower) cutover(t *testing.T) {
	t.Helper()
	must(t, f.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-f.done:
		if err != nil {
			t.Fatalf("zkd follow: %v\n%s", err, f.out.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("zkd follow did not exit after SIGTERM:\n%s", f.out.String())
	}
	if !strings.Contains(f.out.String(), "cutover: wrote") {
		t.Fatalf("zkd follow wrote nothing:\n%s", f.out.String())
	}
}

// quorumAddrs reads each ZooKeeper member's own quorum address from its
// zoo.cfg (server.N=host:quorumPort:electionPort;...).
func quorumAddrs(t *testing.T, zs []*zkproc.Server) []string {
	t.Helper()
	b, err := os.ReadFile(zs[0].CfgPath)
	must(t, err)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.HasPrefix(k, "server.") || strings.Contains(v, "observer") {
			continue
		}
		hp := strings.SplitN(strings.SplitN(v, ";", 2)[0], ":", 3)
		out = append(out, hp[0]+":"+hp[1])
	}
	if len(out) != len(zs) {
		t.Fatalf("found %d quorum addresses in %s, want %d", len(out), zs[0].CfgPath, len(zs))
	}
	return out
}

// ack is one acknowledged write of the load.
type ack struct {
	at   time.Time
	zxid int64
}

// load writes until stopped: a sequential node, then the counter, and
// records what was acknowledged.
type load struct {
	c       *zk.Conn
	mu      sync.Mutex
	created []string
	acks    []ack
	counter int
	stop    chan struct{}
	done    chan struct{}
}

func startLoad(c *zk.Conn) *load {
	l := &load{c: c, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for i := 1; ; i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			p, err := c.Create("/load/n-", nil, zk.FlagSequence, open)
			if err == nil {
				l.mu.Lock()
				l.created = append(l.created, p)
				l.mu.Unlock()
			}
			st, err := c.Set("/load/counter", []byte(strconv.Itoa(i)), -1)
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			l.mu.Lock()
			l.acks = append(l.acks, ack{time.Now(), st.Mzxid})
			l.counter = i
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *load) halt() {
	close(l.stop)
	<-l.done
}

func (l *load) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

// TestIntegration_LiveMigration follows a three-member ZooKeeper 3.8
// ensemble with `zkd follow` (observer server.4) under a write load, with
// a go-zk lock holder and two waiters, a Kazoo Lock holder and waiter,
// and a Curator InterProcessMutex holder (Java) with Kazoo, go-zk and
// Kazoo waiters queued on its lock: first synced by SNAP, then restarted
// after more writes and synced by DIFF; then the ZooKeeper members stop,
// the follower writes its data dir and zkd starts on it. The clients move
// by themselves (zkd's address is in their server list): the holders keep
// their sessions and lock nodes (Curator's writes through zkd guarded by
// its node), the waiters acquire in order, no acknowledged write is lost,
// sequence numbers and zxids continue, and every lock node taken after
// the cutover has a czxid (fencing token) above all those before.
func TestIntegration_LiveMigration(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	bin := zkproc.BuildZkd(t)
	ports := zkproc.FreePorts(t, 3) // observer quorum and election ports, zkd's client port
	zs := zkproc.StartZooKeeperEnsemble(t, 3, zkproc.Options{
		// The observer line names zkd's client address: Curator's
		// EnsembleTracker replaces its connect string with the client
		// addresses in /zookeeper/config, and would drop zkd otherwise.
		ExtraCfg: map[string]string{"server.4": fmt.Sprintf("127.0.0.1:%d:%d:observer;127.0.0.1:%d", ports[0], ports[1], ports[2])},
		// The first sync must be a SNAP: no sync from the transaction
		// log, and a committed log shorter than the history.
		JVMFlags: []string{"-Dzookeeper.snapshotSizeFactor=-1", "-Dzookeeper.commitLogCount=100"},
	})
	zkdAddr := fmt.Sprintf("127.0.0.1:%d", ports[2])
	servers := append(zkproc.Addrs(zs), zkdAddr)
	dial := func() *zk.Conn {
		c, _, err := zk.Connect(servers, sessionTimeout, zk.WithLogger(quiet{}))
		must(t, err)
		t.Cleanup(c.Close)
		waitSession(t, c)
		return c
	}
	w := dial()
	for _, p := range []string{"/load", "/locks"} {
		_, err := w.Create(p, nil, 0, open)
		must(t, err)
	}
	_, err := w.Create("/load/counter", []byte("0"), 0, open)
	must(t, err)
	for i := 0; i < 150; i++ {
		_, err := w.Create("/load/n-", nil, zk.FlagSequence, open)
		must(t, err)
	}
	// ZKD_LIVE_NODES adds that many 32-byte znodes before the follower
	// starts, for the SNAP sync figure.
	if n, _ := strconv.Atoi(os.Getenv("ZKD_LIVE_NODES")); n > 0 {
		_, err := w.Create("/bulk", nil, 0, open)
		must(t, err)
		data := bytes.Repeat([]byte("x"), 32)
		for i := 0; i < n; i += 500 {
			var ops []any
			for j := i; j < min(i+500, n); j++ {
				ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("/bulk/%d/%d", j/1000, j), Data: data, Acl: open})
			}
			if i%1000 == 0 {
				ops = append([]any{&zk.CreateRequest{Path: fmt.Sprintf("/bulk/%d", i/1000), Acl: open}}, ops...)
			}
			_, err := w.Multi(ops...)
			must(t, err)
		}
	}

	dir := t.TempDir()
	cfg := writeZooCfg(t, dir, ports[2])
	quorum := quorumAddrs(t, zs)
	start := time.Now()
	f := startFollow(t, bin, quorum, 4, cfg)
	m := f.waitOutput(t, regexp.MustCompile(`synced by (\w+) with \S+ in (\S+): zxid (0x[0-9a-f]+), (\d+) znodes`), 2*time.Minute)
	if m[1] != "SNAP" {
		t.Errorf("first sync by %s, want SNAP", m[1])
	}
	t.Logf("figure: SNAP sync of %s znodes took %s (zkd follow start to synced: %s)", m[4], m[2], time.Since(start).Round(time.Millisecond))

	// Lock holder, waiters (in this order), idle sessions with ephemerals.
	holder := dial()
	hl := zk.NewLock(holder, "/locks", open)
	must(t, hl.Lock())
	waiters := []*zk.Conn{dial(), dial()}
	wl := make([]*zk.Lock, len(waiters))
	granted := make(chan int, len(waiters))
	errs := make(chan error, len(waiters))
	for i, c := range waiters {
		wl[i] = zk.NewLock(c, "/locks", open)
		go func(i int) {
			if err := wl[i].Lock(); err != nil {
				errs <- fmt.Errorf("waiter %d: %w", i, err)
				return
			}
			granted <- i
		}(i)
		waitChildren(t, w, "/locks", i+2)
	}
	// Kazoo's Lock recipe: a holder and a waiter on their own lock.
	kh := startKazooLock(t, servers, "/kazoo-lock", "holder")
	if l := kh.next(t, time.Minute); l != "acquired" {
		t.Fatalf("Kazoo holder: %q", l)
	}
	kw := startKazooLock(t, servers, "/kazoo-lock", "waiter")
	waitChildren(t, w, "/kazoo-lock", 2)
	// Curator's InterProcessMutex holds /curator-lock; a Kazoo waiter, a
	// go-zk waiter and a second Kazoo waiter queue behind it in this order
	// (Kazoo is told Curator's and go-zk's node names, "-lock-").
	_, err = w.Create("/curator-guard", nil, 0, open)
	must(t, err)
	ch := startCuratorHolder(t, servers, "/curator-lock", "/curator-guard")
	chNode, chCzxid := curatorAcquired(t, ch)
	cq := []*locker{startKazooLock(t, servers, "/curator-lock", "curator-queue-1", "-lock-")}
	waitChildren(t, w, "/curator-lock", 2)
	gq := dial()
	gql := zk.NewLock(gq, "/curator-lock", open)
	gqGranted := make(chan error, 1)
	go func() { gqGranted <- gql.Lock() }()
	waitChildren(t, w, "/curator-lock", 3)
	cq = append(cq, startKazooLock(t, servers, "/curator-lock", "curator-queue-3", "-lock-"))
	waitChildren(t, w, "/curator-lock", 4)
	idle := make([]*zk.Conn, 5)
	for i := range idle {
		idle[i] = dial()
		_, err := idle[i].Create(fmt.Sprintf("/idle-%d", i), nil, zk.FlagEphemeral, open)
		must(t, err)
	}
	clients := append([]*zk.Conn{w, holder}, append(waiters, append(idle, gq)...)...)
	ids := make([]int64, len(clients))
	for i, c := range clients {
		ids[i] = c.SessionID()
	}
	holderNode := ownedChild(t, w, "/locks", holder.SessionID())
	checkReadOnly(t, w, zkdAddr, "/idle-4", []string{"/locks", "/locks/" + holderNode, "/load", "/load/counter", "/idle-0"})

	ld := startLoad(w)
	waitAcks(t, ld, 50)

	// DIFF: the follower stops (writing its state), more writes land, and
	// it resumes from its data dir.
	f.cutover(t)
	waitAcks(t, ld, ld.count()+50)
	f = startFollow(t, bin, quorum, 4, cfg)
	f.waitOutput(t, regexp.MustCompile(`resuming from`), time.Minute)
	m = f.waitOutput(t, regexp.MustCompile(`synced by (\w+) with \S+ in (\S+): zxid (0x[0-9a-f]+)`), 2*time.Minute)
	if m[1] != "DIFF" {
		t.Errorf("sync after a restart by %s, want DIFF", m[1])
	}
	waitAcks(t, ld, ld.count()+50)

	// Cutover: the ZooKeeper followers stop first, so the leader commits
	// nothing more, then the leader; the follower writes zkd's data dir;
	// zkd starts where the clients will look.
	alive := 0
	for _, c := range clients {
		if c.State() == zk.StateHasSession {
			alive++
		}
	}
	// Every lock node's czxid so far: fencing tokens taken after the
	// cutover must be above them all.
	var preCzxid int64
	for _, p := range []string{"/locks", "/kazoo-lock", "/curator-lock"} {
		preCzxid = max(preCzxid, maxChildCzxid(t, w, p))
	}
	stopZooKeeper(t, zs)
	f.cutover(t)
	zd := zkproc.StartZkd(t, zkproc.Options{Dir: dir, Port: ports[2], Binary: bin})
	t.Logf("zkd follow:\n%s", f.out.String())

	// Sessions: every client reconnects to zkd with its session.
	survived := 0
	for i, c := range clients {
		waitSessionWithin(c, 2*sessionTimeout)
		if c.State() == zk.StateHasSession && c.SessionID() == ids[i] {
			survived++
		} else {
			t.Errorf("client %d: session 0x%x, state %v after the cutover, had 0x%x", i, c.SessionID(), c.State(), ids[i])
		}
	}
	t.Logf("figure: sessions surviving the cutover: %d of %d alive before", survived, alive)

	// The gap: from the last write ZooKeeper acknowledged to the first zkd
	// did (zkd's zxids are in a later epoch).
	waitAcks(t, ld, ld.count()+20)
	ld.halt()
	var lastZK, firstZkd ack
	zkEpoch := ld.acks[0].zxid >> 32
	for _, a := range ld.acks {
		if a.zxid>>32 == zkEpoch {
			lastZK = a
		} else if firstZkd.at.IsZero() && a.zxid>>32 > zkEpoch {
			firstZkd = a
		}
	}
	if firstZkd.at.IsZero() {
		t.Fatalf("no write acknowledged in a later epoch than ZooKeeper's 0x%x", zkEpoch)
	}
	t.Logf("figure: cutover gap %s (last ZooKeeper ack zxid 0x%x, first zkd ack zxid 0x%x)", firstZkd.at.Sub(lastZK.at).Round(time.Millisecond), lastZK.zxid, firstZkd.zxid)

	c := connect(t, zd.Addr)
	// No acknowledged write lost.
	for _, p := range ld.created {
		if ok, _, err := c.Exists(p); err != nil || !ok {
			t.Errorf("acknowledged create %s lost (exists %v, %v)", p, ok, err)
		}
	}
	data, st, err := c.Get("/load/counter")
	must(t, err)
	if n, _ := strconv.Atoi(string(data)); n != ld.counter {
		t.Errorf("/load/counter is %s, the last acknowledged set wrote %d", data, ld.counter)
	}
	if st.Mzxid != ld.acks[len(ld.acks)-1].zxid {
		t.Errorf("/load/counter mzxid 0x%x, the last acknowledged set had 0x%x", st.Mzxid, ld.acks[len(ld.acks)-1].zxid)
	}
	// Sequence numbers continue.
	kids, _, err := c.Children("/load")
	must(t, err)
	maxSeq := 0
	for _, k := range kids {
		if s, ok := strings.CutPrefix(k, "n-"); ok {
			n, _ := strconv.Atoi(s)
			maxSeq = max(maxSeq, n)
		}
	}
	p, err := c.Create("/load/n-", nil, zk.FlagSequence, open)
	must(t, err)
	if n, _ := strconv.Atoi(p[len(p)-10:]); n != maxSeq+1 {
		t.Errorf("next sequential node %s after n-%010d", p, maxSeq)
	}

	// The holder still holds: same session, same node, owned by it.
	if got := ownedChild(t, c, "/locks", ids[1]); got != holderNode {
		t.Errorf("holder's lock node %s became %s", holderNode, got)
	}
	select {
	case i := <-granted:
		t.Fatalf("waiter %d acquired while the holder held the lock", i)
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	_, hst, err := c.Get("/locks/" + holderNode)
	must(t, err)
	must(t, hl.Unlock())
	var order []int
	for len(order) < len(waiters) {
		select {
		case i := <-granted:
			order = append(order, i)
			node := ownedChild(t, c, "/locks", ids[2+i])
			_, wst, err := c.Get("/locks/" + node)
			must(t, err)
			if wst.Czxid <= hst.Czxid {
				t.Errorf("waiter %d's czxid 0x%x not above the holder's 0x%x", i, wst.Czxid, hst.Czxid)
			}
			must(t, wl[i].Unlock())
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(time.Minute):
			t.Fatalf("waiters acquired %v within a minute of the release", order)
		}
	}
	if !slices.Equal(order, []int{0, 1}) {
		t.Errorf("waiters acquired in order %v, want [0 1]", order)
	}
	// Kazoo: the holder still holds with its session; the waiter, with
	// its own session, acquires once it releases.
	ownedChild(t, c, "/kazoo-lock", kh.session)
	ownedChild(t, c, "/kazoo-lock", kw.session)
	t.Logf("figure: Kazoo sessions surviving the cutover: 2 of 2 (holder 0x%x, waiter 0x%x)", kh.session, kw.session)
	select {
	case l := <-kw.lines:
		t.Fatalf("Kazoo waiter before the release: %q", l)
	default:
	}
	fmt.Fprintln(kh.in)
	if l := kh.next(t, time.Minute); l != "released" {
		t.Fatalf("Kazoo holder: %q", l)
	}
	if l := kw.next(t, time.Minute); l != "acquired" {
		t.Fatalf("Kazoo waiter: %q", l)
	}
	n := checkCuratorQueue(t, c, ch, chNode, chCzxid, cq, gq.SessionID(), gql, gqGranted, zkEpoch)
	t.Logf("figure: Curator holder and Kazoo waiters on /curator-lock: %d of %d sessions surviving the cutover", n, 1+len(cq))

	// The fencing token keeps growing: each lock node taken after the
	// cutover (Curator's holder again, then a go-zk waiter on each lock)
	// has a czxid above every lock node's before it, and above the last.
	ch.say(t, "acquire")
	_, czxid := curatorAcquired(t, ch)
	tokens := []int64{czxid}
	ch.say(t, "release")
	if l := ch.next(t, time.Minute); l != "released" {
		t.Fatalf("Curator holder: %q", l)
	}
	for _, l := range []struct {
		lock    *zk.Lock
		path    string
		session int64
	}{{gql, "/curator-lock", gq.SessionID()}, {wl[0], "/locks", ids[2]}} {
		must(t, l.lock.Lock())
		_, st, err := c.Get(l.path + "/" + ownedChild(t, c, l.path, l.session))
		must(t, err)
		tokens = append(tokens, st.Czxid)
		must(t, l.lock.Unlock())
	}
	for i, tok := range tokens {
		if tok <= preCzxid || (i > 0 && tok <= tokens[i-1]) {
			t.Errorf("fencing tokens after the cutover %#x: #%d not above %#x (the highest lock node czxid before) and the previous", tokens, i, preCzxid)
		}
	}
}

// curatorAcquired reads the Curator holder's "acquired NODE CZXID".
func curatorAcquired(t *testing.T, ch *locker) (string, int64) {
	t.Helper()
	l := ch.next(t, 2*time.Minute)
	var node string
	var czxid int64
	if _, err := fmt.Sscanf(l, "acquired %s %d", &node, &czxid); err != nil {
		t.Fatalf("Curator holder: %q", l)
	}
	return node, czxid
}

// checkCuratorQueue checks /curator-lock on zkd after the cutover: the
// Curator holder still holds (same session, same node owned by it, its
// mutex acquired, a write guarded by its node acknowledged by zkd), no
// waiter has the lock; once it releases, the Kazoo waiter, the go-zk waiter
// and the second Kazoo waiter acquire in that order, each with a czxid
// above the one before. It returns how many of the Curator and Kazoo
// sessions came through (all, or it fails t).
func checkCuratorQueue(t *testing.T, c *zk.Conn, ch *locker, chNode string, chCzxid int64, cq []*locker, gqSession int64, gql *zk.Lock, gqGranted chan error, zkEpoch int64) int {
	t.Helper()
	ch.say(t, "check")
	l := ch.next(t, 2*time.Minute)
	var session, owner, mzxid int64
	var held bool
	if _, err := fmt.Sscanf(l, "checked %d %d %t %d", &session, &owner, &held, &mzxid); err != nil {
		t.Fatalf("Curator holder: %q", l)
	}
	if session != ch.session || owner != ch.session || !held {
		t.Errorf("Curator holder after the cutover: session 0x%x (had 0x%x), its node owned by 0x%x, isAcquiredInThisProcess %v", session, ch.session, owner, held)
	}
	if mzxid>>32 <= zkEpoch {
		t.Errorf("Curator's guarded write has mzxid 0x%x, not in zkd's epoch (ZooKeeper's was 0x%x)", mzxid, zkEpoch)
	}
	if got := ownedChild(t, c, "/curator-lock", ch.session); got != chNode {
		t.Errorf("Curator holder's node %s became %s", chNode, got)
	}
	for _, k := range cq {
		ownedChild(t, c, "/curator-lock", k.session)
	}
	queueSilent := func(when string) {
		t.Helper()
		for _, k := range cq {
			k.silent(t, when)
		}
		select {
		case err := <-gqGranted:
			t.Fatalf("go-zk waiter on /curator-lock %s: acquired (%v)", when, err)
		default:
		}
	}
	queueSilent("before the Curator holder released")
	ch.say(t, "release")
	if l := ch.next(t, time.Minute); l != "released" {
		t.Fatalf("Curator holder: %q", l)
	}
	tokens := []int64{chCzxid}
	token := func(session int64) {
		t.Helper()
		_, st, err := c.Get("/curator-lock/" + ownedChild(t, c, "/curator-lock", session))
		must(t, err)
		if st.Czxid <= tokens[len(tokens)-1] {
			t.Errorf("/curator-lock: czxid 0x%x of the next holder not above 0x%x", st.Czxid, tokens[len(tokens)-1])
		}
		tokens = append(tokens, st.Czxid)
	}
	release := func(k *locker) {
		t.Helper()
		k.say(t, "")
		if l := k.next(t, time.Minute); l != "released" {
			t.Fatalf("%s: %q", k.name, l)
		}
	}
	if l := cq[0].next(t, time.Minute); l != "acquired" {
		t.Fatalf("%s: %q", cq[0].name, l)
	}
	token(cq[0].session)
	queueSilent("while the first Kazoo waiter held /curator-lock")
	release(cq[0])
	select {
	case err := <-gqGranted:
		must(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the go-zk waiter on /curator-lock did not acquire within a minute of the Kazoo waiter's release")
	}
	token(gqSession)
	cq[1].silent(t, "while the go-zk waiter held /curator-lock")
	must(t, gql.Unlock())
	if l := cq[1].next(t, time.Minute); l != "acquired" {
		t.Fatalf("%s: %q", cq[1].name, l)
	}
	token(cq[1].session)
	release(cq[1])
	return 1 + len(cq)
}

// maxChildCzxid returns the highest czxid among path's children.
func maxChildCzxid(t *testing.T, c *zk.Conn, path string) int64 {
	t.Helper()
	kids, _, err := c.Children(path)
	must(t, err)
	var m int64
	for _, k := range kids {
		_, st, err := c.Get(path + "/" + k)
		must(t, err)
		m = max(m, st.Czxid)
	}
	return m
}

// kazooReadOnly reads nodes from a read-only server with Kazoo (the
// client asks for a read-only session): it waits for argv[2] to appear,
// prints each later argument's data and Stat as JSON, tries a write, then
// watches argv[2]'s data and prints the event it gets.
const kazooReadOnly = `
import json, sys, time, threading
from kazoo.client import KazooClient
from kazoo.exceptions import NotReadOnlyCallError
zk = KazooClient(hosts=sys.argv[1], read_only=True)
zk.start(timeout=60)
deadline = time.time() + 60
while not zk.exists(sys.argv[2]):
    if time.time() > deadline:
        sys.exit("no " + sys.argv[2])
    time.sleep(0.05)
out = {}
for p in sys.argv[3:]:
    data, st = zk.get(p)
    out[p] = [(data or b"").decode(), st.czxid, st.mzxid, st.pzxid, st.version, st.cversion, st.aversion, st.ephemeralOwner, st.numChildren]
try:
    zk.create("/ro-write")
    out["write"] = "accepted"
except NotReadOnlyCallError:
    out["write"] = "NotReadOnly"
fired = threading.Event()
events = []
def watch(ev):
    events.append("%s %s" % (ev.type, ev.path))
    fired.set()
zk.get(sys.argv[2], watch=watch)
print(json.dumps(out), flush=True)
print("watching", flush=True)
fired.wait(60)
print("event " + (events[0] if events else "none"), flush=True)
zk.stop()
`

// checkReadOnly reads paths from the following zkd with Kazoo in
// read-only mode and compares them with ZooKeeper's (read through c), once
// wait has appeared there; a write is refused with NotReadOnly, and a
// data watch set there fires when ZooKeeper changes the node.
func checkReadOnly(t *testing.T, c *zk.Conn, addr, wait string, paths []string) {
	t.Helper()
	want := map[string][]any{}
	for _, p := range paths {
		data, st, err := c.Get(p)
		must(t, err)
		want[p] = []any{string(data), st.Czxid, st.Mzxid, st.Pzxid, st.Version, st.Cversion, st.Aversion, st.EphemeralOwner, st.NumChildren}
	}
	cmd := exec.Command("/usr/bin/python3", append([]string{"-c", kazooReadOnly, addr, wait}, paths...)...)
	var stderr zkproc.SyncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer cmd.Wait()
	lines := bufio.NewScanner(out)
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("Kazoo read-only client ended: %s", stderr.String())
		}
		return lines.Text()
	}
	var got map[string]any
	dec := json.NewDecoder(strings.NewReader(next()))
	dec.UseNumber()
	must(t, dec.Decode(&got))
	if got["write"] != "NotReadOnly" {
		t.Errorf("a write on the read-only follower: %v, want NotReadOnly", got["write"])
	}
	for _, p := range paths {
		if fmt.Sprint(got[p]) != fmt.Sprint(want[p]) {
			t.Errorf("%s read-only from zkd follow: %v; from ZooKeeper: %v", p, got[p], want[p])
		}
	}
	if l := next(); l != "watching" {
		t.Fatalf("Kazoo: %q", l)
	}
	_, err = c.Set(wait, []byte("changed"), -1)
	must(t, err)
	if l := next(); l != "event CHANGED "+wait {
		t.Errorf("data watch on the read-only follower: %q, want a CHANGED event for %s", l, wait)
	}
}

// kazooLocker takes Kazoo's Lock recipe on argv[2] (named argv[3]; later
// arguments are other recipes' node name patterns it queues behind, as
// Curator's "-lock-") and holds it until a line arrives on stdin; it
// prints its session id, then "acquired", then "released".
const kazooLocker = `
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=30.0)
zk.start(timeout=60)
print("session %d" % zk.client_id[0], flush=True)
lock = zk.Lock(sys.argv[2], sys.argv[3], extra_lock_patterns=sys.argv[4:])
lock.acquire()
print("acquired", flush=True)
sys.stdin.readline()
lock.release()
print("released", flush=True)
sys.stdin.readline()
zk.stop()
`

// locker is a running lock client in another process (Kazoo or Curator):
// it takes commands as lines on stdin and answers with lines, the first
// of which is "session ID".
type locker struct {
	name    string
	cmd     *exec.Cmd
	in      io.WriteCloser
	lines   chan string
	stderr  zkproc.SyncBuffer
	session int64
}

// startLocker starts argv as the locker name and reads its session id.
func startLocker(t *testing.T, name string, argv ...string) *locker {
	t.Helper()
	k := &locker{name: name, cmd: exec.Command(argv[0], argv[1:]...), lines: make(chan string, 8)}
	var err error
	k.in, err = k.cmd.StdinPipe()
	must(t, err)
	out, err := k.cmd.StdoutPipe()
	must(t, err)
	k.cmd.Stderr = &k.stderr
	must(t, k.cmd.Start())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s stderr:\n%s", k.name, k.stderr.String())
		}
		k.in.Close()
		k.cmd.Process.Kill()
		k.cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			k.lines <- sc.Text()
		}
		k.lines <- "exited"
	}()
	l := k.next(t, 2*time.Minute)
	if _, err := fmt.Sscanf(l, "session %d", &k.session); err != nil {
		t.Fatalf("%s: %q", name, l)
	}
	return k
}

// startKazooLock starts kazooLocker on path with the identifier name,
// queueing behind nodes named by the patterns too.
func startKazooLock(t *testing.T, hosts []string, path, name string, patterns ...string) *locker {
	t.Helper()
	return startLocker(t, "Kazoo locker "+name, append([]string{"/usr/bin/python3", "-c", kazooLocker, strings.Join(hosts, ","), path, name}, patterns...)...)
}

// startCuratorHolder starts testdata/CuratorHolder.java: a Curator
// InterProcessMutex on path that acquires at once; guard is the node its
// lock-guarded write sets.
func startCuratorHolder(t *testing.T, hosts []string, path, guard string) *locker {
	t.Helper()
	// slf4j-simple logs the client's warnings to stderr, shown when t fails.
	return startLocker(t, "Curator holder", "java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-cp", zkproc.CuratorClasspath(t)+":/usr/share/java/slf4j-simple.jar",
		"testdata/CuratorHolder.java", strings.Join(hosts, ","), path, guard)
}

// next returns the locker's next line, failing after d.
func (k *locker) next(t *testing.T, d time.Duration) string {
	t.Helper()
	select {
	case l := <-k.lines:
		return l
	case <-time.After(d):
		t.Fatalf("%s said nothing within %s", k.name, d)
		return ""
	}
}

// say sends the locker a command line.
func (k *locker) say(t *testing.T, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(k.in, line); err != nil {
		t.Fatalf("%s: %v", k.name, err)
	}
}

// silent fails t if the locker said something.
func (k *locker) silent(t *testing.T, when string) {
	t.Helper()
	select {
	case l := <-k.lines:
		t.Fatalf("%s %s: %q", k.name, when, l)
	default:
	}
}

// stopZooKeeper stops a ZooKeeper ensemble in the runbook's order: the
// followers, then, once it no longer leads, the leader.
func stopZooKeeper(t *testing.T, zs []*zkproc.Server) {
	t.Helper()
	leader := -1
	for i, s := range zs {
		if out, err := s.FourLetter("srvr"); err == nil && strings.Contains(out, "Mode: leader") {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no ZooKeeper member says it leads")
	}
	for i, s := range zs {
		if i != leader {
			s.Stop()
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := zs[leader].FourLetter("srvr")
		if err != nil || !strings.Contains(out, "Mode: leader") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ZooKeeper leader still leads a minute after its followers stopped")
		}
		time.Sleep(50 * time.Millisecond)
	}
	zs[leader].Stop()
}

// TestIntegration_LiveMigrationIntoEnsemble forms a three-member zkd
// ensemble from one follower, as docs/migration.md says: the other members
// start empty with zkd.bootstrap=false and catch up through raft. A go-zk
// session with an ephemeral node moves to the ensemble with it, and every
// member serves the followed tree.
func TestIntegration_LiveMigrationIntoEnsemble(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	bin := zkproc.BuildZkd(t)
	obs := zkproc.FreePorts(t, 2)
	zs := zkproc.StartZooKeeperEnsemble(t, 3, zkproc.Options{
		ExtraCfg: map[string]string{"server.4": fmt.Sprintf("127.0.0.1:%d:%d:observer", obs[0], obs[1])},
	})
	// The zkd ensemble's directories, configs and ports; stopped and
	// emptied until the cutover.
	members := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{Binary: bin})
	for _, m := range members {
		m.Stop()
		must(t, os.RemoveAll(filepath.Join(m.DataDir, "zkd")))
	}
	c, _, err := zk.Connect(append(zkproc.Addrs(zs), zkproc.Addrs(members)...), sessionTimeout, zk.WithLogger(quiet{}))
	must(t, err)
	t.Cleanup(c.Close)
	waitSession(t, c)
	id := c.SessionID()
	_, err = c.Create("/app", []byte("x"), 0, open)
	must(t, err)
	eph, err := c.Create("/app/lock-", nil, zk.FlagEphemeralSequential, open)
	must(t, err)

	f := startFollow(t, bin, quorumAddrs(t, zs), 4, members[0].CfgPath)
	f.waitOutput(t, regexp.MustCompile(`synced by \w+`), 2*time.Minute)
	last, err := c.Set("/app", []byte("y"), -1)
	must(t, err)
	f.waitOutput(t, regexp.MustCompile(fmt.Sprintf(`zxid 0x%x `, last.Mzxid)), time.Minute)
	// Watches set on ZooKeeper before the cutover: go-zk re-sets them on
	// zkd when it reconnects (setWatches), and they fire there.
	_, _, dataW, err := c.GetW("/app")
	must(t, err)
	_, _, kidsW, err := c.ChildrenW("/app")
	must(t, err)
	stopZooKeeper(t, zs)
	f.cutover(t)
	// The other members start empty with zkd.bootstrap=false: they wait
	// for the follower's member to win their votes and send them its state
	// by raft (a snapshot install), and start no election of their own.
	for _, m := range members[1:] {
		f, err := os.OpenFile(m.CfgPath, os.O_APPEND|os.O_WRONLY, 0)
		must(t, err)
		_, err = f.WriteString("zkd.bootstrap=false\n")
		must(t, err)
		must(t, f.Close())
	}
	zkproc.RestartAll(t, members)

	waitSessionWithin(c, 2*sessionTimeout)
	if c.State() != zk.StateHasSession || c.SessionID() != id {
		t.Fatalf("session 0x%x (state %v) after the cutover, had 0x%x", c.SessionID(), c.State(), id)
	}
	awaitWatchesBack(t, members, id, "/app")
	next, err := c.Create("/app/lock-", nil, zk.FlagEphemeralSequential, open)
	must(t, err)
	if n1, n2 := eph[len(eph)-10:], next[len(next)-10:]; n2 <= n1 {
		t.Errorf("lock node %s after %s", next, eph)
	}
	awaitEvent(t, kidsW, zk.EventNodeChildrenChanged, "/app")
	for _, m := range members {
		mc := connect(t, m.Addr)
		_, err := mc.Sync("/app")
		must(t, err)
		data, st, err := mc.Get("/app")
		must(t, err)
		kids, _, err := mc.Children("/app")
		must(t, err)
		_, est, err := mc.Get(eph)
		if string(data) != "y" || st.Mzxid != last.Mzxid || len(kids) != 2 || err != nil || est.EphemeralOwner != id {
			t.Errorf("member %s: /app %q mzxid 0x%x children %v, %s owner 0x%x (%v)", m.Addr, data, st.Mzxid, kids, eph, est.EphemeralOwner, err)
		}
	}
	_, err = connect(t, members[1].Addr).Set("/app", []byte("z"), -1)
	must(t, err)
	awaitEvent(t, dataW, zk.EventNodeDataChanged, "/app")
}

// awaitEvent waits for a watch set before the cutover to fire on zkd.
func awaitEvent(t *testing.T, ch <-chan zk.Event, typ zk.EventType, path string) {
	t.Helper()
	select {
	case ev := <-ch:
		if ev.Type != typ || ev.Path != path {
			t.Errorf("watch set on ZooKeeper fired on zkd as %v %s, want %v %s", ev.Type, ev.Path, typ, path)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("watch on %s set on ZooKeeper before the cutover did not fire on zkd (%v) within 30s", path, typ)
	}
}

// awaitWatchesBack waits until a member lists path among session id's
// watches (wchc): go-zk has re-set them with setWatches. A test must not
// send on a go-zk connection that re-sets watches before that: go-zk
// v1.0.4 reads its last zxid for setWatches while its receive loop may
// write it for the reply to a request sent first, a data race in the
// client that the race detector reports.
func awaitWatchesBack(t *testing.T, members []*zkproc.Server, id int64, path string) {
	t.Helper()
	session := fmt.Sprintf("0x%x", uint64(id))
	listed := func(wchc string) bool {
		in := false
		for _, line := range strings.Split(wchc, "\n") {
			if p, ok := strings.CutPrefix(line, "\t"); ok {
				if in && p == path {
					return true
				}
				continue
			}
			in = line == session
		}
		return false
	}
	deadline := time.Now().Add(time.Minute)
	for {
		for _, m := range members {
			if out, err := m.FourLetter("wchc"); err == nil && listed(out) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no member lists session 0x%x's watch on %s a minute after it reconnected", id, path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitSessionWithin(c *zk.Conn, d time.Duration) {
	deadline := time.Now().Add(d)
	for c.State() != zk.StateHasSession && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

func waitAcks(t *testing.T, l *load, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for l.count() < n {
		if ctx.Err() != nil {
			t.Fatalf("the load has %d acknowledged writes after 2 minutes, want %d", l.count(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitChildren(t *testing.T, c *zk.Conn, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		kids, _, err := c.Children(path)
		if err == nil && len(kids) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d children, want %d (%v)", path, len(kids), n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ownedChild returns the name of path's child owned by session.
func ownedChild(t *testing.T, c *zk.Conn, path string, session int64) string {
	t.Helper()
	kids, _, err := c.Children(path)
	must(t, err)
	for _, k := range kids {
		_, st, err := c.Get(path + "/" + k)
		if err == nil && st.EphemeralOwner == session {
			return k
		}
	}
	t.Fatalf("no child of %s is owned by session 0x%x (%v)", path, session, kids)
	return ""
}
