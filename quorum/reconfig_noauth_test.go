package quorum_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

// TestIntegration_ReconfigNoAuthLikeZooKeeper: on a 3-member ensemble with
// reconfigEnabled, a client without the super user gets the same answer
// from zkd as from ZooKeeper 3.8 for each reconfig, Kazoo's upstream
// TestReconfig::test_no_super_auth among them (an observer with id 999,
// which zkd itself could not run, must still be NoAuth, not
// BadArguments: the ACL is checked before the arguments).
func TestIntegration_ReconfigNoAuthLikeZooKeeper(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	cases := []struct {
		name             string
		joining, leaving []string
	}{
		{"kazoo test_no_super_auth", []string{"server.999=0.0.0.0:1234:2345:observer;3456"}, nil},
		{"remove a member", nil, []string{"3"}},
		{"malformed joiner", []string{"server.4=nonsense"}, nil},
		{"malformed leaver", nil, []string{"x"}},
	}
	answers := map[zkproc.Kind][]string{}
	for _, kind := range []zkproc.Kind{zkproc.KindZkd, zkproc.KindZooKeeper} {
		opts := zkproc.Options{TickTime: 200, ExtraCfg: reconfigCfg}
		var servers []*zkproc.Server
		if kind == zkproc.KindZkd {
			servers = zkproc.StartZkdEnsemble(t, 3, opts)
		} else {
			servers = zkproc.StartZooKeeperEnsemble(t, 3, opts)
		}
		c, _ := dial(t, 10*time.Second, servers[0].Addr)
		for _, tc := range cases {
			_, err := c.IncrementalReconfig(tc.joining, tc.leaving, -1)
			answers[kind] = append(answers[kind], fmt.Sprint(err))
		}
		c.Close()
		for _, s := range servers {
			s.Stop()
		}
	}
	for i, tc := range cases {
		z, j := answers[zkproc.KindZkd][i], answers[zkproc.KindZooKeeper][i]
		if z != j {
			t.Errorf("%s: zkd answers %s, ZooKeeper %s", tc.name, z, j)
		} else {
			t.Logf("%s: both answer %s", tc.name, z)
		}
	}
}
