package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

const (
	sessionTimeout = 30 * time.Second
	adminAuth      = "admin:secret"
)

var (
	open     = zk.WorldACL(zk.PermAll)
	extended = map[string]string{"zookeeper.extendedTypesEnabled": "true"}
	jvmFlags = []string{"-Dzookeeper.extendedTypesEnabled=true"}
)

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, sessionTimeout, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	waitSession(t, c)
	if err := c.AddAuth("digest", []byte(adminAuth)); err != nil {
		t.Fatalf("addAuth: %v", err)
	}
	return c
}

func waitSession(t *testing.T, c *zk.Conn) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for c.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			t.Fatalf("no session after 60s (state %v)", c.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// populate writes a tree with every node type, several ACL schemes, a quota,
// versions, sequence counters, a multi and a failed multi, and enough
// transactions for ZooKeeper (snapCount 20) to roll several snapshots and
// logs.
func populate(t *testing.T, c *zk.Conn) {
	t.Helper()
	admin := zk.DigestACL(zk.PermAll, "admin", "secret")
	create := func(p string, data []byte, flags int32, acl []zk.ACL) string {
		t.Helper()
		got, err := c.Create(p, data, flags, acl)
		if err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
		return got
	}
	create("/app", []byte("v0"), 0, open)
	// A quota on /app, made as zkCli's setquota makes one.
	create("/zookeeper/quota/app", nil, 0, open)
	create("/zookeeper/quota/app/zookeeper_limits", []byte("count=100,bytes=-1"), 0, open)
	create("/zookeeper/quota/app/zookeeper_stats", []byte("count=0,bytes=0"), 0, open)
	for i := 1; i <= 3; i++ {
		_, err := c.Set("/app", []byte("v"+strconv.Itoa(i)), -1)
		must(t, err)
	}
	create("/app/secret", []byte{0, 1, 2, 255}, 0, append(admin, zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}))
	_, err := c.SetACL("/app/secret", append(admin, zk.ACL{Perms: zk.PermRead | zk.PermWrite, Scheme: "world", ID: "anyone"}), 0)
	must(t, err)
	create("/app/ip", nil, 0, append(admin, zk.ACL{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}))
	create("/app/empty", []byte{}, 0, open)
	create("/seq", nil, 0, open)
	var seqs []string
	for i := 0; i < 6; i++ {
		seqs = append(seqs, create("/seq/n-", []byte(strconv.Itoa(i)), zk.FlagSequence, open))
	}
	must(t, c.Delete(seqs[1], -1))
	must(t, c.Delete(seqs[4], -1))
	if _, err := c.CreateContainer("/locks", nil, zk.FlagContainer, open); err != nil {
		t.Fatalf("container: %v", err)
	}
	if _, err := c.CreateTTL("/ttl", []byte("t"), zk.FlagTTL, open, time.Hour); err != nil {
		t.Fatalf("ttl: %v", err)
	}
	create("/bulk", nil, 0, open)
	for i := 0; i < 120; i++ {
		p := create(fmt.Sprintf("/bulk/k%03d", i), bytes.Repeat([]byte{byte(i)}, i), 0, open)
		if i%3 == 0 {
			_, err := c.Set(p, []byte("changed"), 0)
			must(t, err)
		}
		if i%7 == 0 {
			must(t, c.Delete(p, -1))
		}
	}
	_, err = c.Multi(
		&zk.CreateRequest{Path: "/multi", Data: []byte("m"), Acl: open},
		&zk.CreateRequest{Path: "/multi/a", Acl: open},
		&zk.SetDataRequest{Path: "/app", Data: []byte("from multi"), Version: -1},
	)
	must(t, err)
	_, err = c.Multi(
		&zk.CreateRequest{Path: "/multi/never", Acl: open},
		&zk.CheckVersionRequest{Path: "/app", Version: 99},
	)
	if !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("failed multi: %v", err)
	}
}

// dump reads every node: path → data, ACL and every Stat field.
func dump(t *testing.T, c *zk.Conn) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(p string)
	walk = func(p string) {
		data, st, err := c.Get(p)
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		acl, _, err := c.GetACL(p)
		if err != nil {
			t.Fatalf("getACL %s: %v", p, err)
		}
		out[p] = fmt.Sprintf("data=%q acl=%v stat=%+v", data, acl, *st)
		kids, _, err := c.Children(p)
		if err != nil {
			t.Fatalf("children %s: %v", p, err)
		}
		sort.Strings(kids)
		for _, k := range kids {
			if p == "/" {
				walk("/" + k)
			} else {
				walk(p + "/" + k)
			}
		}
	}
	walk("/")
	return out
}

func compare(t *testing.T, want, got map[string]string) {
	t.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s missing after the move", p)
		} else if g != w {
			t.Errorf("%s differs:\n before %s\n after  %s", p, w, g)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s appeared after the move: %s", p, got[p])
		}
	}
}

func zkd(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zkd %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("zkd %s:\n%s", args[0], out)
	return string(out)
}

// lockHolders holds one ephemeral-sequential lock node per client.
type lockHolders struct {
	conns []*zk.Conn
	nodes []string
	ids   []int64
}

func takeLocks(t *testing.T, addr string, n int) *lockHolders {
	t.Helper()
	h := &lockHolders{}
	for i := 0; i < n; i++ {
		c := connect(t, addr)
		p, err := c.Create("/locks/lock-", []byte(strconv.Itoa(i)), zk.FlagEphemeralSequential, open)
		must(t, err)
		h.conns, h.nodes, h.ids = append(h.conns, c), append(h.nodes, p), append(h.ids, c.SessionID())
	}
	return h
}

// checkAfterMove checks that the lock clients kept their sessions and
// nodes, and that sequence numbers and zxids continue.
func checkAfterMove(t *testing.T, h *lockHolders, c *zk.Conn, before map[string]string, lastZxid int64) {
	t.Helper()
	for i, hc := range h.conns {
		waitSession(t, hc)
		if hc.SessionID() != h.ids[i] {
			t.Errorf("lock client %d: session 0x%x became 0x%x", i, h.ids[i], hc.SessionID())
		}
		_, st, err := hc.Get(h.nodes[i])
		if err != nil {
			t.Fatalf("lock node %s: %v", h.nodes[i], err)
		}
		if st.EphemeralOwner != h.ids[i] {
			t.Errorf("lock node %s: owner 0x%x, want 0x%x", h.nodes[i], st.EphemeralOwner, h.ids[i])
		}
	}
	compare(t, before, dump(t, c))
	// The holder releases; the next lock node takes the next number, and
	// its czxid (the fencing token) is above everything before the move.
	must(t, h.conns[0].Delete(h.nodes[0], -1))
	p, err := c.Create("/locks/lock-", nil, zk.FlagEphemeralSequential, open)
	must(t, err)
	last := h.nodes[len(h.nodes)-1]
	n1, _ := strconv.Atoi(last[len(last)-10:])
	n2, _ := strconv.Atoi(p[len(p)-10:])
	if n2 != n1+1 {
		t.Errorf("new lock node %s after %s: sequence numbers do not continue", p, last)
	}
	_, st, err := c.Get(p)
	must(t, err)
	if st.Czxid <= lastZxid {
		t.Errorf("new lock node czxid 0x%x, not above the last zxid before the move 0x%x", st.Czxid, lastZxid)
	}
}

func maxZxid(t *testing.T, c *zk.Conn) int64 {
	t.Helper()
	// A write's zxid is the newest; read it back from a node's mzxid.
	st, err := c.Set("/app/empty", nil, -1)
	must(t, err)
	return st.Mzxid
}

// fill populates s, takes three locks, and stops s with the lock holders
// still connected (their clients retry the same address). It returns the
// holders, the last zxid and the dump of the tree.
func fill(t *testing.T, s *zkproc.Server) (*lockHolders, int64, map[string]string) {
	t.Helper()
	c := connect(t, s.Addr)
	populate(t, c)
	h := takeLocks(t, s.Addr, 3)
	lastZxid := maxZxid(t, c)
	before := dump(t, c)
	c.Close()
	s.Stop()
	return h, lastZxid, before
}

func writeZooCfg(t testing.TB, dir string, port int) string {
	t.Helper()
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\nzookeeper.extendedTypesEnabled=true\n",
		filepath.Join(dir, "data"), port)
	p := filepath.Join(dir, "zoo.cfg")
	must(t, os.MkdirAll(filepath.Join(dir, "data"), 0o755))
	must(t, os.WriteFile(p, []byte(cfg), 0o644))
	return p
}

// TestIntegration_ImportFromZooKeeper moves a ZooKeeper 3.8 database with
// live lock holders to zkd on the same port: one whose transactions span
// several snapshots and logs (snapCount 20), and one where every
// transaction is replayed from the log over ZooKeeper's startup snapshot.
func TestIntegration_ImportFromZooKeeper(t *testing.T) {
	for _, tc := range []struct {
		name      string
		snapCount int
		minSnaps  int
	}{
		{"many snapshots", 20, 3},
		{"all from the log", 1000000, 1},
	} {
		t.Run(tc.name, func(t *testing.T) { testImport(t, tc.snapCount, tc.minSnaps) })
	}
}

func testImport(t *testing.T, snapCount, minSnaps int) {
	zkproc.RequireZooKeeper(t)
	bin := zkproc.BuildZkd(t)
	port := zkproc.FreePort(t)
	zs := zkproc.StartZooKeeper(t, zkproc.Options{Port: port, JVMFlags: append(jvmFlags, "-Dzookeeper.snapCount="+strconv.Itoa(snapCount))})
	h, lastZxid, before := fill(t, zs)
	snaps, _ := filepath.Glob(filepath.Join(zs.DataDir, "version-2", "snapshot.*"))
	logs, _ := filepath.Glob(filepath.Join(zs.DataDir, "version-2", "log.*"))
	if len(snaps) < minSnaps || len(logs) < minSnaps {
		t.Fatalf("ZooKeeper wrote %d snapshots and %d logs; the test wants several of each", len(snaps), len(logs))
	}

	dir := t.TempDir()
	cfg := writeZooCfg(t, dir, port)
	out := zkd(t, bin, "import", "-from", zs.DataDir, cfg)
	if !strings.Contains(out, "sessions 3,") {
		t.Errorf("import summary does not count the 3 lock holders' sessions: %s", out)
	}
	if strings.Contains(out, "(0 digests checked)") {
		t.Errorf("no digest was checked: %s", out)
	}
	// A second import into the same member is refused.
	if o, err := exec.Command(bin, "import", "-from", zs.DataDir, cfg).CombinedOutput(); err == nil || !strings.Contains(string(o), "already holds zkd state") {
		t.Errorf("second import: %v\n%s", err, o)
	}
	zd := zkproc.StartZkd(t, zkproc.Options{Dir: dir, Port: port, Binary: bin, ExtraCfg: extended})
	c2 := connect(t, zd.Addr)
	checkAfterMove(t, h, c2, before, lastZxid)
}

// TestIntegration_ExportToZooKeeper moves a zkd database with live lock
// holders to ZooKeeper 3.8 on the same port.
func TestIntegration_ExportToZooKeeper(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	bin := zkproc.BuildZkd(t)
	port := zkproc.FreePort(t)
	zd := zkproc.StartZkd(t, zkproc.Options{Port: port, Binary: bin, ExtraCfg: extended})
	h, lastZxid, before := fill(t, zd)

	dir := t.TempDir()
	out := zkd(t, bin, "export", "-to", filepath.Join(dir, "data"), zd.CfgPath)
	if o, err := exec.Command(bin, "export", "-to", filepath.Join(dir, "data"), zd.CfgPath).CombinedOutput(); err == nil || !strings.Contains(string(o), "not empty") {
		t.Errorf("second export over the first: %v\n%s", err, o)
	}
	zs := zkproc.StartZooKeeper(t, zkproc.Options{Dir: dir, Port: port, JVMFlags: append(jvmFlags, "-Dorg.slf4j.simpleLogger.defaultLogLevel=info")})
	// ZooKeeper computes the tree's digest as it loads the snapshot; it
	// equals the one the export wrote.
	m := regexp.MustCompile(`Snapshot loaded in \d+ ms, highest zxid is 0x([0-9a-f]+), digest is (\d+)`).FindStringSubmatch(zs.Log())
	if m == nil {
		t.Fatalf("no 'Snapshot loaded' line in ZooKeeper's log")
	}
	if !strings.Contains(out, "last zxid 0x"+m[1]+", ZooKeeper digest "+m[2]+",") {
		t.Errorf("ZooKeeper loaded zxid 0x%s with digest %s; the export said: %s", m[1], m[2], out)
	}
	c2 := connect(t, zs.Addr)
	checkAfterMove(t, h, c2, before, lastZxid)
}

// TestIntegration_ImportIntoEnsemble imports one ZooKeeper database into
// every member of a three-member zkd ensemble: they agree on the tree,
// /zookeeper/config holds zkd's membership, and writes continue above
// ZooKeeper's zxids.
func TestIntegration_ImportIntoEnsemble(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	bin := zkproc.BuildZkd(t)
	zs := zkproc.StartZooKeeper(t, zkproc.Options{JVMFlags: append(jvmFlags, "-Dzookeeper.snapCount=20")})
	_, lastZxid, before := fill(t, zs)

	members := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{Binary: bin, ExtraCfg: extended})
	for _, m := range members {
		m.Stop()
		must(t, os.RemoveAll(filepath.Join(m.DataDir, "zkd")))
		zkd(t, bin, "import", "-from", zs.DataDir, m.CfgPath)
	}
	zkproc.RestartAll(t, members)
	// The ensemble's /zookeeper/config is its own; everything else is as
	// it was in ZooKeeper.
	cfgData, _, err := connect(t, members[0].Addr).Get("/zookeeper/config")
	must(t, err)
	if !strings.Contains(string(cfgData), "server.3=") {
		t.Errorf("/zookeeper/config after the import: %q", cfgData)
	}
	for i, m := range members {
		c := connect(t, m.Addr)
		_, err := c.Sync("/")
		must(t, err)
		got := dump(t, c)
		delete(got, "/zookeeper/config")
		want := map[string]string{}
		for p, v := range before {
			if p != "/zookeeper/config" {
				want[p] = v
			}
		}
		t.Run(fmt.Sprintf("member%d", i+1), func(t *testing.T) { compare(t, want, got) })
	}
	for i, m := range members {
		c := connect(t, m.Addr)
		p, err := c.Create("/after-import-", nil, zk.FlagSequence, open)
		must(t, err)
		_, st, err := c.Get(p)
		must(t, err)
		if st.Czxid <= lastZxid {
			t.Errorf("member %d: czxid 0x%x not above ZooKeeper's last 0x%x", i+1, st.Czxid, lastZxid)
		}
	}
}

// TestIntegration_ExportToZooKeeperEnsemble hands one export to every
// member of a three-member ZooKeeper 3.8 ensemble, as docs/migration.md
// says: the same snapshot in each member's emptied version-2, with the
// currentEpoch and acceptedEpoch files removed.
func TestIntegration_ExportToZooKeeperEnsemble(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	bin := zkproc.BuildZkd(t)
	zd := zkproc.StartZkd(t, zkproc.Options{Binary: bin, ExtraCfg: extended})
	_, lastZxid, before := fill(t, zd)
	exp := filepath.Join(t.TempDir(), "data")
	zkd(t, bin, "export", "-to", exp, zd.CfgPath)
	snaps, err := filepath.Glob(filepath.Join(exp, "version-2", "snapshot.*"))
	must(t, err)
	if len(snaps) != 1 {
		t.Fatalf("export wrote %v", snaps)
	}
	snap, err := os.ReadFile(snaps[0])
	must(t, err)

	members := zkproc.StartZooKeeperEnsemble(t, 3, zkproc.Options{JVMFlags: jvmFlags})
	for _, m := range members {
		m.Stop()
		for _, name := range []string{"version-2", "currentEpoch", "acceptedEpoch"} {
			must(t, os.RemoveAll(filepath.Join(m.DataDir, name)))
		}
		must(t, os.MkdirAll(filepath.Join(m.DataDir, "version-2"), 0o755))
		must(t, os.WriteFile(filepath.Join(m.DataDir, "version-2", filepath.Base(snaps[0])), snap, 0o644))
	}
	zkproc.RestartAll(t, members)
	want := map[string]string{}
	for p, v := range before {
		if p != "/zookeeper/config" {
			want[p] = v
		}
	}
	for i, m := range members {
		c := connect(t, m.Addr)
		_, err := c.Sync("/")
		must(t, err)
		got := dump(t, c)
		delete(got, "/zookeeper/config")
		t.Run(fmt.Sprintf("member%d", i+1), func(t *testing.T) { compare(t, want, got) })
	}
	c := connect(t, members[0].Addr)
	p, err := c.Create("/after-export-", nil, zk.FlagSequence, open)
	must(t, err)
	_, st, err := c.Get(p)
	must(t, err)
	if st.Czxid <= lastZxid {
		t.Errorf("czxid 0x%x not above zkd's last 0x%x", st.Czxid, lastZxid)
	}
}
