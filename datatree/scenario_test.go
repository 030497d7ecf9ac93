package datatree

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zkd/zkd/jute"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.txt with the actual output")

// TestScenarios runs testdata/*.txt. Each block is a command line, a line
// "----", the expected output and a blank line. Commands:
//
//	create PATH [data=S] [mode=M] [ttl=N] [session=N] [as=user:pw] [time=N]
//	delete PATH [version=N]
//	set PATH DATA [version=N]
//	get|exists|children PATH [watch=NAME]
//	addwatch PATH persistent|recursive NAME
//	close SESSION
//	expire PATH time=N  /  candidates time=N
//	events NAME   (events the watcher got since last asked)
//	tree          (every node with its client-visible stat)
//
// Zxids start at 1 and grow by one per write; time is 1000*zxid unless
// given.
func TestScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scenarios")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s := &scenario{t: t, tree: New(Config{ExtendedTypes: true}), watchers: map[string]*recorder{}}
			var out strings.Builder
			blocks := strings.Split(strings.TrimRight(string(raw), "\n")+"\n", "\n\n")
			for _, b := range blocks {
				b = strings.TrimLeft(b, "\n")
				if strings.TrimSpace(b) == "" {
					continue
				}
				cmd, want, ok := strings.Cut(b, "\n----\n")
				if !ok {
					cmd, want = strings.TrimSuffix(b, "\n----\n"), ""
					cmd = strings.TrimSuffix(cmd, "\n----")
				}
				cmd = strings.TrimSpace(cmd)
				got := s.run(cmd)
				if !*rewrite && strings.TrimSpace(got) != strings.TrimSpace(want) {
					t.Errorf("%s:\n%s\ngot:\n%s\nwant:\n%s", file, cmd, got, want)
				}
				fmt.Fprintf(&out, "%s\n----\n%s\n", cmd, strings.TrimSpace(got))
				if strings.TrimSpace(got) != "" {
					out.WriteString("\n")
				}
				if err := s.tree.CheckInvariants(); err != nil {
					t.Fatalf("after %q: %v", cmd, err)
				}
			}
			if *rewrite {
				if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

type scenario struct {
	t        *testing.T
	tree     *Tree
	zxid     int64
	watchers map[string]*recorder
}

var modes = map[string]int32{
	"persistent": jute.ModePersistent, "ephemeral": jute.ModeEphemeral,
	"pseq": jute.ModePersistentSequential, "eseq": jute.ModeEphemeralSequential,
	"container": jute.ModeContainer, "ttl": jute.ModePersistentWithTTL, "sttl": jute.ModePersistentSequentialWithTTL,
}

func (s *scenario) watcher(name string) Watcher {
	if name == "" {
		return nil
	}
	w := s.watchers[name]
	if w == nil {
		w = &recorder{name: name}
		s.watchers[name] = w
	}
	return w
}

func errText(err error) string {
	var e interface{ Code() jute.Code }
	if errors.As(err, &e) {
		return fmt.Sprintf("error: %s (%d)", e.Code().Error(), int32(e.Code()))
	}
	return "error: " + err.Error()
}

func statText(st jute.Stat) string {
	return fmt.Sprintf("czxid=%d mzxid=%d pzxid=%d version=%d cversion=%d aversion=%d owner=%#x len=%d children=%d",
		st.Czxid, st.Mzxid, st.Pzxid, st.Version, st.Cversion, st.Aversion, st.EphemeralOwner, st.DataLength, st.NumChildren)
}

func (s *scenario) run(line string) string {
	f := strings.Fields(line)
	args := map[string]string{}
	var pos []string
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, a)
		}
	}
	num := func(k string, def int64) int64 {
		if v, ok := args[k]; ok {
			n, err := strconv.ParseInt(v, 0, 64)
			if err != nil {
				s.t.Fatalf("%s: bad %s", line, k)
			}
			return n
		}
		return def
	}
	tx := func() *Txn {
		s.zxid++
		tx := &Txn{Zxid: s.zxid, Time: num("time", 1000*s.zxid), SessionID: num("session", 1)}
		if as := args["as"]; as != "" {
			u, p, _ := strings.Cut(as, ":")
			tx.Auth = []jute.Id{{Scheme: "digest", Id: DigestID(u, p)}}
		}
		return tx
	}
	arg := func(i int) string {
		if i < len(pos) {
			return pos[i]
		}
		return ""
	}
	switch f[0] {
	case "create":
		op := CreateOp{Path: arg(0), ACL: OpenACLUnsafe, Mode: modes[args["mode"]], TTL: num("ttl", 0)}
		if d, ok := args["data"]; ok {
			op.Data = []byte(d)
		}
		if args["as"] != "" {
			op.ACL = CreatorAllACL
		}
		p, st, err := s.tree.Create(tx(), op)
		if err != nil {
			return errText(err)
		}
		return p + " " + statText(st)
	case "delete":
		if err := s.tree.Delete(tx(), arg(0), int32(num("version", -1))); err != nil {
			return errText(err)
		}
		return "ok"
	case "set":
		st, err := s.tree.SetData(tx(), arg(0), []byte(arg(1)), int32(num("version", -1)))
		if err != nil {
			return errText(err)
		}
		return statText(st)
	case "get":
		d, st, err := s.tree.GetData(arg(0), nil, s.watcher(args["watch"]))
		if err != nil {
			return errText(err)
		}
		return fmt.Sprintf("%q %s", d, statText(st))
	case "exists":
		st, err := s.tree.Exists(arg(0), s.watcher(args["watch"]))
		if err != nil {
			return errText(err)
		}
		return statText(st)
	case "children":
		c, _, err := s.tree.GetChildren(arg(0), nil, s.watcher(args["watch"]))
		if err != nil {
			return errText(err)
		}
		return "[" + strings.Join(c, " ") + "]"
	case "addwatch":
		mode := jute.AddWatchModePersistent
		if arg(1) == "recursive" {
			mode = jute.AddWatchModePersistentRecursive
		}
		if err := s.tree.AddWatch(arg(0), s.watcher(arg(2)), mode); err != nil {
			return errText(err)
		}
		return "ok"
	case "close":
		sess, _ := strconv.ParseInt(arg(0), 0, 64)
		s.tree.CloseSession(tx(), sess)
		return "ok"
	case "expire":
		if err := s.tree.DeleteExpired(tx(), arg(0)); err != nil {
			return errText(err)
		}
		return "ok"
	case "candidates":
		return "[" + strings.Join(s.tree.ExpiryCandidates(num("time", 0), 0), " ") + "]"
	case "events":
		return strings.Join(s.watchers[arg(0)].take(), "\n")
	case "tree":
		var b strings.Builder
		s.tree.mu.RLock()
		s.tree.forEachSorted(func(n *node) {
			fmt.Fprintf(&b, "%s %s\n", n.path(), statText(s.tree.clientStat(n)))
		})
		s.tree.mu.RUnlock()
		return b.String()
	}
	s.t.Fatalf("unknown command %q", line)
	return ""
}
