package corners

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// configState is what a client reads of /zookeeper/config.
type configState struct {
	data    string
	version string // the data's version=… line, "" without one
	mzxid   int64
}

func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 15*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	return c
}

func readConfig(t *testing.T, addr string) configState {
	t.Helper()
	c := connect(t, addr)
	defer c.Close()
	data, st, err := c.Get("/zookeeper/config")
	if err != nil {
		t.Fatalf("get /zookeeper/config on %s: %v", addr, err)
	}
	cs := configState{data: string(data), mzxid: st.Mzxid}
	for _, l := range strings.Split(cs.data, "\n") {
		if v, ok := strings.CutPrefix(l, "version="); ok {
			cs.version = v
		}
	}
	return cs
}

// createOn creates a node through addr and returns its czxid.
func createOn(t *testing.T, addr string) int64 {
	t.Helper()
	c := connect(t, addr)
	defer c.Close()
	if _, err := c.Create("/epoch", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create /epoch on %s: %v", addr, err)
	}
	_, st, err := c.Exists("/epoch")
	if err != nil {
		t.Fatalf("exists /epoch on %s: %v", addr, err)
	}
	return st.Czxid
}

// TestIntegration_ConfigVersion pins /zookeeper/config's initial version
// against ZooKeeper 3.8. Standalone, the node is empty with mZxid 0. An
// ensemble with reconfigEnabled=true versions its static configuration
// with the first leader's epoch start (ZOOKEEPER-1783): ZooKeeper shows
// version=100000000 and mZxid 0x100000000 on a fresh ensemble; zkd the
// raft term its first leader was elected in, shifted the same way:
// 200000000, as raft's bootstrap entry holds term 1 and every zxid of a
// fresh zkd ensemble is of epoch 2 or later (ZooKeeper's are of epoch 1).
// On both the version is the epoch of the first writes. The version holds
// on every member and across a restart of all of them. With reconfig off
// the version stays 0 (compat/zkclish pins that through zkCli's
// config -s).
func TestIntegration_ConfigVersion(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	opts := zkproc.Options{ExtraCfg: map[string]string{"reconfigEnabled": "true"}}
	for _, kind := range []zkproc.Kind{zkproc.KindZooKeeper, zkproc.KindZkd} {
		t.Run(string(kind), func(t *testing.T) {
			start, startEns := zkproc.StartZkd, zkproc.StartZkdEnsemble
			if kind == zkproc.KindZooKeeper {
				start, startEns = zkproc.StartZooKeeper, zkproc.StartZooKeeperEnsemble
			}
			sa := start(t, opts)
			if cs := readConfig(t, sa.Addr); cs.data != "" || cs.mzxid != 0 {
				t.Errorf("standalone: /zookeeper/config = %q, mZxid %#x; ZooKeeper 3.8 has it empty with mZxid 0", cs.data, cs.mzxid)
			}
			sa.Stop()

			ens := startEns(t, 3, opts)
			check := func(when string) int64 {
				var first string
				for i, m := range ens {
					cs := readConfig(t, m.Addr)
					v, err := strconv.ParseInt(cs.version, 16, 64)
					switch {
					case err != nil:
						t.Errorf("%s, member %d: version line %q in %q: %v", when, i+1, cs.version, cs.data, err)
					case v>>32 == 0 || v&0xffffffff != 0:
						t.Errorf("%s, member %d: version=%s; ZooKeeper 3.8 versions the first configuration with an epoch's first zxid (100000000)", when, i+1, cs.version)
					case cs.mzxid != v:
						t.Errorf("%s, member %d: mZxid %#x, version=%s; ZooKeeper 3.8 gives the node the config's version as mZxid", when, i+1, cs.mzxid, cs.version)
					}
					if kind == zkproc.KindZooKeeper && cs.version != "100000000" {
						t.Errorf("%s, member %d: ZooKeeper's fresh ensemble shows version=%s, recorded 100000000", when, i+1, cs.version)
					}
					if i == 0 {
						first = cs.version
					} else if cs.version != first {
						t.Errorf("%s: member %d has version=%s, member 1 %s", when, i+1, cs.version, first)
					}
				}
				t.Logf("%s: version=%s", when, first)
				v, _ := strconv.ParseInt(first, 16, 64)
				return v
			}
			version := check("fresh ensemble")
			// The version is the start of the epoch the ensemble's first
			// writes are made in: a create's zxid has its epoch.
			if czxid := createOn(t, ens[0].Addr); czxid>>32 != version>>32 {
				t.Errorf("a create on the fresh ensemble has zxid %#x; /zookeeper/config's version %#x is of another epoch", czxid, version)
			}
			zkproc.RestartAll(t, ens)
			check("after restarting every member")
		})
	}
}
