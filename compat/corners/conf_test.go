package corners

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/quorum"
)

// confTail is what conf prints after serverId on an ensemble member.
type confTail struct {
	keys       []string          // the key=value keys, in order, up to "membership: "
	values     map[string]string // their values
	membership string            // the text after "membership: "
	serverID   int64
}

// parseConfTail splits a conf answer at serverId; ok is false if the
// answer has no serverId line or no membership section after it.
func parseConfTail(t *testing.T, conf string) (confTail, bool) {
	t.Helper()
	head, tail, ok := strings.Cut(conf, "\nserverId=")
	if !ok || head == "" {
		return confTail{}, false
	}
	id, rest, _ := strings.Cut(tail, "\n")
	ct := confTail{values: map[string]string{}}
	var err error
	if ct.serverID, err = strconv.ParseInt(id, 10, 64); err != nil {
		t.Fatalf("conf's serverId=%q: %v", id, err)
	}
	keys, membership, ok := strings.Cut(rest, "membership: \n")
	if !ok {
		return ct, false
	}
	for _, l := range strings.Split(strings.TrimSuffix(keys, "\n"), "\n") {
		k, v, _ := strings.Cut(l, "=")
		ct.keys = append(ct.keys, k)
		ct.values[k] = v
	}
	ct.membership = membership
	return ct, true
}

// selfPeer reads member id's server.N line from a zoo.cfg, or from the
// dynamicConfigFile it names (ZooKeeper moves the server lines there when
// reconfigEnabled is true).
func selfPeer(t *testing.T, cfgPath string, id int64) quorum.Peer {
	t.Helper()
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if dyn, ok := strings.CutPrefix(l, "dynamicConfigFile="); ok {
			more, err := os.ReadFile(dyn)
			if err != nil {
				t.Fatal(err)
			}
			raw = append(append(raw, '\n'), more...)
		}
	}
	prefix := "server." + strconv.FormatInt(id, 10) + "="
	for _, l := range strings.Split(string(raw), "\n") {
		if spec, ok := strings.CutPrefix(l, prefix); ok {
			p, err := quorum.ParsePeer(id, spec)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("%s has no %s line", cfgPath, prefix)
	return quorum.Peer{}
}

// TestIntegration_ConfEnsemble pins conf on an ensemble member against
// ZooKeeper 3.8: after serverId come initLimit and syncLimit (as
// configured, in ticks), electionAlg=3, the member's own electionPort and
// quorumPort, peerType (0 for a participant), then a "membership: " line and
// the membership exactly as the member's /zookeeper/config holds it, with
// no newline after its version line. With reconfigEnabled the version is
// the epoch's (ZooKeeper: 100000000), without it 0, and conf follows. A
// standalone server's conf ends at serverId.
func TestIntegration_ConfEnsemble(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	want := []string{"initLimit", "syncLimit", "electionAlg", "electionPort", "quorumPort", "peerType"}
	for _, kind := range []zkproc.Kind{zkproc.KindZooKeeper, zkproc.KindZkd} {
		for _, reconfig := range []string{"false", "true"} {
			t.Run(string(kind)+"/reconfigEnabled="+reconfig, func(t *testing.T) {
				opts := zkproc.Options{ExtraCfg: map[string]string{
					"initLimit": "7", "syncLimit": "4", "reconfigEnabled": reconfig,
				}}
				start, startEns := zkproc.StartZkd, zkproc.StartZkdEnsemble
				if kind == zkproc.KindZooKeeper {
					start, startEns = zkproc.StartZooKeeper, zkproc.StartZooKeeperEnsemble
				}
				if reconfig == "false" {
					sa := start(t, zkproc.Options{})
					conf, err := sa.FourLetter("conf")
					if err != nil {
						t.Fatalf("standalone conf: %v", err)
					}
					if !strings.HasSuffix(conf, "\nserverId=0\n") {
						t.Errorf("standalone conf should end at serverId=0, as ZooKeeper 3.8's does:\n%s", conf)
					}
					sa.Stop()
				}
				for _, m := range startEns(t, 3, opts) {
					conf, err := m.FourLetter("conf")
					if err != nil {
						t.Fatalf("conf on %s: %v", m.Addr, err)
					}
					ct, ok := parseConfTail(t, conf)
					if !ok {
						t.Fatalf("conf on %s has no membership section after serverId:\n%s", m.Addr, conf)
					}
					if !slices.Equal(ct.keys, want) {
						t.Errorf("conf on %s: keys after serverId %v, ZooKeeper 3.8 prints %v", m.Addr, ct.keys, want)
					}
					self := selfPeer(t, m.CfgPath, ct.serverID)
					for k, v := range map[string]string{
						"initLimit": "7", "syncLimit": "4", "electionAlg": "3", "peerType": "0",
						"electionPort": strconv.Itoa(self.ElectionPort), "quorumPort": strconv.Itoa(self.QuorumPort),
					} {
						if ct.values[k] != v {
							t.Errorf("conf on %s (server.%d): %s=%s, want %s", m.Addr, ct.serverID, k, ct.values[k], v)
						}
					}
					cs := readConfig(t, m.Addr)
					if ct.membership != cs.data {
						t.Errorf("conf on %s: membership\n%q\nbut /zookeeper/config holds\n%q", m.Addr, ct.membership, cs.data)
					}
					if reconfig == "false" && cs.version != "0" {
						t.Errorf("conf on %s: membership version=%s without reconfigEnabled, ZooKeeper 3.8 shows 0", m.Addr, cs.version)
					}
					if reconfig == "true" && cs.version == "0" {
						t.Errorf("conf on %s: membership version=0 with reconfigEnabled; ZooKeeper 3.8 shows the first epoch's", m.Addr)
					}
				}
			})
		}
	}
}
