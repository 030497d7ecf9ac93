package corners

import (
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

// TestIntegration_RuokWithoutQuorum: ruok tells that the process runs, not
// that it serves. A ZooKeeper 3.8 member that lost its quorum answers srvr
// with "not currently serving" and ruok still with imok; zkd answers the
// same. Readiness to serve is srvr's Mode line (zkd status, zkServer.sh
// status) or zkd's "zkd serving" log line.
func TestIntegration_RuokWithoutQuorum(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	for _, kind := range []zkproc.Kind{zkproc.KindZooKeeper, zkproc.KindZkd} {
		var members []*zkproc.Server
		opts := zkproc.Options{TickTime: 200}
		if kind == zkproc.KindZkd {
			members = zkproc.StartZkdEnsemble(t, 3, opts)
		} else {
			members = zkproc.StartZooKeeperEnsemble(t, 3, opts)
		}
		if out, err := members[0].FourLetter("ruok"); err != nil || out != "imok" {
			t.Fatalf("%s serving: ruok %q, %v", kind, out, err)
		}
		members[1].Stop()
		members[2].Stop()
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, err := members[0].FourLetter("srvr")
			if err == nil && strings.Contains(out, "not currently serving") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: a member without quorum still answers srvr %q, %v", kind, out, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if out, err := members[0].FourLetter("ruok"); err != nil || out != "imok" {
			t.Errorf("%s without quorum: ruok %q, %v; ZooKeeper 3.8 answers imok", kind, out, err)
		}
		members[0].Stop()
	}
}
