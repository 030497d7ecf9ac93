package server

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
)

// fourLetter sends word on a new connection and returns everything the
// server writes before closing.
func fourLetter(t *testing.T, addr, word string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write([]byte(word)); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("%s: %v", word, err)
	}
	return string(b)
}

func TestFourLetterWords(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 457), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, func(c *Config) {
		c.DataDir = dir
		c.Version = "3.8.4-zkd-test"
		c.BuiltOn = "2026-11-21 21:00 UTC"
		c.ServerID = 3
	})
	c := dialRaw(t, ts.addr)
	c.session()
	c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/n", Acl: openACL, Flags: jute.ModeEphemeral}, &jute.CreateResponse{})
	c.call(2, jute.OpGetData, &jute.GetDataRequest{Path: "/n", Watch: true}, &jute.GetDataResponse{})
	c.call(3, jute.OpExists, &jute.ExistsRequest{Path: "/zookeeper", Watch: true}, &jute.ExistsResponse{})
	// A child watch beside the data watch on /n: ZooKeeper's wchs, wchc
	// and wchp list the data-watch table only, so it does not show.
	c.call(4, jute.OpGetChildren, &jute.GetChildrenRequest{Path: "/n", Watch: true}, &jute.GetChildrenResponse{})
	sid := hexID(c.id)
	zxid := fmt.Sprintf("0x%x", ts.b.LastZxid())

	for _, tc := range []struct {
		word string
		want string // regexp, anchored
	}{
		{"ruok", `imok`},
		{"isro", `rw`},
		{"srvr", `Zookeeper version: 3\.8\.4-zkd-test, built on 2026-11-21 21:00 UTC\n` +
			`Latency min/avg/max: \d+/\d+\.\d+/\d+\n` +
			`Received: \d+\nSent: \d+\nConnections: 2\nOutstanding: 0\n` +
			`Zxid: ` + zxid + `\nMode: standalone\nNode count: 6\n`},
		{"stat", `Zookeeper version: 3\.8\.4-zkd-test, built on 2026-11-21 21:00 UTC\n` +
			`Clients:\n /127\.0\.0\.1:\d+\[1\]\(queued=0,recved=5,sent=5\)\n /127\.0\.0\.1:\d+\[0\]\(queued=0,recved=1,sent=0\)\n\n` +
			`Latency min/avg/max: \d+/\d+\.\d+/\d+\n` +
			`Received: \d+\nSent: \d+\nConnections: 2\nOutstanding: 0\n` +
			`Zxid: ` + zxid + `\nMode: standalone\nNode count: 6\n`},
		{"cons", ` /127\.0\.0\.1:\d+\[1\]\(queued=0,recved=5,sent=5,sid=` + sid +
			`,lop=GETC,est=\d+,to=10000,lcxid=0x4,lzxid=` + zxid + `,lresp=\d+,llat=\d+,minlat=\d+,avglat=\d+,maxlat=\d+\)\n` +
			` /127\.0\.0\.1:\d+\[0\]\(queued=0,recved=1,sent=0\)\n\n`},
		{"conf", `clientPort=\d+\nsecureClientPort=-1\ndataDir=` + regexp.QuoteMeta(dir+"/version-2") + `\ndataDirSize=457\n` +
			`dataLogDir=` + regexp.QuoteMeta(dir+"/version-2") + `\ndataLogSize=457\ntickTime=2000\nmaxClientCnxns=60\n` +
			`minSessionTimeout=4000\nmaxSessionTimeout=40000\nclientPortListenBacklog=-1\nserverId=3\n`},
		{"envi", `Environment:\nzookeeper\.version=3\.8\.4-zkd-test, built on 2026-11-21 21:00 UTC\nhost\.name=.*\n(?s:.*)`},
		{"wchs", `1 connections watching 2 paths\nTotal watches:2\n`},
		{"wchc", sid + `\n\t/n\n\t/zookeeper\n\n`},
		{"wchp", `/n\n\t` + sid + `\n/zookeeper\n\t` + sid + `\n\n`},
		{"dirs", `datadir_size: 457\nlogdir_size: 457\n`},
		{"dump", `SessionTracker dump:\nSession Sets \(1\)/\(1\):\n1 expire at \w{3} \w{3} \d\d \d\d:\d\d:\d\d \w+ \d{4}:\n\t` + sid +
			`\nephemeral nodes dump:\nSessions with Ephemerals \(1\):\n` + sid + `:\n\t/n\nConnections dump:\nConnections Sets \([12]\)/\(2\):\n` +
			`(\d expire at [^\n]+:\n(\tip: /127\.0\.0\.1:\d+ sessionId: (` + sid + `|0x0)\n)+)+`},
	} {
		t.Run(tc.word, func(t *testing.T) {
			waitFor(t, "earlier 4-letter connections gone", func() bool { return len(ts.Conns()) == 1 })
			got := fourLetter(t, ts.addr, tc.word)
			if !regexp.MustCompile(`^` + tc.want + `$`).MatchString(got) {
				t.Fatalf("%s answered\n%q\nwant match of\n%q", tc.word, got, tc.want)
			}
		})
	}
}

func TestFourLetterMonitor(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	c.call(1, jute.OpCreate, &jute.CreateRequest{Path: "/e", Acl: openACL, Flags: jute.ModeEphemeral}, &jute.CreateResponse{})
	c.call(2, jute.OpExists, &jute.ExistsRequest{Path: "/e"}, &jute.ExistsResponse{})
	got := map[string]string{}
	out := fourLetter(t, ts.addr, "mntr")
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if !ok || !strings.HasPrefix(k, "zk_") {
			t.Fatalf("mntr line %q is not zk_key\\tvalue", line)
		}
		got[k] = v
	}
	for k, want := range map[string]string{
		"zk_version":               ts.fullVersion(),
		"zk_server_state":          "standalone",
		"zk_ephemerals_count":      "1",
		"zk_num_alive_connections": "2",
		"zk_znode_count":           "6",
		"zk_global_sessions":       "1",
		"zk_outstanding_requests":  "0",
		"zk_watch_count":           "0",
		"zk_avg_latency":           got["zk_avg_latency"],
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if got["zk_cnt_updatelatency"] != "1" || got["zk_cnt_readlatency"] != "1" {
		t.Errorf("latency counts: %s writes, %s reads; want 1 and 1", got["zk_cnt_updatelatency"], got["zk_cnt_readlatency"])
	}
	if !regexp.MustCompile(`^\d+\.\d+$`).MatchString(got["zk_avg_latency"]) {
		t.Errorf("zk_avg_latency %q is not a Java double", got["zk_avg_latency"])
	}
	if first := strings.SplitN(out, "\t", 2)[0]; first != "zk_version" {
		t.Errorf("mntr starts with %q, want zk_version as ZooKeeper", first)
	}
}

func TestFourLetterWhitelist(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.FourLetterWhitelist = []string{"srvr", "ruok"} })
	for _, tc := range []struct{ word, want string }{
		{"ruok", "imok"},
		{"stat", "stat is not executed because it is not in the whitelist.\n"},
		{"mntr", "mntr is not executed because it is not in the whitelist.\n"},
		{"gtmk", "gtmk is not executed because it is not in the whitelist.\n"},
		{"hash", "hash is not executed because it is not in the whitelist.\n"},
	} {
		if got := fourLetter(t, ts.addr, tc.word); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.word, got, tc.want)
		}
	}
	if got := fourLetter(t, ts.addr, "srvr"); !strings.HasPrefix(got, "Zookeeper version: ") {
		t.Errorf("srvr: %q", got)
	}
	// An unknown word is a frame length far over MaxBuffer: closed, no answer.
	if got := fourLetter(t, ts.addr, "abcd"); got != "" {
		t.Errorf("unknown word answered %q", got)
	}
}

func TestFourLetterResets(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	c.call(1, jute.OpExists, &jute.ExistsRequest{Path: "/"}, &jute.ExistsResponse{})
	if st := ts.Stats(); st.PacketsReceived < 2 || st.PacketsSent < 2 {
		t.Fatalf("stats before reset %+v", st)
	}
	if got := fourLetter(t, ts.addr, "srst"); got != "Server stats reset.\n" {
		t.Fatalf("srst: %q", got)
	}
	if st := ts.Stats(); st.PacketsReceived != 0 || st.PacketsSent > 1 || st.MaxLatency != 0 { // srst's own answer may count
		t.Fatalf("stats after srst %+v", st)
	}
	if got := fourLetter(t, ts.addr, "crst"); got != "Connection stats reset.\n" {
		t.Fatalf("crst: %q", got)
	}
	for _, ci := range ts.Conns() {
		if ci.SessionID == c.id && (ci.Received != 0 || ci.Sent != 0 || ci.LastOp != "NA") {
			t.Fatalf("connection after crst %+v", ci)
		}
	}
}

func TestJavaDouble(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{{0, "0.0"}, {1, "1.0"}, {1.08108108, "1.0811"}, {2.5, "2.5"}} {
		if got := javaDouble(tc.in); got != tc.want {
			t.Errorf("javaDouble(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDumpExpirySets(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.TickTime = time.Second })
	a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	a.session()
	b.session()
	d := ts.Dump()
	if d.SessionN != 2 || d.ConnN != 2 {
		t.Fatalf("dump counts %d sessions, %d connections; want 2 and 2", d.SessionN, d.ConnN)
	}
	n := 0
	for _, set := range d.Sessions {
		n += len(set.Members)
		if set.Deadline.UnixMilli()%1000 != 0 {
			t.Errorf("session deadline %v is not rounded to the tick", set.Deadline)
		}
		// Last packet plus the 10 s timeout, rounded up to the next tick.
		if until := time.Until(set.Deadline); until < 9*time.Second || until > 12*time.Second {
			t.Errorf("session deadline in %v, want about 10 s", until)
		}
	}
	if n != 2 {
		t.Fatalf("session sets hold %d members, want 2: %+v", n, d.Sessions)
	}
}

// TestConsAfterHandshakeOnly: a connection that has only created its
// session shows ZooKeeper's lop=SESS, lcxid=0x0 and the session's zxid.
func TestConsAfterHandshakeOnly(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.addr)
	c.session()
	var ci ConnInfo
	for _, x := range ts.Conns() {
		if x.SessionID != 0 {
			ci = x
		}
	}
	if ci.LastOp != "SESS" || ci.LastCxid != 0 || ci.LastZxid <= 0 || ci.LastZxid != ts.b.LastZxid() {
		t.Fatalf("cons after the handshake: lop=%s lcxid=%d lzxid=0x%x (tree at 0x%x)", ci.LastOp, ci.LastCxid, ci.LastZxid, ts.b.LastZxid())
	}
}

// TestFourLetterTraceMask: gtmk reports ZooKeeper's initial trace mask
// (306); stmk sets it from the 8-byte big-endian long after the word and
// answers the new mask, which gtmk then reports.
func TestFourLetterTraceMask(t *testing.T) {
	ts := startServer(t, nil)
	if got := fourLetter(t, ts.addr, "gtmk"); got != "306" {
		t.Fatalf("gtmk: %q, want 306", got)
	}
	if got := fourLetter(t, ts.addr, "stmk\x00\x00\x00\x00\x00\x00\x01\xff"); got != "511" {
		t.Fatalf("stmk 0x1ff: %q, want 511", got)
	}
	if got := fourLetter(t, ts.addr, "gtmk"); got != "511" {
		t.Fatalf("gtmk after stmk: %q, want 511", got)
	}
	// A truncated stmk (the client stops sending) is closed without an
	// answer; the mask stays.
	nc, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	nc.Write([]byte("stmk\x00\x01"))
	nc.(*net.TCPConn).CloseWrite()
	if got, err := io.ReadAll(nc); err != nil || len(got) != 0 {
		t.Fatalf("truncated stmk answered %q (%v)", got, err)
	}
	if got := fourLetter(t, ts.addr, "gtmk"); got != "511" {
		t.Fatalf("gtmk after a truncated stmk: %q, want 511", got)
	}
}

// TestFourLetterNotServing: a member without quorum answers as a ZooKeeper
// member that is not running a server (checked against ZooKeeper 3.8's
// QuorumPeerMain alone): the words that need the server say so, isro says
// null, the others answer as usual.
func TestFourLetterNotServing(t *testing.T) {
	b := &quorumBackend{fakeBackend: newFakeBackend()}
	addr := startQuorumServer(t, b)
	const notServing = "This ZooKeeper instance is not currently serving requests\n"
	for _, tc := range []struct{ word, want string }{
		{"srvr", notServing}, {"stat", notServing}, {"mntr", notServing}, {"conf", notServing},
		{"cons", notServing}, {"wchs", notServing}, {"wchc", notServing}, {"wchp", notServing},
		{"dump", notServing}, {"crst", notServing}, {"srst", notServing}, {"dirs", notServing},
		{"hash", strings.TrimSuffix(notServing, "\n")},
		{"isro", "null"}, {"ruok", "imok"}, {"gtmk", "306"},
	} {
		if got := fourLetter(t, addr, tc.word); got != tc.want {
			t.Errorf("%s while not serving: %q, want %q", tc.word, got, tc.want)
		}
	}
	if got := fourLetter(t, addr, "envi"); !strings.HasPrefix(got, "Environment:\n") {
		t.Errorf("envi while not serving: %q", got)
	}
	b.serving.Store(true)
	if got := fourLetter(t, addr, "srvr"); !strings.HasPrefix(got, "Zookeeper version: ") {
		t.Errorf("srvr once serving: %q", got)
	}
	if got := fourLetter(t, addr, "isro"); got != "rw" {
		t.Errorf("isro once serving: %q", got)
	}
}
