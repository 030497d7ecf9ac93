package corners

import (
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// TestIntegration_SystemNodeStat: the system znodes /zookeeper,
// /zookeeper/quota and /zookeeper/config have the same Stat on zkd as on
// ZooKeeper 3.8: on a fresh server, standalone and in a 3-member ensemble
// (/zookeeper's cversion is -2 and its pzxid 0 on both), and on a
// standalone server restarted after a write. /zookeeper/config's mtime is
// compared only as zero or not.
func TestIntegration_SystemNodeStat(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	for _, tc := range []struct {
		members int
		restart bool
	}{{1, false}, {3, false}, {1, true}} {
		got := map[zkproc.Kind]string{}
		for _, kind := range []zkproc.Kind{zkproc.KindZkd, zkproc.KindZooKeeper} {
			var s0 *zkproc.Server
			switch {
			case tc.members == 1 && kind == zkproc.KindZkd:
				s0 = zkproc.StartZkd(t, zkproc.Options{})
			case tc.members == 1:
				s0 = zkproc.StartZooKeeper(t, zkproc.Options{})
			case kind == zkproc.KindZkd:
				s0 = zkproc.StartZkdEnsemble(t, tc.members, zkproc.Options{TickTime: 200})[0]
			default:
				s0 = zkproc.StartZooKeeperEnsemble(t, tc.members, zkproc.Options{TickTime: 200})[0]
			}
			c := connect(t, s0.Addr)
			if tc.restart {
				if _, err := c.Create("/a", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatal(err)
				}
				c.Close()
				s0.Restart(t)
				c = connect(t, s0.Addr)
			}
			s := ""
			for _, p := range []string{"/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
				_, st, err := c.Get(p)
				if err != nil {
					s += fmt.Sprintf("%s: %v\n", p, err)
					continue
				}
				s += fmt.Sprintf("%s: czxid=%d mzxid=%d pzxid=%d ctime=%d mtime=%d version=%d cversion=%d aversion=%d ephemeralOwner=%d dataLength=%d numChildren=%d\n",
					p, st.Czxid, st.Mzxid, st.Pzxid, st.Ctime, min(st.Mtime, 1), st.Version, st.Cversion, st.Aversion, st.EphemeralOwner, st.DataLength, st.NumChildren)
			}
			got[kind] = s
			c.Close()
		}
		if got[zkproc.KindZkd] != got[zkproc.KindZooKeeper] {
			t.Errorf("%+v: system znodes' Stat\nzkd:\n%sZooKeeper 3.8:\n%s", tc, got[zkproc.KindZkd], got[zkproc.KindZooKeeper])
		} else {
			t.Logf("%+v: both\n%s", tc, got[zkproc.KindZkd])
		}
	}
}
