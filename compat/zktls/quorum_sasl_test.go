package zktls

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

// quorumJAAS writes a JAAS file whose QuorumServer section accepts user
// "learner" with secret, and whose QuorumLearner section presents it.
func quorumJAAS(t *testing.T, path, secret string) {
	t.Helper()
	text := `QuorumServer {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_learner="` + secret + `";
};
QuorumLearner {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="learner"
    password="` + secret + `";
};
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// quorumMech is a quorum SASL mechanism for testQuorumSASL: the JAAS
// file of a member in good standing and of member 3 kept out, the -D
// flags both servers need, and what the other members log about member 3.
type quorumMech struct {
	jaas       func(t *testing.T, path string, good bool)
	flags      []string
	cfg        map[string]string // zoo.cfg lines from the start
	zkdRefusal string            // in the others' zkd log, on the refusal's line
	zkRefusal  string            // in the others' ZooKeeper log
	zkdOutside string            // in member 3's zkd log
	// zkdOutsideRefusal, when set, is what member 3 logs as it refuses
	// the others' connections (zkd's raft leader keeps dialing it;
	// ZooKeeper's members, once they have a leader, do not).
	zkdOutsideRefusal string
	// stale, when set, writes member 3 a JAAS file with which it must
	// not start at all; zkdStale and zkStale are what its log says.
	stale             func(t *testing.T, path string)
	zkdStale, zkStale string
}

// digestMech is DIGEST-MD5: member 3 has another secret in both sections.
var digestMech = quorumMech{
	jaas: func(t *testing.T, path string, good bool) {
		if good {
			quorumJAAS(t, path, "quorum-secret")
		} else {
			quorumJAAS(t, path, "not-the-secret")
		}
	},
	zkdRefusal: "quorum SASL failed",
	zkRefusal:  "Failed to authenticate using SASL",
	zkdOutside: "quorum SASL to the member on its",
}

// TestIntegration_QuorumSASL: ZooKeeper's documented rolling enablement of
// quorum SASL (DIGEST-MD5) on a 3-member ensemble while a go-zk session
// writes throughout: (1) quorum.auth.enableSasl=true, (2)
// quorum.auth.learnerRequireSasl=true, (3) quorum.auth.serverRequireSasl=
// true, one member at a time. With any member down the other two take
// writes, and the session never expires. Then member 3 comes back with
// another secret in both JAAS sections: it stays out (never serves) while
// the other two go on, and both sides log why. zkd and ZooKeeper 3.8
// alike, with the same zoo.cfg edits and JAAS file.
func TestIntegration_QuorumSASL(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) { testQuorumSASL(t, kind, digestMech) })
	}
}

func testQuorumSASL(t *testing.T, kind zkproc.Kind, mech quorumMech) {
	jaas := filepath.Join(t.TempDir(), "jaas.conf")
	mech.jaas(t, jaas, true)
	opts := zkproc.Options{TickTime: 200, ExtraCfg: mech.cfg}
	flags := append([]string{"-Djava.security.auth.login.config=" + jaas}, mech.flags...)
	var members []*zkproc.Server
	if kind == zkproc.KindZooKeeper {
		opts.JVMFlags = flags
		members = zkproc.StartZooKeeperEnsemble(t, 3, opts)
	} else {
		opts.Env = []string{"SERVER_JVMFLAGS=" + strings.Join(flags, " ")}
		members = zkproc.StartZkdEnsemble(t, 3, opts)
	}
	w := startWriter(t, zkproc.Addrs(members))
	w.awaitWrites(t, 5, "before quorum SASL")
	sessionID := w.c.SessionID()

	for _, step := range []upgradeStep{
		{"step 1 (quorum.auth.enableSasl=true)", map[string]string{"quorum.auth.enableSasl": "true"}},
		{"step 2 (quorum.auth.learnerRequireSasl=true)", map[string]string{"quorum.auth.learnerRequireSasl": "true"}},
		{"step 3 (quorum.auth.serverRequireSasl=true)", map[string]string{"quorum.auth.serverRequireSasl": "true"}},
	} {
		rollingRestart(t, members, w, step)
	}
	if kind == zkproc.KindZkd {
		for _, m := range members {
			awaitLog(t, []*zkproc.Server{m}, []int{0}, `"serverRequireSasl": true`)
		}
	}

	// Member 3 with credentials that do not fit, in both sections: the
	// others neither take its connections nor reach it with theirs.
	out := members[2]
	out.Stop()
	mech.jaas(t, jaas, false)
	froms := []int{len(members[0].Log()), len(members[1].Log()), len(out.Log())}
	if err := out.Start(); err != nil {
		t.Fatal(err)
	}
	if kind == zkproc.KindZkd {
		awaitLog(t, members[:2], froms[:2], mech.zkdRefusal)
		awaitLog(t, []*zkproc.Server{out}, froms[2:], mech.zkdOutside)
		if mech.zkdOutsideRefusal != "" {
			awaitLog(t, []*zkproc.Server{out}, froms[2:], mech.zkdOutsideRefusal)
		}
	} else {
		awaitLog(t, members[:2], froms[:2], mech.zkRefusal)
	}
	// It says it is not serving, and refuses clients.
	deadline := time.Now().Add(60 * time.Second)
	for {
		srvr, err := out.FourLetter("srvr")
		if err == nil && strings.Contains(srvr, "not currently serving") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("member 3 with the wrong secret: srvr %q, %v", srvr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := zkproc.Handshake(out.Addr, 2*time.Second); err == nil {
		t.Fatal("a member with the wrong quorum SASL secret serves clients")
	}
	w.awaitWrites(t, 5, "with member 3 kept out")
	if mech.stale != nil {
		out.Stop()
		mech.stale(t, jaas)
		from := len(out.Log())
		if err := out.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(60 * time.Second); out.Running(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("member 3 with a stale QuorumLearner keytab still runs after 60s")
			}
		}
		want := mech.zkdStale
		if kind == zkproc.KindZooKeeper {
			want = mech.zkStale
		}
		if !strings.Contains(out.Log()[from:], want) {
			t.Fatalf("member 3 with a stale QuorumLearner keytab exited without saying %q:\n%s", want, out.Log()[from:])
		}
		w.awaitWrites(t, 5, "with member 3 refused at start")
	}
	w.halt()
	w.mu.Lock()
	expired := w.expired
	w.mu.Unlock()
	if expired || w.c.SessionID() != sessionID {
		t.Fatalf("the writer's session expired (%x → %x)", sessionID, w.c.SessionID())
	}
}
