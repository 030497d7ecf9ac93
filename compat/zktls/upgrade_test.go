package zktls

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/zab/tlsconf/tlstest"
)

// setCfg rewrites the zoo.cfg at path: each key of kv replaces its line,
// or is appended; a key with value "" is removed.
func setCfg(t *testing.T, path string, kv map[string]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	done := map[string]bool{}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		k, _, _ := strings.Cut(line, "=")
		if v, ok := kv[k]; ok {
			done[k] = true
			if v == "" {
				continue
			}
			line = k + "=" + v
		}
		out = append(out, line)
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !done[k] && kv[k] != "" {
			out = append(out, k+"="+kv[k])
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// memberPorts returns the quorum and election addresses of member id, from
// the server.N line of its zoo.cfg.
func memberPorts(t *testing.T, s *zkproc.Server, id int) (quorumAddr, electionAddr string) {
	t.Helper()
	b, err := os.ReadFile(s.CfgPath)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^server\.` + strconv.Itoa(id) + `=([^:]+):(\d+):(\d+)`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("no server.%d line in %s", id, s.CfgPath)
	}
	return net.JoinHostPort(m[1], m[2]), net.JoinHostPort(m[1], m[3])
}

// writer creates /w/<n> znodes through one session on every member, for
// as long as it runs, and keeps what was acknowledged and what failed.
type writer struct {
	c    *zk.Conn
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	acked   []string
	errs    map[string]int
	lastOK  time.Time
	maxGap  time.Duration
	expired bool
}

func startWriter(t *testing.T, addrs []string) *writer {
	c, events, err := zk.Connect(addrs, 20*time.Second, zk.WithLogger(testLogger{t}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	w := &writer{c: c, stop: make(chan struct{}), done: make(chan struct{}), errs: map[string]int{}}
	deadline := time.After(60 * time.Second)
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
		select {
		case <-deadline:
			t.Fatal("writer: no session within 60s")
		default:
		}
	}
	go func() {
		for ev := range events {
			if ev.State == zk.StateExpired {
				w.mu.Lock()
				w.expired = true
				w.mu.Unlock()
			}
		}
	}()
	if _, err := c.Create("/w", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	w.lastOK = time.Now()
	go w.run()
	t.Cleanup(func() { w.halt(); c.Close() })
	return w
}

func (w *writer) run() {
	defer close(w.done)
	for n := 0; ; n++ {
		select {
		case <-w.stop:
			return
		default:
		}
		path := fmt.Sprintf("/w/%08d", n)
		_, err := w.c.Create(path, []byte(path), 0, zk.WorldACL(zk.PermAll))
		now := time.Now()
		w.mu.Lock()
		if err == nil {
			w.acked = append(w.acked, path)
			w.maxGap = max(w.maxGap, now.Sub(w.lastOK))
			w.lastOK = now
		} else {
			w.errs[err.Error()]++
		}
		w.mu.Unlock()
		if err != nil {
			time.Sleep(100 * time.Millisecond)
		} else {
			time.Sleep(10 * time.Millisecond) // a steady trickle, not a benchmark
		}
	}
}

func (w *writer) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func (w *writer) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// awaitWrites waits until n more writes than now are acknowledged.
func (w *writer) awaitWrites(t *testing.T, n int, what string) {
	t.Helper()
	target := w.ackedCount() + n
	deadline := time.Now().Add(90 * time.Second)
	for w.ackedCount() < target {
		if time.Now().After(deadline) {
			w.mu.Lock()
			defer w.mu.Unlock()
			t.Fatalf("no write acknowledged %s within 90s (errors so far: %v)", what, w.errs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// upgradeStep is one rolling restart: the zoo.cfg keys set on each member.
type upgradeStep struct {
	name string
	set  map[string]string
}

// rollingRestart applies step to each member in turn: stop it, check the
// other two still acknowledge writes (they form the quorum with the
// previous and the next setting side by side), change its zoo.cfg, restart
// it and wait until it serves. It returns how long the step took.
func rollingRestart(t *testing.T, members []*zkproc.Server, w *writer, step upgradeStep) time.Duration {
	t.Helper()
	start := time.Now()
	for i, m := range members {
		m.Stop()
		w.awaitWrites(t, 5, fmt.Sprintf("during %s with member %d down", step.name, i+1))
		setCfg(t, m.CfgPath, step.set)
		m.Restart(t)
		w.awaitWrites(t, 5, fmt.Sprintf("during %s after member %d came back", step.name, i+1))
	}
	took := time.Since(start)
	t.Logf("%s: %v for 3 members (noisy: shared machine)", step.name, took.Round(time.Millisecond))
	return took
}

// awaitLog waits until one of servers' logs, after the offsets in from,
// contains sub.
func awaitLog(t *testing.T, servers []*zkproc.Server, from []int, sub string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for i, s := range servers {
			if strings.Contains(s.Log()[from[i]:], sub) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no member logged %q within 60s", sub)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// refusesPeers checks member id's quorum and election ports: a member
// with a trusted certificate gets through (the connection stays open), a
// plaintext one and one with an untrusted certificate are closed, each
// with the member's WARN line.
func refusesPeers(t *testing.T, p *pki, s *zkproc.Server, id int) {
	t.Helper()
	q, e := memberPorts(t, s, id)
	for _, addr := range []string{q, e} {
		before := len(s.Log())
		// Plaintext: a forwarded-message frame header; the member must
		// close without reading on.
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte{0, 0, 0, 9, 6, 0, 0, 0, 0, 0, 0, 0, 9})
		if !closedByPeer(c) {
			t.Fatalf("member %d took a plaintext peer on %s", id, addr)
		}
		awaitLog(t, []*zkproc.Server{s}, []int{before}, "plaintext member refused")

		before = len(s.Log())
		conf := &tls.Config{RootCAs: p.ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{p.stranger.TLS()}}
		if tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, conf); err == nil {
			if !closedByPeer(tc) {
				t.Fatalf("member %d took a peer with an untrusted certificate on %s", id, addr)
			}
		}
		awaitLog(t, []*zkproc.Server{s}, []int{before}, "TLS handshake failed")

		// The control: a trusted member's connection stays open.
		conf.Certificates = []tls.Certificate{p.server.TLS()}
		tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, conf)
		if err != nil {
			t.Fatalf("trusted peer on %s of member %d: %v", addr, id, err)
		}
		if closedByPeer(tc) {
			t.Fatalf("member %d closed a trusted peer on %s", id, addr)
		}
	}
}

// closedByPeer reports whether c is closed by the other end (EOF, reset or
// a TLS alert) rather than left open for two seconds.
func closedByPeer(c net.Conn) bool {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	var b [64]byte
	_, err := c.Read(b[:])
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestIntegration_QuorumRollingUpgrade: ZooKeeper's three rolling
// restarts move a 3-member ensemble from plaintext to mutual TLS between
// members while a go-zk session writes throughout: (1) portUnification=true
// with the ssl.quorum.* stores, (2) sslQuorum=true, (3)
// portUnification=false. A member restarted with sslQuorum=true among
// plaintext-only members (step 1 skipped) stays out and logs why. With any
// member down, the other two still take writes; the session (4s: 20
// ticks) never expires; every acknowledged write is on every member at the
// end. zkd and ZooKeeper 3.8 alike, with the same zoo.cfg edits; for zkd
// also: both sides of a skipped step log it, each member then refuses a
// plaintext peer and an untrusted certificate on both member ports, and
// the same three steps in reverse take it back to plaintext.
func TestIntegration_QuorumRollingUpgrade(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) { testRollingUpgrade(t, kind) })
	}
}

func testRollingUpgrade(t *testing.T, kind zkproc.Kind) {
	p := newPKI(t)
	stores := map[string]string{
		"ssl.quorum.keyStore.location":   p.server.WriteJKS(t, p.dir, "quorum"),
		"ssl.quorum.keyStore.password":   tlstest.Password,
		"ssl.quorum.trustStore.location": p.ca.WritePEM(t, p.dir, "quorum-ca"),
	}
	noStores := map[string]string{}
	for k := range stores {
		noStores[k] = ""
	}
	with := func(a, b map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range a {
			out[k] = v
		}
		for k, v := range b {
			out[k] = v
		}
		return out
	}
	opts := zkproc.Options{TickTime: 200}
	var members []*zkproc.Server
	if kind == zkproc.KindZooKeeper {
		members = zkproc.StartZooKeeperEnsemble(t, 3, opts)
	} else {
		members = zkproc.StartZkdEnsemble(t, 3, opts)
	}
	w := startWriter(t, zkproc.Addrs(members))
	w.awaitWrites(t, 5, "before the upgrade")
	sessionID := w.c.SessionID()

	// A failed step: member 3 asks for sslQuorum while the others still
	// take plaintext only. It must stay out, and the logs must say why.
	froms := make([]int, 3)
	for i, m := range members {
		froms[i] = len(m.Log())
	}
	members[2].Stop()
	setCfg(t, members[2].CfgPath, with(stores, map[string]string{"sslQuorum": "true"}))
	if err := members[2].Start(); err != nil {
		t.Fatal(err)
	}
	if kind == zkproc.KindZkd {
		awaitLog(t, members[:2], froms[:2], "member dialed with TLS (sslQuorum=true there), but this member has sslQuorum=false and portUnification=false")
		awaitLog(t, members[2:], froms[2:], "plaintext member refused")
	} else {
		// ZooKeeper says it only on the TLS side, and the plaintext side
		// reads the TLS record as a server id ("Connection broken for id
		// 1586114796141477888").
		awaitLog(t, members[2:], froms[2:], "SSLHandshakeException")
	}
	if err := zkproc.Handshake(members[2].Addr, 2*time.Second); err == nil {
		t.Fatal("a member with sslQuorum=true serves among plaintext-only members")
	}
	w.awaitWrites(t, 5, "with member 3 kept out")
	members[2].Stop()
	setCfg(t, members[2].CfgPath, with(noStores, map[string]string{"sslQuorum": ""}))
	members[2].Restart(t)

	upgrade := []upgradeStep{
		{"step 1 (portUnification=true, stores)", with(stores, map[string]string{"portUnification": "true"})},
		{"step 2 (sslQuorum=true)", map[string]string{"sslQuorum": "true"}},
		{"step 3 (portUnification=false)", map[string]string{"portUnification": "false"}},
	}
	var took []string
	startAcked := w.ackedCount()
	for _, step := range upgrade {
		took = append(took, step.name+": "+rollingRestart(t, members, w, step).Round(time.Second).String())
	}
	upgradeAcked := w.ackedCount() - startAcked
	if kind == zkproc.KindZkd {
		for i, m := range members {
			log := m.Log()
			if since := log[strings.LastIndex(log, "=== zkproc: starting"):]; !strings.Contains(since, "member ports: mutual TLS only") {
				t.Fatalf("member %d after the upgrade does not say it speaks mutual TLS only:\n%s", i+1, since)
			}
		}
		for i, m := range members {
			refusesPeers(t, p, m, i+1)
		}

		downgrade := []upgradeStep{
			{"down 1 (portUnification=true)", map[string]string{"portUnification": "true"}},
			{"down 2 (sslQuorum=false)", map[string]string{"sslQuorum": "false"}},
			{"down 3 (portUnification=false, no stores)", with(noStores, map[string]string{"portUnification": "", "sslQuorum": ""})},
		}
		for _, step := range downgrade {
			took = append(took, step.name+": "+rollingRestart(t, members, w, step).Round(time.Second).String())
		}
		// Back to plaintext: a TLS member is refused with the hint to
		// upgrade.
		q, _ := memberPorts(t, members[0], 1)
		before := len(members[0].Log())
		conf := &tls.Config{RootCAs: p.ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{p.server.TLS()}}
		if tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", q, conf); err == nil {
			tc.Close()
			t.Fatal("a plaintext-only member completed a TLS handshake")
		}
		awaitLog(t, members[:1], []int{before}, "member dialed with TLS")
	}

	w.halt()
	w.mu.Lock()
	acked, errs, maxGap, expired := w.acked, w.errs, w.maxGap, w.expired
	w.mu.Unlock()
	if expired || w.c.SessionID() != sessionID {
		t.Fatalf("the writer's session expired (%x → %x): the quorum was lost for longer than its timeout", sessionID, w.c.SessionID())
	}
	for i, m := range members {
		c, err := connect(t, m.Addr, nil)
		if err != nil {
			t.Fatalf("member %d: %v", i+1, err)
		}
		// Sync, then read; again for up to 30s while anything is missing,
		// so a member still catching up is not taken for one that lost
		// a write.
		var lost []string
		var children []string
		for deadline := time.Now().Add(30 * time.Second); ; {
			if _, err := c.Sync("/w"); err != nil {
				t.Fatalf("member %d: sync: %v", i+1, err)
			}
			if children, _, err = c.Children("/w"); err != nil {
				t.Fatalf("member %d: children of /w: %v", i+1, err)
			}
			have := map[string]bool{}
			for _, ch := range children {
				have["/w/"+ch] = true
			}
			lost = lost[:0]
			for _, a := range acked {
				if !have[a] {
					lost = append(lost, a)
				}
			}
			if len(lost) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Second)
		}
		if len(lost) > 0 {
			t.Errorf("member %d lost %d of %d acknowledged writes (it has %d children of /w): %v", i+1, len(lost), len(acked), len(children), lost)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("figures for %s (noisy, shared machine): %s; writes acknowledged during the 3 upgrade steps: %d, in all: %d; longest gap between acknowledged writes: %v; client errors: %v",
		kind, strings.Join(took, ", "), upgradeAcked, len(acked), maxGap.Round(time.Millisecond), errs)
}
