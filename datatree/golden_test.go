package datatree

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkd/zkd/jute"
)

// goldenRec is one op recorded against a real ZooKeeper 3.8.0 (one session,
// a fresh server) with its replies and the watch events the session got.
type goldenRec struct {
	Op       string     `json:"op"`
	ID       int64      `json:"id"`
	Opcode   int32      `json:"opcode"`
	Path     string     `json:"path"`
	Mode     int32      `json:"mode"`
	ACL      string     `json:"acl"`
	Data     *string    `json:"data"`
	Version  int32      `json:"version"`
	Watch    bool       `json:"watch"`
	Zxid     int64      `json:"zxid"`
	Err      int32      `json:"err"`
	RPath    string     `json:"rpath"`
	Stat     []int64    `json:"stat"`
	Children []string   `json:"children"`
	Events   []string   `json:"events"`
	Ops      []goldenOp `json:"ops"`
	Results  []struct {
		Type int32   `json:"type"`
		Err  int32   `json:"err"`
		Path string  `json:"path"`
		Stat []int64 `json:"stat"`
	} `json:"results"`
}

type goldenOp struct {
	Type    int32  `json:"type"`
	Path    string `json:"path"`
	Mode    int32  `json:"mode"`
	Version int32  `json:"version"`
}

var goldenACLs = map[string][]jute.ACL{
	"open":     OpenACLUnsafe,
	"read":     ReadACLUnsafe,
	"nocreate": aclFor(jute.PermAll&^jute.PermCreate, "world", "anyone"),
	"empty":    {},
}

func codeOf(err error) int32 {
	if err == nil {
		return 0
	}
	var e interface{ Code() jute.Code }
	if errors.As(err, &e) {
		return int32(e.Code())
	}
	return -1
}

// statFields lists a Stat as the recorder does, with ctime and mtime zeroed
// (the real server's clock is not replayed).
func statFields(st jute.Stat) []int64 {
	return []int64{st.Czxid, st.Mzxid, 0, 0, int64(st.Version), int64(st.Cversion), int64(st.Aversion),
		st.EphemeralOwner, int64(st.DataLength), int64(st.NumChildren), st.Pzxid}
}

func goldenStat(s []int64) []int64 {
	if s == nil {
		return nil
	}
	out := slices.Clone(s)
	out[2], out[3] = 0, 0
	return out
}

// TestGoldenZooKeeper replays op sequences recorded from ZooKeeper 3.8.0
// (testdata/zk380_one_*.jsonl, made by testdata/zk380_record.py, a seeded
// random driver over the raw protocol) and checks every error code, created
// path, Stat (but times), data, child list, multi result and watch event.
func TestGoldenZooKeeper(t *testing.T) {
	files, _ := filepath.Glob("testdata/zk380_one_*.jsonl")
	if len(files) == 0 {
		t.Fatal("no recordings")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tr := New(DefaultConfig())
			w := &recorder{}
			var sess int64
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			line := 0
			for sc.Scan() {
				line++
				var r goldenRec
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatal(err)
				}
				fail := func(format string, args ...any) {
					t.Helper()
					t.Fatalf("line %d (%s %s): %s", line, r.Op, r.Path, fmt.Sprintf(format, args...))
				}
				var data []byte
				if r.Data != nil {
					data = []byte(*r.Data)
				}
				tx := &Txn{Zxid: r.Zxid, SessionID: sess}
				var watcher Watcher
				if r.Watch {
					watcher = w
				}
				checkStat := func(st jute.Stat) {
					t.Helper()
					if r.Err == 0 && !slices.Equal(statFields(st), goldenStat(r.Stat)) {
						fail("stat %v, ZooKeeper %v", statFields(st), goldenStat(r.Stat))
					}
				}
				var got error
				switch r.Op {
				case "session":
					sess = r.ID
					continue
				case "create":
					var p string
					var st jute.Stat
					p, st, got = tr.Create(tx, CreateOp{Path: r.Path, Data: data, ACL: goldenACLs[r.ACL], Mode: r.Mode, Type: r.Opcode})
					if got == nil && p != r.RPath {
						fail("created %s, ZooKeeper %s", p, r.RPath)
					}
					checkStat(st)
				case "delete":
					got = tr.Delete(tx, r.Path, r.Version)
				case "set":
					var st jute.Stat
					st, got = tr.SetData(tx, r.Path, data, r.Version)
					checkStat(st)
				case "setacl":
					var st jute.Stat
					st, got = tr.SetACL(tx, r.Path, goldenACLs[r.ACL], r.Version)
					checkStat(st)
				case "exists":
					var st jute.Stat
					st, got = tr.Exists(r.Path, watcher)
					checkStat(st)
				case "get":
					var d []byte
					var st jute.Stat
					d, st, got = tr.GetData(r.Path, nil, watcher)
					if got == nil && (string(d) != string(data) || (d == nil) != (r.Data == nil)) {
						fail("data %q, ZooKeeper %v", d, r.Data)
					}
					checkStat(st)
				case "children":
					var kids []string
					var st jute.Stat
					kids, st, got = tr.GetChildren(r.Path, nil, watcher)
					if got == nil && !slices.Equal(kids, r.Children) && !(len(kids) == 0 && len(r.Children) == 0) {
						fail("children %v, ZooKeeper %v", kids, r.Children)
					}
					checkStat(st)
				case "addwatch":
					got = tr.AddWatch(r.Path, w, r.Mode)
				case "checkwatches":
					if !strings.HasPrefix(r.Path, "/") && r.Err == int32(jute.CodeMarshallingError) {
						// 3.8.0's PathParentIterator throws on a
						// relative path once recursive watches exist;
						// zkd answers NoWatcher instead.
						r.Err = int32(jute.CodeNoWatcher)
					}
					got = tr.CheckWatches(r.Path, w, r.Mode)
				case "removewatches":
					got = tr.RemoveWatches(r.Path, w, r.Mode)
				case "multi":
					ops := make([]Op, len(r.Ops))
					for i, o := range r.Ops {
						ops[i] = Op{Type: o.Type, Path: o.Path, Version: o.Version}
						switch o.Type {
						case jute.OpCreate, jute.OpCreate2:
							ops[i].Create = CreateOp{Path: o.Path, Data: []byte("m"), ACL: OpenACLUnsafe, Mode: o.Mode}
						case jute.OpDelete:
							ops[i].Version = -1
						case jute.OpSetData:
							ops[i].Data, ops[i].Version = []byte("mm"), -1
						}
					}
					res, _ := tr.Multi(tx, ops)
					if len(res) != len(r.Results) {
						fail("%d results, ZooKeeper %d", len(res), len(r.Results))
					}
					for i, g := range r.Results {
						m := res[i]
						if m.Type != g.Type || codeOf(m.Err) != g.Err {
							fail("result %d: type %d err %v, ZooKeeper type %d err %d", i, m.Type, m.Err, g.Type, g.Err)
						}
						if (g.Type == jute.OpCreate || g.Type == jute.OpCreate2) && m.Path != g.Path {
							fail("result %d: path %s, ZooKeeper %s", i, m.Path, g.Path)
						}
						if g.Stat != nil && !slices.Equal(statFields(m.Stat), goldenStat(g.Stat)) {
							fail("result %d: stat %v, ZooKeeper %v", i, statFields(m.Stat), goldenStat(g.Stat))
						}
					}
				default:
					fail("unknown op")
				}
				if c := codeOf(got); c != r.Err {
					fail("error %v (%d), ZooKeeper %d", got, c, r.Err)
				}
				if ev := w.take(); !slices.Equal(ev, r.Events) && !(len(ev) == 0 && len(r.Events) == 0) {
					fail("events %v, ZooKeeper %v", ev, r.Events)
				}
				if tr.LastZxid() != r.Zxid && r.Zxid != 0 && !slices.Contains([]string{"exists", "get", "children", "addwatch", "checkwatches", "removewatches"}, r.Op) {
					fail("LastZxid %d, want %d", tr.LastZxid(), r.Zxid)
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
