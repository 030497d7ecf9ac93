package quorum_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

var reconfigCfg = map[string]string{
	"reconfigEnabled":                          "true",
	"DigestAuthenticationProvider.superDigest": "super:D/InIHSb7yEEbrWz8b9l71RjZJU=", // super:test
}

// TestIntegration_Reconfig drives reconfig with go-zk on a 3-member zkd
// ensemble: refused without the super user, a member removed and added
// back, /zookeeper/config following on every member and writes working
// throughout.
func TestIntegration_Reconfig(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200, ExtraCfg: reconfigCfg})
	c, _ := dial(t, 4*time.Second, servers[0].Addr)
	if _, err := c.IncrementalReconfig(nil, []string{"3"}, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("reconfig without super: %v, want NoAuth", err)
	}
	if err := c.AddAuth("digest", []byte("super:test")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.IncrementalReconfig(nil, []string{"3"}, 12345); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("reconfig from a stale version: %v, want BadVersion", err)
	}
	// With reconfigEnabled the first leader versions the static
	// configuration with its term's first zxid, as ZooKeeper 3.8's does
	// with its epoch's (compat/corners pins it against the real server).
	data, st0, err := c.Get("/zookeeper/config")
	if err != nil || st0.Mzxid>>32 == 0 || !strings.HasSuffix(string(data), fmt.Sprintf("version=%x", st0.Mzxid)) || strings.Count(string(data), "server.") != 3 {
		t.Fatalf("initial /zookeeper/config %q (mzxid %x), %v", data, st0.Mzxid, err)
	}
	line3 := ""
	for l := range strings.Lines(string(data)) {
		if strings.HasPrefix(l, "server.3=") {
			line3 = strings.TrimSpace(l)
		}
	}
	if _, err := c.IncrementalReconfig(nil, []string{"3"}, st0.Mzxid); err != nil {
		t.Fatalf("remove member 3: %v", err)
	}
	data, st, err := c.Get("/zookeeper/config")
	if err != nil || strings.Contains(string(data), "server.3=") || !strings.HasSuffix(string(data), fmt.Sprintf("version=%x", st.Mzxid)) {
		t.Fatalf("/zookeeper/config after removal %q (mzxid %x), %v", data, st.Mzxid, err)
	}
	// Removing the leader hands leadership over: a write may meet the
	// change (ConnectionLoss) and is retried as clients do.
	retry := func(what string, op func() error) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := op()
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				return
			}
			// A connection dropped as the write is lost with the old
			// leader, and ReconfigInProgress (-14) while the new leader
			// finishes the change.
			if !errors.Is(err, zk.ErrConnectionClosed) && err.Error() != "unknown error: -14" || time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	retry("write with two members", func() error {
		_, err := c.Create("/two", nil, 0, zk.WorldACL(zk.PermAll))
		return err
	})
	retry("add member 3 back", func() error {
		_, err := c.IncrementalReconfig([]string{line3}, nil, -1)
		return err
	})
	want, _, _ := c.Get("/zookeeper/config")
	for i, s := range servers {
		ci, _ := dial(t, 4*time.Second, s.Addr)
		deadline := time.Now().Add(10 * time.Second)
		for {
			ci.Sync("/zookeeper/config")
			got, _, err := ci.Get("/zookeeper/config")
			ok, _, _ := ci.Exists("/two")
			if err == nil && string(got) == string(want) && ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d: config %q (want %q), /two %v, %v", i+1, got, want, ok, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		ci.Close()
	}
	c3, _ := dial(t, 4*time.Second, servers[2].Addr)
	if _, err := c3.Create("/three", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("write through the re-added member: %v", err)
	}
}

// TestIntegration_ReconfigStandaloneLikeZooKeeper: a standalone server
// answers reconfig as ZooKeeper 3.8 does, with and without
// reconfigEnabled.
func TestIntegration_ReconfigStandaloneLikeZooKeeper(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	for _, enabled := range []bool{false, true} {
		var errs []error
		for _, kind := range []zkproc.Kind{zkproc.KindZkd, zkproc.KindZooKeeper} {
			opts := zkproc.Options{ExtraCfg: map[string]string{"reconfigEnabled": fmt.Sprint(enabled)}}
			var s *zkproc.Server
			if kind == zkproc.KindZkd {
				s = zkproc.StartZkd(t, opts)
			} else {
				s = zkproc.StartZooKeeper(t, opts)
			}
			c, _ := dial(t, 10*time.Second, s.Addr)
			_, err := c.IncrementalReconfig([]string{"server.2=127.0.0.1:1:2;3"}, nil, -1)
			errs = append(errs, err)
			c.Close()
			s.Stop()
		}
		if fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) || errs[0] == nil {
			t.Fatalf("reconfigEnabled=%v: zkd %v, ZooKeeper %v", enabled, errs[0], errs[1])
		}
		t.Logf("reconfigEnabled=%v: both answer %v", enabled, errs[0])
	}
}

// kazooReconfig is run by /usr/bin/python3: Kazoo's reconfig as the super
// user removes member 3; it prints the new configuration.
const kazooReconfig = `
import sys
from kazoo.client import KazooClient
c = KazooClient(hosts=sys.argv[1], auth_data=[("digest", "super:test")], timeout=10)
c.start(timeout=10)
data, stat = c.reconfig(joining=None, leaving="3", new_members=None)
sys.stdout.write(data.decode())
c.stop()
`

// TestIntegration_ReconfigKazoo: Kazoo's reconfig call works against zkd.
func TestIntegration_ReconfigKazoo(t *testing.T) {
	if _, err := exec.LookPath("/usr/bin/python3"); err != nil {
		t.Fatalf("python3 with kazoo is needed: %s", zkproc.AptCommand)
	}
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200, ExtraCfg: reconfigCfg})
	out, err := exec.Command("/usr/bin/python3", "-c", kazooReconfig, servers[0].Addr).CombinedOutput()
	if err != nil {
		t.Fatalf("kazoo reconfig: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "server.3=") || strings.Count(string(out), "server.") != 2 || !strings.Contains(string(out), "version=") {
		t.Fatalf("kazoo reconfig returned %q", out)
	}
}

// TestIntegration_ReconfigBackToBack: a reconfig sent right after another
// one's reply is accepted, as ZooKeeper 3.8 accepts it (go-zk's own
// TestIncrementalReconfig does this). Each round removes a member and adds
// it back at once, first a follower, then the leader: the leader that
// leaves hands over, and the new leader must finish carrying out the first
// change in raft's membership before the second rather than answer
// ReconfigInProgress. The client talks to a member that stays.
func TestIntegration_ReconfigBackToBack(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200, ExtraCfg: reconfigCfg})
	leader := func() int {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			for i, s := range servers {
				if out, err := s.FourLetter("srvr"); err == nil && strings.Contains(out, "Mode: leader") {
					return i
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("no member leads")
		return -1
	}
	for _, which := range []string{"follower", "leader"} {
		l := leader()
		victim, stay := (l+1)%3, (l+2)%3
		if which == "leader" {
			victim, stay = l, (l+1)%3
		}
		c, _ := dial(t, 4*time.Second, servers[stay].Addr)
		if err := c.AddAuth("digest", []byte("super:test")); err != nil {
			t.Fatal(err)
		}
		data, _, err := c.Get("/zookeeper/config")
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprint(victim + 1)
		var line string
		for l := range strings.Lines(string(data)) {
			if strings.HasPrefix(l, "server."+id+"=") {
				line = strings.TrimSpace(l)
			}
		}
		if _, err := c.IncrementalReconfig(nil, []string{id}, -1); err != nil {
			t.Fatalf("remove the %s (member %s): %v", which, id, err)
		}
		// Removing the leader changes leaders under the client: the
		// member it is connected to drops the connection when the write
		// is lost with the old leader, as ZooKeeper's do, and the
		// client retries (go-zk reconnects by itself).
		// ReconfigInProgress (-14) fails.
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := c.IncrementalReconfig([]string{line}, nil, -1)
			if err == nil {
				break
			}
			if !errors.Is(err, zk.ErrConnectionClosed) || time.Now().After(deadline) {
				t.Fatalf("add the %s (member %s) back right after its removal: %v", which, id, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if data, _, err := c.Get("/zookeeper/config"); err != nil || !strings.Contains(string(data), line+"\n") {
			t.Fatalf("/zookeeper/config after adding %q back: %q, %v", line, data, err)
		}
		if _, err := c.Create("/after-"+which, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("write after the reconfigs: %v", err)
		}
		c.Close()
	}
}

// TestIntegration_ReconfigRole makes a participant an observer and back
// with reconfig: raft demotes it to a non-voter (srvr says observer; the
// two others still acknowledge writes), then promotes it again. raft's
// AddNonvoter alone would have left it a voter.
func TestIntegration_ReconfigRole(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200, ExtraCfg: reconfigCfg})
	l := zkproc.LeaderOf(t, servers, 20*time.Second)
	m := (l + 1) % 3
	c, _ := dial(t, 4*time.Second, servers[l].Addr)
	if err := c.AddAuth("digest", []byte("super:test")); err != nil {
		t.Fatal(err)
	}
	data, _, err := c.Get("/zookeeper/config")
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("server.%d=", m+1)
	line := ""
	for l := range strings.Lines(string(data)) {
		if strings.HasPrefix(l, prefix) {
			line = strings.TrimSpace(l)
		}
	}
	if !strings.Contains(line, ":participant;") {
		t.Fatalf("no participant line for member %d in %q", m+1, data)
	}
	mode := func(want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			out, err := servers[m].FourLetter("srvr")
			if err == nil && strings.Contains(out, "Mode: "+want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d srvr %q (%v), want Mode: %s", m+1, out, err, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, err := c.IncrementalReconfig([]string{strings.Replace(line, ":participant;", ":observer;", 1)}, nil, -1); err != nil {
		t.Fatalf("make member %d an observer: %v", m+1, err)
	}
	mode("observer")
	if _, err := c.Create("/as-observer", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("write with member %d an observer: %v", m+1, err)
	}
	if _, err := c.IncrementalReconfig([]string{line}, nil, -1); err != nil {
		t.Fatalf("make member %d a participant again: %v", m+1, err)
	}
	mode("follower")
}
