package datatree

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zkd/zkd/jute"
)

// twoRec is one op of a two-session recording (testdata/zk380_two_*.jsonl,
// made by zk380_record2.py against ZooKeeper 3.8.0).
type twoRec struct {
	Op         string              `json:"op"`
	Conn       string              `json:"conn"`
	ID         int64               `json:"id"`
	Path       string              `json:"path"`
	Mode       int32               `json:"mode"`
	ACL        string              `json:"acl"`
	Zxid       int64               `json:"zxid"`
	Err        int32               `json:"err"`
	RPath      string              `json:"rpath"`
	Stat       []int64             `json:"stat"`
	NewSession int64               `json:"newsession"`
	Events     map[string][]string `json:"events"`
}

// TestGoldenTwoSessions replays recordings with an anonymous session A and
// a session B authenticated as digest alice:pw: auth-scheme ACLs, ACL
// filtering of watch events (both watchers are AuthWatchers), ephemerals of
// both sessions, and B's session closed (its ephemerals deleted, its
// connection's watches gone) and reopened.
func TestGoldenTwoSessions(t *testing.T) {
	files, _ := filepath.Glob("testdata/zk380_two_*.jsonl")
	if len(files) == 0 {
		t.Fatal("no recordings")
	}
	local := jute.Id{Scheme: "ip", Id: "127.0.0.1"}
	alice := digestID("alice", "pw")
	acls := map[string][]jute.ACL{
		"open":             OpenACLUnsafe,
		"creator":          CreatorAllACL,
		"alice_read_world": append(slices.Clone(CreatorAllACL), ReadACLUnsafe...),
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tr := New(DefaultConfig())
			auth := map[string][]jute.Id{"A": {local}, "B": {local, alice}}
			sess := map[string]int64{}
			ws := map[string]*authRecorder{
				"A": {recorder{name: "A", auth: auth["A"]}},
				"B": {recorder{name: "B", auth: auth["B"]}},
			}
			sc := bufio.NewScanner(f)
			line := 0
			for sc.Scan() {
				line++
				var r twoRec
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatal(err)
				}
				fail := func(format string, args ...any) {
					t.Helper()
					t.Fatalf("line %d (%s %s %s): %s", line, r.Conn, r.Op, r.Path, fmt.Sprintf(format, args...))
				}
				if r.Op == "session" {
					sess[r.Conn] = r.ID
					continue
				}
				tx := &Txn{Zxid: r.Zxid, SessionID: sess[r.Conn], Auth: auth[r.Conn]}
				w := ws[r.Conn]
				var got error
				switch r.Op {
				case "close":
					tr.CloseSession(tx, sess["B"])
					tr.RemoveWatcher(ws["B"])
					ws["B"] = &authRecorder{recorder{name: "B", auth: auth["B"]}}
					sess["B"] = r.NewSession
				case "create":
					var p string
					var st jute.Stat
					p, st, got = tr.Create(tx, CreateOp{Path: r.Path, Data: []byte("d"), ACL: acls[r.ACL], Mode: r.Mode, Type: jute.OpCreate2})
					if got == nil && (p != r.RPath || !slices.Equal(statFields(st), goldenStat(r.Stat))) {
						fail("created %s %v, ZooKeeper %s %v", p, statFields(st), r.RPath, goldenStat(r.Stat))
					}
				case "delete":
					got = tr.Delete(tx, r.Path, -1)
				case "set":
					var st jute.Stat
					st, got = tr.SetData(tx, r.Path, []byte("v"), -1)
					if got == nil && !slices.Equal(statFields(st), goldenStat(r.Stat)) {
						fail("stat %v, ZooKeeper %v", statFields(st), goldenStat(r.Stat))
					}
				case "setacl":
					_, got = tr.SetACL(tx, r.Path, acls[r.ACL], -1)
				case "get":
					_, _, got = tr.GetData(r.Path, auth[r.Conn], w)
				case "exists":
					_, got = tr.Exists(r.Path, w)
				case "children":
					_, _, got = tr.GetChildren(r.Path, auth[r.Conn], w)
				case "addwatch":
					got = tr.AddWatch(r.Path, w, r.Mode)
				default:
					fail("unknown op")
				}
				if c := codeOf(got); c != r.Err {
					fail("error %v (%d), ZooKeeper %d", got, c, r.Err)
				}
				for _, k := range []string{"A", "B"} {
					ev := ws[k].take()
					want := r.Events[k]
					if r.Op == "close" {
						// ZooKeeper deletes a closed session's
						// ephemerals in hash order, zkd in path order.
						slices.Sort(ev)
						want = slices.Clone(want)
						slices.Sort(want)
					}
					if !slices.Equal(ev, want) && !(len(ev) == 0 && len(want) == 0) {
						fail("events of %s %v, ZooKeeper %v", k, ev, want)
					}
				}
				if err := tr.CheckInvariants(); err != nil {
					fail("%v", err)
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
