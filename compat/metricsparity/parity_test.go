package metricsparity

import (
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

var record = flag.Bool("record", false, "rewrite testdata from the real ZooKeeper 3.8")

// roles are the servers whose mntr was recorded, with their testdata file.
var roles = []string{"standalone", "leader", "follower"}

func mntrFile(role string) string { return filepath.Join("testdata", "zk38_mntr_"+role+".txt") }

const adminFile = "testdata/zk38_admin_monitor_standalone.json"

// namespace is the top-level znode the workload writes under.
const namespace = "parity"

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// workload is what both servers get before their keys are read: writes
// and reads under /parity, a data watch and a child watch fired, so that
// the per-namespace and watch figures have members.
func workload(t *testing.T, addrs []string) {
	t.Helper()
	c, _, err := zk.Connect(addrs, 15*time.Second, zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatalf("connect %v: %v", addrs, err)
	}
	defer c.Close()
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.Create("/"+namespace, []byte("root"), 0, acl); err != nil {
		t.Fatalf("create /%s: %v", namespace, err)
	}
	for i := 0; i < 20; i++ {
		p, err := c.Create("/"+namespace+"/n", []byte("x"), zk.FlagSequence, acl)
		if err != nil {
			t.Fatalf("create under /%s: %v", namespace, err)
		}
		if _, _, err := c.Get(p); err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
	}
	_, _, dw, err := c.GetW("/" + namespace)
	if err != nil {
		t.Fatal(err)
	}
	_, _, cw, err := c.ChildrenW("/" + namespace)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/"+namespace, []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/"+namespace+"/last", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	for _, w := range []<-chan zk.Event{dw, cw} {
		select {
		case <-w:
		case <-time.After(15 * time.Second):
			t.Fatal("watch did not fire")
		}
	}
}

// byRole starts servers of kind: a standalone one and a 3-member
// ensemble, runs the workload on the standalone one and on a follower, and
// returns mntr per role (and the standalone server).
func byRole(t *testing.T, kind zkproc.Kind, opts zkproc.Options) (map[string]string, *zkproc.Server) {
	t.Helper()
	start, startEns := zkproc.StartZkd, zkproc.StartZkdEnsemble
	if kind == zkproc.KindZooKeeper {
		start, startEns = zkproc.StartZooKeeper, zkproc.StartZooKeeperEnsemble
	}
	out := map[string]string{}
	sa := start(t, opts)
	workload(t, []string{sa.Addr})
	out["standalone"] = mntr(t, sa)
	ens := startEns(t, 3, zkproc.Options{})
	// The client uses one follower, so that the reads it counts (only the
	// member serving a read counts it) land on a known member.
	var leader, follower *zkproc.Server
	for _, s := range ens {
		switch value(mntr(t, s), "zk_server_state") {
		case "leader":
			leader = s
		case "follower":
			follower = s
		}
	}
	if leader == nil || follower == nil {
		t.Fatalf("%s: no leader and follower among the ensemble", kind)
	}
	workload(t, []string{follower.Addr})
	out["leader"], out["follower"] = mntr(t, leader), mntr(t, follower)
	return out, sa
}

func mntr(t *testing.T, s *zkproc.Server) string {
	t.Helper()
	out, err := s.FourLetter("mntr")
	if err != nil {
		t.Fatalf("mntr on %s: %v", s.Addr, err)
	}
	return out
}

// value returns key's value in an mntr reply.
func value(mntr, key string) string {
	for _, l := range strings.Split(mntr, "\n") {
		if k, v, ok := strings.Cut(l, "\t"); ok && k == key {
			return v
		}
	}
	return ""
}

var (
	nsKey  = regexp.MustCompile(`^(zk_(?:avg|min|max|cnt|sum)_).+_((?:read|write)_per_namespace)$`)
	sidKey = regexp.MustCompile(`^(zk_(?:avg|min|max|cnt|sum|p50|p95|p99|p999)_)\d+_(learner_handler_qp_(?:size|time_ms))$`)
)

// keys returns an mntr reply's keys, namespaces and the learners' server
// ids written as <ns> and <sid>.
func keys(mntr string) []string {
	var out []string
	for _, l := range strings.Split(mntr, "\n") {
		k, _, ok := strings.Cut(l, "\t")
		if !ok {
			continue
		}
		k = nsKey.ReplaceAllString(k, "${1}<ns>_$2")
		k = sidKey.ReplaceAllString(k, "${1}<sid>_$2")
		out = append(out, k)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func readRecorded(t *testing.T, role string) []string {
	t.Helper()
	b, err := os.ReadFile(mntrFile(role))
	if err != nil {
		t.Fatalf("recorded ZooKeeper keys: %v", err)
	}
	return keys(string(b))
}

// TestZooKeeperKeysMatchRecording runs the real ZooKeeper 3.8 through the
// workload and compares its key set, per role, with testdata; with
// -record it rewrites testdata instead.
func TestZooKeeperKeysMatchRecording(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	got, sa := byRole(t, zkproc.KindZooKeeper, zkproc.Options{AdminServer: true})
	admin := adminMonitorKeys(t, sa)
	if *record {
		for _, r := range roles {
			if err := os.WriteFile(mntrFile(r), []byte(got[r]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(admin); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(adminFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, r := range roles {
		want, have := readRecorded(t, r), keys(got[r])
		if missing, extra := diff(want, have); len(missing)+len(extra) > 0 {
			t.Errorf("ZooKeeper %s: keys recorded but not answered now: %v; answered but not recorded: %v (rerun with -record)", r, missing, extra)
		}
	}
	if missing, extra := diff(recordedAdmin(t), admin); len(missing)+len(extra) > 0 {
		t.Errorf("ZooKeeper admin monitor: recorded but not answered: %v; answered but not recorded: %v", missing, extra)
	}
}

// adminMonitorKeys returns the keys of the admin monitor command, the
// workload's namespace written as <ns>.
func adminMonitorKeys(t *testing.T, s *zkproc.Server) []string {
	t.Helper()
	resp, err := http.Get("http://" + s.AdminAddr + "/commands/monitor")
	if err != nil {
		t.Fatalf("admin monitor on %s: %v", s.AdminAddr, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("admin monitor on %s: %v", s.AdminAddr, err)
	}
	var lines []string
	for k := range m {
		lines = append(lines, "zk_"+k+"\t")
	}
	ks := keys(strings.Join(lines, "\n"))
	for i := range ks {
		ks[i] = strings.TrimPrefix(ks[i], "zk_")
	}
	return ks
}

func recordedAdmin(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(adminFile)
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	if err := json.Unmarshal(b, &ks); err != nil {
		t.Fatalf("%s: %v", adminFile, err)
	}
	return ks
}

// diff returns what want has and have lacks, and the reverse.
func diff(want, have []string) (missing, extra []string) {
	for _, k := range want {
		if !slices.Contains(have, k) {
			missing = append(missing, k)
		}
	}
	for _, k := range have {
		if !slices.Contains(want, k) {
			extra = append(extra, k)
		}
	}
	return missing, extra
}

var (
	summaryPart = regexp.MustCompile(`^(avg|min|max|cnt|sum|p50|p95|p99|p999)_(.+)$`)
	labelPart   = regexp.MustCompile(`^<(ns|sid)>_(.+)$`)
)

// metricOf maps a recorded mntr key (without zk_) to the ZooKeeper metric
// it belongs to: a summary's lines (avg_/min_/…/p999_<name>, with cnt_
// present) to <name>, a set member (<ns>_<name>) to <name>; others to
// themselves.
func metricOf(key string, all []string) string {
	if m := summaryPart.FindStringSubmatch(key); m != nil && slices.Contains(all, "zk_cnt_"+m[2]) {
		key = m[2]
	}
	if m := labelPart.FindStringSubmatch(key); m != nil {
		key = m[2]
	}
	return key
}

// infoKeys are mntr lines that are no metric: ZooKeeper's
// dumpMonitorValues adds them to mntr alone, and its Prometheus provider
// never sees them.
var infoKeys = []string{"version", "server_state", "peer_state"}

// absentInDocs returns the metric names docs/monitor.md lists as having
// no zkd counterpart, with the reason given.
func absentInDocs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/monitor.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	const head = "### ZooKeeper metrics zkd does not report"
	i := strings.Index(doc, head)
	if i < 0 {
		t.Fatalf("docs/monitor.md lacks %q", head)
	}
	sec := doc[i+len(head):]
	if j := strings.Index(sec, "\n#"); j >= 0 {
		sec = sec[:j]
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\| (.+?) \\|$")
	out := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(sec, -1) {
		if strings.TrimSpace(m[2]) == "" {
			t.Errorf("docs/monitor.md: %s is listed without a reason", m[1])
		}
		out[m[1]] = m[2]
	}
	if len(out) == 0 {
		t.Fatal("docs/monitor.md: no metric listed under " + head)
	}
	return out
}
