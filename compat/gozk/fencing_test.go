package gozk

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/zab/fencing"
	"github.com/zkd/zkd/zab/fencing/verify"
)

// holderEnv makes the test binary run fencingHolder instead of the tests
// (TestMain): the lock holder of TestIntegration_FencingPausedHolder is a
// process of its own, so that it can be paused with SIGSTOP.
const holderEnv = "ZKD_FENCE_HOLDER"

func TestMain(m *testing.M) {
	if os.Getenv(holderEnv) != "" {
		if err := fencingHolder(os.Getenv("ZKD_FENCE_ZK"), os.Getenv("ZKD_FENCE_RESOURCE"), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "fencing holder:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const fenceLock = "/locks/db"

// fencingHolder takes fenceLock with go-zk's recipe (session timeout 1 s),
// reads its token, writes once to the resource and prints "HELD <czxid>
// <status>"; then, when a line arrives on in, writes again with the same
// token (as a holder that woke up from a pause and does not know it lost
// the lock) and prints "LATE <status>".
func fencingHolder(zkAddr, resource string, in io.Reader, out io.Writer) error {
	c, _, err := zk.Connect([]string{zkAddr}, time.Second, zk.WithLogger(discard{}))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := zk.NewLock(c, fenceLock, worldACL).Lock(); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	node, err := ownLockNode(c, fenceLock)
	if err != nil {
		return err
	}
	tok, _, err := c.Get(fencing.TokenPathPrefix + node)
	if err != nil {
		return fmt.Errorf("token of %s: %w", node, err)
	}
	d, err := fencing.Decode(tok)
	if err != nil {
		return err
	}
	status, err := fencedWrite(resource, tok, "holder A, while holding")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "HELD %d %d\n", d.Czxid, status)
	if _, err := bufio.NewReader(in).ReadString('\n'); err != nil {
		return err
	}
	status, err = fencedWrite(resource, tok, "holder A, after its pause")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "LATE %d\n", status)
	return nil
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// ownLockNode returns the path of the child of lock that c's session owns.
func ownLockNode(c *zk.Conn, lock string) (string, error) {
	kids, _, err := c.Children(lock)
	if err != nil {
		return "", err
	}
	for _, k := range kids {
		_, st, err := c.Get(path.Join(lock, k))
		if err == nil && st.EphemeralOwner == c.SessionID() {
			return path.Join(lock, k), nil
		}
	}
	return "", fmt.Errorf("no child of %s owned by session 0x%x", lock, c.SessionID())
}

// fencedWrite posts data to the fenced resource with token and returns the
// HTTP status.
func fencedWrite(resource string, token []byte, data string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, resource, strings.NewReader(data))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Fencing-Token", string(token))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// fencedStore is a storage service fenced by zkd's tokens: it accepts a
// write only if verify.Checker accepts its token for the resource "db",
// checked and applied under one lock.
type fencedStore struct {
	v  *verify.Verifier
	mu sync.Mutex
	// log lists writes in order: "ok <data>" or "refused <data>: <error>".
	log []string
}

func (s *fencedStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.v.Check("db", []byte(r.Header.Get("Fencing-Token"))); err != nil {
		s.log = append(s.log, fmt.Sprintf("refused %s: %v", data, err))
		code := http.StatusForbidden
		if errors.Is(err, verify.ErrStale) {
			code = http.StatusConflict
		}
		http.Error(w, err.Error(), code)
		return
	}
	s.log = append(s.log, "ok "+string(data))
}

func (s *fencedStore) entries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string{}, s.log...)
}

// publicKey waits until addr publishes the fencing key (the first leader
// proposes it as it starts leading) and returns it.
func publicKey(t *testing.T, c *zk.Conn) []byte {
	t.Helper()
	var data []byte
	waitFor(t, 20*time.Second, "the fencing key", func() bool {
		var err error
		data, _, err = c.Get(fencing.TokenPathPrefix)
		return err == nil
	})
	pub, err := fencing.ParsePublicKey(data)
	must(t, err)
	return pub
}

// TestIntegration_FencingPausedHolder is the fencing proof: holder A (a
// process of its own) takes the lock and writes with its token, then is
// paused with SIGSTOP until its session expires; B takes the lock and
// writes with its own token; A resumes and writes with its old token,
// which the fenced store refuses; B's later writes are accepted.
func TestIntegration_FencingPausedHolder(t *testing.T) {
	s := zkproc.StartZkd(t, zkproc.Options{TickTime: 100})
	b, _ := connectTimeout(t, s.Addr, 2*time.Second)
	v, err := verify.New(publicKey(t, b))
	must(t, err)
	store := &fencedStore{v: v}
	res := httptest.NewServer(store)
	defer res.Close()
	_, err = b.Create("/locks", nil, 0, worldACL)
	must(t, err)

	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), holderEnv+"=1", "ZKD_FENCE_ZK="+s.Addr, "ZKD_FENCE_RESOURCE="+res.URL)
	holder.Stderr = os.Stderr
	stdin, err := holder.StdinPipe()
	must(t, err)
	stdout, err := holder.StdoutPipe()
	must(t, err)
	must(t, holder.Start())
	t.Cleanup(func() {
		holder.Process.Kill()
		holder.Wait()
	})
	lines := bufio.NewReader(stdout)
	var aCzxid int64
	var aStatus int
	line, err := lines.ReadString('\n')
	must(t, err)
	if _, err := fmt.Sscanf(line, "HELD %d %d", &aCzxid, &aStatus); err != nil || aStatus != http.StatusOK {
		t.Fatalf("holder A: %q (%v)", line, err)
	}

	must(t, holder.Process.Signal(syscall.SIGSTOP))
	lock := zk.NewLock(b, fenceLock, worldACL)
	got := make(chan error, 1)
	go func() { got <- lock.Lock() }()
	select {
	case err := <-got:
		must(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("B did not get the lock after A's session expired")
	}
	node, err := ownLockNode(b, fenceLock)
	must(t, err)
	tok, _, err := b.Get(fencing.TokenPathPrefix + node)
	must(t, err)
	bt, err := v.Verify(tok)
	must(t, err)
	if bt.Czxid <= aCzxid || bt.Session != b.SessionID() || bt.NodePath() != node {
		t.Fatalf("B's token %v; A's czxid 0x%x", bt, aCzxid)
	}
	if st, err := fencedWrite(res.URL, tok, "holder B, first"); err != nil || st != http.StatusOK {
		t.Fatalf("B's write: %d %v", st, err)
	}

	must(t, holder.Process.Signal(syscall.SIGCONT))
	_, err = io.WriteString(stdin, "write\n")
	must(t, err)
	line, err = lines.ReadString('\n')
	must(t, err)
	if strings.TrimSpace(line) != fmt.Sprintf("LATE %d", http.StatusConflict) {
		t.Fatalf("A's late write: %q, want refused as stale (409)", line)
	}
	if st, err := fencedWrite(res.URL, tok, "holder B, second"); err != nil || st != http.StatusOK {
		t.Fatalf("B's second write: %d %v", st, err)
	}
	must(t, lock.Unlock())

	want := []string{"ok holder A, while holding", "ok holder B, first", "refused holder A, after its pause", "ok holder B, second"}
	log := store.entries()
	if len(log) != len(want) {
		t.Fatalf("store log %q", log)
	}
	for i := range want {
		if !strings.HasPrefix(log[i], want[i]) {
			t.Fatalf("store log %q, want %q", log, want)
		}
	}
	if !strings.Contains(log[2], "stale token") {
		t.Fatalf("A's late write refused for another reason: %s", log[2])
	}
}

// TestIntegration_FencingEnsemble: every member of an ensemble publishes
// the same key and signs the same token alike; the key and the tokens
// survive the leader's kill -9 (a new leader does not draw a new key) and
// a restart of every member, and a token verifies with the key read from
// any member.
func TestIntegration_FencingEnsemble(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200})
	conns := make([]*zk.Conn, len(servers))
	var pub []byte
	for i, s := range servers {
		conns[i], _ = connect(t, s.Addr)
		p := publicKey(t, conns[i])
		if i > 0 && !bytes.Equal(p, pub) {
			t.Fatalf("member %d publishes another key", i+1)
		}
		pub = p
	}
	v, err := verify.New(pub)
	must(t, err)
	_, err = conns[0].Create("/locks", nil, 0, worldACL)
	must(t, err)
	node, err := conns[0].Create("/locks/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, worldACL)
	must(t, err)
	var first *fencing.Token
	for i, c := range conns {
		_, err := c.Sync("/locks")
		must(t, err)
		tok, _, err := c.Get(fencing.TokenPathPrefix + node)
		must(t, err)
		got, err := v.Verify(tok)
		if err != nil {
			t.Fatalf("token from member %d: %v", i+1, err)
		}
		if first != nil && (got.Czxid != first.Czxid || got.Session != first.Session) {
			t.Fatalf("member %d: token %v, member 1: %v", i+1, got, first)
		}
		first = got
	}

	var leader int = -1
	for i, s := range servers {
		if out, err := s.FourLetter("srvr"); err == nil && strings.Contains(out, "Mode: leader") {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no leader")
	}
	// kill -9 of the leader, then a rolling restart of every member (each
	// restarts from its snapshot while the others keep the quorum).
	servers[leader].Kill()
	servers[leader].Restart(t)
	for _, s := range servers {
		s.Restart(t)
	}
	for i, s := range servers {
		zkproc.WaitServing(t, s.Addr, 60*time.Second)
		c, _ := connect(t, s.Addr)
		if p := publicKey(t, c); !bytes.Equal(p, pub) {
			t.Fatalf("member %d: key changed across a leader change and restart", i+1)
		}
		// The lock node's session is gone; a new one gets a token that
		// verifies with the old key and orders after the first.
		if i == 0 {
			_, err := c.Sync("/locks")
			must(t, err)
			n2, err := c.Create("/locks/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, worldACL)
			must(t, err)
			tok, _, err := c.Get(fencing.TokenPathPrefix + n2)
			must(t, err)
			if _, err := v.Check("", tok); err != nil {
				t.Fatalf("token after restart: %v", err)
			}
			if h, _ := v.Highest("/locks"); h <= first.Czxid {
				t.Fatalf("czxid after restart 0x%x, before 0x%x", h, first.Czxid)
			}
		}
	}
}

// TestIntegration_FencingKeySurvivesRestart: a standalone zkd publishes its
// key at /zookeeper/fencing and the admin command fencing alike, keeps it
// across kill -9 (log replay) and a clean stop (snapshot), and a token
// signed before verifies with the key read after.
func TestIntegration_FencingKeySurvivesRestart(t *testing.T) {
	s := zkproc.StartZkd(t, zkproc.Options{AdminServer: true})
	c, _ := connect(t, s.Addr)
	pub := publicKey(t, c)
	// The admin server publishes the same key.
	resp, err := http.Get("http://" + s.AdminAddr + "/commands/fencing")
	must(t, err)
	var admin struct {
		KeyInstalled bool   `json:"key_installed"`
		PublicKey    string `json:"public_key"`
		Error        any    `json:"error"`
	}
	err = json.NewDecoder(resp.Body).Decode(&admin)
	resp.Body.Close()
	must(t, err)
	if !admin.KeyInstalled || admin.PublicKey != base64.StdEncoding.EncodeToString(pub) || admin.Error != nil {
		t.Fatalf("admin fencing: %+v, want key %x", admin, pub)
	}
	_, err = c.Create("/l", nil, 0, worldACL)
	must(t, err)
	node, err := c.Create("/l/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, worldACL)
	must(t, err)
	tok, _, err := c.Get(fencing.TokenPathPrefix + node)
	must(t, err)
	for _, kill := range []bool{true, false} {
		if kill {
			s.Kill()
		}
		s.Restart(t)
		c2, _ := connect(t, s.Addr)
		p := publicKey(t, c2)
		if !bytes.Equal(p, pub) {
			t.Fatalf("key changed across a restart (kill -9: %v)", kill)
		}
		v, err := verify.New(p)
		must(t, err)
		if _, err := v.Check("", tok); err != nil {
			t.Fatalf("token from before the restart: %v", err)
		}
	}
}
