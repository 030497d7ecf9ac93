package soak

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
)

// The znodes the workloads use. Each epoch (a few seconds of the run) has
// its own directory holding its registers and acknowledged creates, so a
// register's history stays short for porcupine and no listing grows
// large.
const (
	rootPath    = "/soak"
	locksPath   = "/locks"
	counterPath = "/counter"
	// registers is the number of registers in each epoch.
	registers = 4
)

var acl = zk.WorldACL(zk.PermAll)

func epochDir(e int64) string             { return fmt.Sprintf("%s/e%06d", rootPath, e) }
func regPath(e int64, k int) string       { return fmt.Sprintf("%s/r%d", epochDir(e), k) }
func ackedPath(e int64, id, k int) string { return fmt.Sprintf("%s/a-c%d-%07d", epochDir(e), id, k) }

// workload is what the clients of one nemesis run share: the clock of
// every recorded operation, the current epoch, and the histories the
// checks read at the end.
type workload struct {
	start   time.Time
	addrs   []string
	timeout time.Duration // session timeout the clients ask for
	pace    time.Duration // pause between one client's operations
	epoch   atomic.Int64  // the newest epoch whose znodes all exist
	// progress counts operations that succeeded: the nemesis waits for it
	// to move to know the ensemble serves.
	progress atomic.Int64

	mu struct {
		sync.Mutex
		reg      []porcupine.Operation
		holds    []hold
		fenced   []fencedWrite
		problems []problem // what lock holders saw that must not happen
		acked    []string
		expired  map[int64]bool // sessions the clients saw expire
	}
	expiries atomic.Int64
	conns    []*zk.Conn
}

// now is the time since the run started, porcupine's clock.
func (w *workload) now() int64 { return int64(time.Since(w.start)) }

// dial opens a session on w.addrs, the first member tried being member
// first, records the sessions it sees expire, and waits until it has a
// session.
func (w *workload) dial(t *testing.T, first int) *zk.Conn {
	t.Helper()
	order := append(append([]string{}, w.addrs[first%len(w.addrs):]...), w.addrs[:first%len(w.addrs)]...)
	c, events, err := zk.Connect(order, w.timeout, zk.WithLogger(quiet{}), zk.WithLogInfo(false),
		zk.WithDialer(handshakeDialer(w.timeout/time.Duration(len(order)))))
	if err != nil {
		t.Fatal(err)
	}
	w.conns = append(w.conns, c)
	ready := make(chan struct{})
	go func() {
		var session int64
		for ev := range events {
			switch ev.State {
			case zk.StateHasSession:
				if session == 0 {
					close(ready)
				}
				session = c.SessionID()
			case zk.StateExpired:
				w.expiries.Add(1)
				w.mu.Lock()
				w.mu.expired[session] = true
				w.mu.Unlock()
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("soak: no session on %v within 30s", order)
	}
	return c
}

// handshakeDialer dials as go-zk does, but bounds the wait for a
// member's answer to the connect request by limit, as ZooKeeper's Java
// client (its connect timeout: the session timeout over the number of
// servers) and Kazoo do. go-zk v1.0.4 waits ten times its receive
// timeout, 6.7 times the session timeout: a client that picks a paused
// member (the kernel accepts its connection; nothing answers) sits out
// its session there however healthy the rest of the ensemble is, which
// the pause nemesis would count against the server.
func handshakeDialer(limit time.Duration) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &handshakeConn{Conn: c, limit: limit}, nil
	}
}

// handshakeConn caps the first read deadline go-zk sets on it, the one
// for the connect response, at limit from then.
type handshakeConn struct {
	net.Conn
	limit time.Duration
	set   atomic.Bool
}

// SetReadDeadline implements net.Conn.
func (c *handshakeConn) SetReadDeadline(t time.Time) error {
	if !t.IsZero() && c.set.CompareAndSwap(false, true) {
		if bound := time.Now().Add(c.limit); t.After(bound) {
			t = bound
		}
	}
	return c.Conn.SetReadDeadline(t)
}

// quiet drops go-zk's log lines: the clients reconnect through every
// fault, and the report says what matters.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// newWorkload creates the workloads' znodes and epoch 0.
func newWorkload(t *testing.T, addrs []string, timeout, pace time.Duration) *workload {
	t.Helper()
	w := &workload{start: time.Now(), addrs: addrs, timeout: timeout, pace: pace}
	w.mu.expired = map[int64]bool{}
	c := w.dial(t, 0)
	for _, p := range []string{rootPath, locksPath} {
		if _, err := c.Create(p, nil, 0, acl); err != nil {
			t.Fatalf("soak: create %s: %v", p, err)
		}
	}
	if _, err := c.Create(counterPath, []byte("0 0"), 0, acl); err != nil {
		t.Fatalf("soak: create %s: %v", counterPath, err)
	}
	if err := createEpoch(c, 0); err != nil {
		t.Fatal(err)
	}
	return w
}

// close ends every client session.
func (w *workload) close() {
	for _, c := range w.conns {
		c.Close()
	}
}

// createEpoch creates epoch e's directory and registers; a create that
// finds its node there (an earlier try that lost its reply did apply)
// counts as done.
func createEpoch(c *zk.Conn, e int64) error {
	paths := []string{epochDir(e)}
	for k := range registers {
		paths = append(paths, regPath(e, k))
	}
	for _, p := range paths {
		if _, err := c.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("soak: create %s: %w", p, err)
		}
	}
	return nil
}

// epochs creates the next epoch every every, until ctx ends; the clients
// move to an epoch once all its znodes exist.
func (w *workload) epochs(ctx context.Context, c *zk.Conn, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		next := w.epoch.Load() + 1
		for createEpoch(c, next) != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		w.epoch.Store(next)
	}
}

// regInput is one register operation: a write of value to key, or a read
// of key (sync, then getData).
type regInput struct {
	key   string
	write bool
	value string
}

// registerModel is a set of independent registers, checked one key at a
// time: a read returns the last write to its key, or "" before any.
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(regInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(regInput)
		if in.write {
			return true, in.value
		}
		return output.(string) == state.(string), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(regInput)
		if in.write {
			return fmt.Sprintf("%s := %s", in.key, in.value)
		}
		return fmt.Sprintf("%s → %q", in.key, output)
	},
}

// registerClient writes and reads the current epoch's registers until ctx
// ends. A write whose outcome is unknown (any error: the connection broke
// or the session expired with the request in flight) is recorded as
// returning never, so porcupine may place it anywhere after its call; a
// failed read tells nothing and is not recorded.
func (w *workload) registerClient(ctx context.Context, c *zk.Conn, id int) {
	rng := rand.New(rand.NewPCG(uint64(id), uint64(w.start.UnixNano())))
	for n := 0; ctx.Err() == nil; n++ {
		e := w.epoch.Load()
		key := regPath(e, rng.IntN(registers))
		op := porcupine.Operation{ClientId: id, Call: w.now()}
		if rng.IntN(2) == 0 {
			v := fmt.Sprintf("c%d-%d", id, n)
			op.Input = regInput{key: key, write: true, value: v}
			_, err := c.Set(key, []byte(v), -1)
			op.Return = w.now()
			if err != nil {
				op.Return = math.MaxInt64
			} else {
				w.progress.Add(1)
			}
		} else {
			op.Input = regInput{key: key}
			_, err := c.Sync(key)
			var data []byte
			if err == nil {
				data, _, err = c.Get(key)
			}
			op.Return = w.now()
			if err != nil {
				w.pause(ctx)
				continue
			}
			op.Output = string(data)
			w.progress.Add(1)
		}
		w.mu.Lock()
		w.mu.reg = append(w.mu.reg, op)
		w.mu.Unlock()
		w.pause(ctx)
	}
}

// pause waits w.pace between two operations of a client, which keeps the
// load steady and the histories checkable; it returns early once ctx ends.
func (w *workload) pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(w.pace):
	}
}

// hold is one time a lock client held the lock: from when it learnt its
// node was the lowest (acquired) to when it began to release it
// (released), on the clock of now.
type hold struct {
	client   int
	session  int64
	token    int64 // the lock node's sequence number
	acquired int64
	released int64
}

// problem is something a lock holder saw that a correct lock never
// shows it while its session lives.
type problem struct {
	session int64
	text    string
}

// fencedWrite is an acknowledged bump of the counter by a lock holder:
// the counter's new version, the value written and the writer's token.
type fencedWrite struct {
	version int32
	value   int64
	token   int64
	client  int
}

// lockClient, until ctx ends: creates an acknowledged znode, takes the
// lock (an ephemeral sequential child of /locks; the lowest holds), reads
// the counter and bumps it with a multi that also checks the holder's
// lock node still exists, then deletes its lock node.
func (w *workload) lockClient(ctx context.Context, c *zk.Conn, id int) {
	prefix := fmt.Sprintf("c%d-", id)
	for attempt := 0; ctx.Err() == nil; attempt++ {
		w.pause(ctx)
		// An acknowledged create that must survive every fault.
		p := ackedPath(w.epoch.Load(), id, attempt)
		if _, err := c.Create(p, nil, 0, acl); err == nil {
			w.mu.Lock()
			w.mu.acked = append(w.mu.acked, p)
			w.mu.Unlock()
			w.progress.Add(1)
		}
		name := fmt.Sprintf("%sa%d-", prefix, attempt)
		session := c.SessionID()
		created, err := c.Create(locksPath+"/"+name, nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			// It may have been created: the next listing deletes it.
			continue
		}
		if c.SessionID() != session {
			// The session changed around the create: which one owns the
			// node is unclear, so this hold is not counted.
			w.release(c, created)
			continue
		}
		mine := created[len(locksPath)+1:]
		token := seqOf(mine)
		if !w.acquire(ctx, c, prefix, mine) {
			w.release(c, created)
			continue
		}
		h := hold{client: id, session: session, token: token, acquired: w.now()}
		w.bump(c, h, created)
		h.released = w.now()
		w.mu.Lock()
		w.mu.holds = append(w.mu.holds, h)
		w.mu.Unlock()
		w.release(c, created)
	}
}

// seqOf is the sequence number a sequential znode's name ends with.
func seqOf(name string) int64 {
	if len(name) < 10 {
		return -1
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// acquire waits until mine is the lowest child of /locks, deleting this
// client's own nodes left by creates whose reply was lost. It reports
// false when a request failed or ctx ended.
func (w *workload) acquire(ctx context.Context, c *zk.Conn, prefix, mine string) bool {
	for ctx.Err() == nil {
		children, _, err := c.Children(locksPath)
		if err != nil {
			return false
		}
		slices.SortFunc(children, func(a, b string) int { return int(seqOf(a) - seqOf(b)) })
		var pred string
		for _, ch := range children {
			if ch == mine {
				break
			}
			if strings.HasPrefix(ch, prefix) {
				_ = c.Delete(locksPath+"/"+ch, -1) // ours, from a lost reply
				continue
			}
			pred = ch
		}
		if !slices.Contains(children, mine) {
			return false // our node is gone: the session expired
		}
		if pred == "" {
			return true
		}
		ok, _, ch, err := c.ExistsW(locksPath + "/" + pred)
		if err != nil {
			return false
		}
		if ok {
			// Woken by the predecessor's delete, or re-list after a
			// while should a watch be lost with a connection.
			select {
			case <-ch:
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	return false
}

// bump increments the counter as the holder h: a multi checking
// that the lock node still exists and setting the counter at the version
// read. Under a correct lock neither can fail but by a lost connection.
func (w *workload) bump(c *zk.Conn, h hold, lockNode string) {
	data, st, err := c.Get(counterPath)
	if err != nil {
		return
	}
	var value, prev int64
	fmt.Sscan(string(data), &value, &prev)
	res, err := c.Multi(
		&zk.CheckVersionRequest{Path: lockNode, Version: -1},
		&zk.SetDataRequest{Path: counterPath, Data: fmt.Appendf(nil, "%d %d", value+1, h.token), Version: st.Version},
	)
	switch {
	case err == nil:
		w.progress.Add(1)
		w.mu.Lock()
		w.mu.fenced = append(w.mu.fenced, fencedWrite{version: res[1].Stat.Version, value: value + 1, token: h.token, client: h.client})
		w.mu.Unlock()
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
		what := "its lock node " + lockNode + " was gone"
		if errors.Is(err, zk.ErrBadVersion) {
			what = fmt.Sprintf("the counter changed from version %d", st.Version)
		}
		w.mu.Lock()
		w.mu.problems = append(w.mu.problems, problem{session: h.session,
			text: fmt.Sprintf("client %d (session %#x) holding token %d: %s", h.client, h.session, h.token, what)})
		w.mu.Unlock()
	}
}

// release deletes the lock node, retrying through lost connections for up
// to two session timeouts (after which the session, and the node with it,
// is gone anyway).
func (w *workload) release(c *zk.Conn, node string) {
	for deadline := time.Now().Add(2 * w.timeout); time.Now().Before(deadline); {
		err := c.Delete(node, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
