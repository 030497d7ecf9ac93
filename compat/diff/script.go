package diff

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"

	"github.com/zkd/zkd/jute"
)

// Kind names one step of a script.
type Kind string

// The kinds of step a script holds. Most are one client request; Open and
// Close manage the session in a slot.
const (
	KCreate        Kind = "create"        // OpCreate, OpCreate2, OpCreateContainer or OpCreateTTL (Op.Code)
	KDelete        Kind = "delete"        // delete Path at Version
	KSetData       Kind = "setData"       // setData Path to Data at Version
	KSetACL        Kind = "setACL"        // setACL Path to ACL at Version
	KExists        Kind = "exists"        // exists Path, Watch
	KGetData       Kind = "getData"       // getData Path, Watch
	KGetChildren   Kind = "getChildren"   // getChildren Path, Watch
	KGetChildren2  Kind = "getChildren2"  // getChildren2 Path, Watch
	KGetACL        Kind = "getACL"        // getACL Path
	KMulti         Kind = "multi"         // multi of Sub
	KMultiRead     Kind = "multiRead"     // multiRead of Sub
	KSync          Kind = "sync"          // sync Path
	KAddWatch      Kind = "addWatch"      // addWatch Path, Mode
	KCheckWatches  Kind = "checkWatches"  // checkWatches Path, Mode (a WatcherType)
	KRemoveWatches Kind = "removeWatches" // removeWatches Path, Mode (a WatcherType)
	KGetEphemerals Kind = "getEphemerals" // getEphemerals with prefix Path
	KAllChildren   Kind = "getAllChildrenNumber"
	KAuth          Kind = "addAuth" // digest auth as Data ("user:password")
	KWhoAmI        Kind = "whoAmI"  // the session's authenticated identities
	// KDeleteContainer is a client's deleteContainer of Path (opcode 20,
	// which only ZooKeeper's container sweep sends).
	KDeleteContainer Kind = "deleteContainer"
	KOpen            Kind = "open"  // open a new session in the slot
	KClose           Kind = "close" // closeSession on the slot
)

// Op is one step of a script, sent on session slot Session. Paths are
// relative to the run's root ("" is the root itself, "a/x" is root/a/x).
type Op struct {
	Session int
	Kind    Kind
	Code    int32 // opcode of a create or of a multi sub-operation
	Path    string
	Data    string
	Version int32
	Mode    int32 // create flags, addWatch mode or WatcherType
	TTL     int64
	Watch   bool
	ACL     []jute.ACL
	Sub     []Op // operations of a multi or multiRead
}

// Script is a sequence of steps over Sessions slots, all open at the start.
type Script struct {
	Seed     uint64
	Sessions int
	Ops      []Op
}

// users are the digest identities scripts authenticate as.
var users = []string{"u1:p1", "u2:p2", "u3:p3"}

// paths is the small relative path space, so that scripts collide: the root,
// three children, grandchildren, and the first names sequential creates of
// root/s get.
var paths = []string{"", "a", "b", "c", "a/x", "a/y", "b/x", "a/x/q", "s", "s0000000000", "s0000000001", "s0000000002", "zz/none"}

// specialPaths are script paths that are not plain names under the run's
// root: malformed ones (ZooKeeper answers BadArguments before anything
// else) and ZooKeeper's system nodes, which scripts read and try to
// change. Their key is what Op.Path holds.
var specialPaths = map[string]struct {
	path     string // appended to the root, or used as is when absolute
	absolute bool
}{
	"!trailing":  {path: "/a/"},
	"!double":    {path: "//a"},
	"!dot":       {path: "/./a"},
	"!dotdot":    {path: "/a/../b"},
	"!relative":  {path: "diff-relative/a", absolute: true},
	"!empty":     {path: "", absolute: true},
	"!zookeeper": {path: "/zookeeper", absolute: true},
	"!quota":     {path: "/zookeeper/quota", absolute: true},
	"!config":    {path: "/zookeeper/config", absolute: true},
	"!zkchild":   {path: "/zookeeper/x", absolute: true},
}

// special picks one of specialPaths.
func (g *gen) special() string {
	// Not "!empty": reads of the empty path answer for the server's root,
	// whose children are every run's root. Only creates use it.
	keys := []string{"!trailing", "!double", "!dot", "!dotdot", "!relative", "!zookeeper", "!quota", "!config", "!zkchild"}
	return keys[g.r.IntN(len(keys))]
}

// Generate returns a seeded random script of n steps over 2–4 sessions. The
// same seed always gives the same script.
func Generate(seed uint64, n int) Script {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &gen{r: r}
	s := Script{Seed: seed, Sessions: 2 + r.IntN(3)}
	open := make([]bool, s.Sessions)
	for i := range open {
		open[i] = true
	}
	// Most steps name root/a, root/b and root/c or their children: create
	// them first, mostly as plain persistent nodes.
	for _, p := range []string{"a", "b", "c", "a/x"} {
		if len(s.Ops) == n {
			break
		}
		op := g.create()
		op.Path = p
		if r.IntN(3) > 0 {
			op.Code, op.Mode, op.TTL, op.ACL = jute.OpCreate2, jute.ModePersistent, 0, worldAll
		}
		op.Session = r.IntN(s.Sessions)
		s.Ops = append(s.Ops, op)
	}
	// Persistent watches make most later writes visible as events: often
	// one session watches the whole root recursively, another root/a.
	if r.IntN(3) > 0 && len(s.Ops) < n {
		s.Ops = append(s.Ops, Op{Session: r.IntN(s.Sessions), Kind: KAddWatch, Mode: jute.AddWatchModePersistentRecursive})
	}
	if r.IntN(2) == 0 && len(s.Ops) < n {
		s.Ops = append(s.Ops, Op{Session: r.IntN(s.Sessions), Kind: KAddWatch, Path: "a", Mode: jute.AddWatchModePersistent})
	}
	for len(s.Ops) < n {
		slot := r.IntN(s.Sessions)
		if !open[slot] {
			s.Ops = append(s.Ops, Op{Session: slot, Kind: KOpen})
			open[slot] = true
			continue
		}
		op := g.op()
		if op.Kind == KClose {
			open[slot] = false
		}
		op.Session = slot
		s.Ops = append(s.Ops, op)
	}
	return s
}

type gen struct{ r *rand.Rand }

func (g *gen) path() string { return paths[g.r.IntN(len(paths))] }

// shallow picks mostly the paths that usually exist or can be created:
// the root's children most often, then grandchildren, then the rest.
func (g *gen) shallow() string {
	switch n := g.r.IntN(20); {
	case n < 2:
		return ""
	case n < 11:
		return paths[1+g.r.IntN(3)]
	case n < 16:
		return paths[4+g.r.IntN(3)]
	case n == 19 && g.r.IntN(2) == 0:
		return g.special()
	}
	return g.path()
}

// victim picks a path to delete: never the root, whose deletion would end
// the interesting part of a script.
func (g *gen) victim() string {
	for {
		if p := g.shallow(); p != "" {
			return p
		}
	}
}

func (g *gen) version() int32 {
	switch g.r.IntN(6) {
	case 0, 1, 2:
		return -1
	case 3:
		return 1
	case 4:
		return 7
	}
	return 0
}

func (g *gen) data() string {
	return []string{"", "d1", "data-two", "x", strings.Repeat("k", 1000)}[g.r.IntN(5)]
}

func (g *gen) acl() []jute.ACL {
	perm := func() int32 {
		if g.r.IntN(2) == 0 {
			return jute.PermAll
		}
		return int32(g.r.IntN(32))
	}
	var out []jute.ACL
	for range 1 + g.r.IntN(2) {
		var id jute.Id
		switch g.r.IntN(7) {
		case 0, 1, 2:
			id = jute.Id{Scheme: "world", Id: "anyone"}
		case 3:
			id = jute.Id{Scheme: "digest", Id: Digest(users[g.r.IntN(len(users))])}
		case 4:
			id = jute.Id{Scheme: "auth", Id: ""}
		case 5:
			id = jute.Id{Scheme: "ip", Id: []string{"127.0.0.1", "10.0.0.0/8", "127.0.0.0/8", "999.1.1.1", "127.0.0.1/40", "::1"}[g.r.IntN(6)]}
		case 6:
			id = jute.Id{Scheme: []string{"world", "nosuch", "digest"}[g.r.IntN(3)], Id: "bogus"}
		}
		out = append(out, jute.ACL{Perms: perm(), Id: id})
	}
	if g.r.IntN(25) == 0 {
		return []jute.ACL{}
	}
	if g.r.IntN(3) > 0 {
		return out[:1:1]
	}
	return out
}

func (g *gen) createACL() []jute.ACL {
	if g.r.IntN(3) > 0 {
		return []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}
	}
	return g.acl()
}

func (g *gen) create() Op {
	op := Op{Kind: KCreate, Path: g.shallow(), Data: g.data(), ACL: g.createACL()}
	if g.r.IntN(100) == 0 {
		op.Path = "!empty"
	}
	switch g.r.IntN(10) {
	case 0, 1, 2:
		op.Code, op.Mode = jute.OpCreate, int32(g.r.IntN(4))
	case 3, 4, 5:
		op.Code, op.Mode = jute.OpCreate2, int32(g.r.IntN(4))
	case 6:
		op.Code, op.Mode = jute.OpCreateContainer, jute.ModeContainer
	case 7, 8:
		op.Code, op.Mode = jute.OpCreateTTL, jute.ModePersistentWithTTL+int32(g.r.IntN(2))
		op.TTL = []int64{60_000_000, 3_600_000, 0, -5}[g.r.IntN(4)]
	case 9: // unusual combinations: a mode the opcode does not take
		op.Code = []int32{jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL}[g.r.IntN(4)]
		op.Mode = int32(g.r.IntN(7))
		op.TTL = 60_000_000
	}
	if op.Code != jute.OpCreateTTL && op.Mode >= jute.ModePersistentWithTTL {
		op.TTL = 0
	}
	if op.Mode == jute.ModePersistentSequential || op.Mode == jute.ModeEphemeralSequential || op.Mode == jute.ModePersistentSequentialWithTTL {
		// A sequential name outside the run's root would depend on every
		// other run (the parent's cversion), so those go under root/s.
		if sp, ok := specialPaths[op.Path]; g.r.IntN(2) == 0 || op.Path == "" || ok && sp.absolute {
			op.Path = "s"
		}
	}
	return op
}

// watcherType is a WatcherType, now and then an invalid one.
func (g *gen) watcherType() int32 {
	if g.r.IntN(15) == 0 {
		return []int32{0, 4}[g.r.IntN(2)]
	}
	return 1 + int32(g.r.IntN(3))
}

// watchMode is an addWatch mode, now and then an invalid one.
func (g *gen) watchMode() int32 {
	if g.r.IntN(15) == 0 {
		return []int32{2, -1}[g.r.IntN(2)]
	}
	return int32(g.r.IntN(2))
}

func (g *gen) op() Op {
	switch n := g.r.IntN(100); {
	case n < 22:
		return g.create()
	case n < 30:
		return Op{Kind: KDelete, Path: g.victim(), Version: g.version()}
	case n < 38:
		return Op{Kind: KSetData, Path: g.shallow(), Data: g.data(), Version: g.version()}
	case n < 42:
		return Op{Kind: KSetACL, Path: g.shallow(), ACL: g.acl(), Version: g.version()}
	case n < 48:
		return Op{Kind: KExists, Path: g.shallow(), Watch: g.r.IntN(4) > 0}
	case n < 53:
		return Op{Kind: KGetData, Path: g.shallow(), Watch: g.r.IntN(3) > 0}
	case n < 57:
		return Op{Kind: KGetChildren, Path: g.shallow(), Watch: g.r.IntN(3) > 0}
	case n < 61:
		return Op{Kind: KGetChildren2, Path: g.shallow(), Watch: g.r.IntN(3) > 0}
	case n < 63:
		return Op{Kind: KGetACL, Path: g.shallow()}
	case n < 70:
		return g.multi()
	case n < 73:
		return g.multiRead()
	case n < 74:
		return Op{Kind: KSync, Path: g.shallow()}
	case n < 78:
		return Op{Kind: KAddWatch, Path: g.shallow(), Mode: g.watchMode()}
	case n < 81:
		return Op{Kind: KCheckWatches, Path: g.shallow(), Mode: g.watcherType()}
	case n < 84:
		return Op{Kind: KRemoveWatches, Path: g.shallow(), Mode: g.watcherType()}
	case n < 86:
		return Op{Kind: KGetEphemerals, Path: []string{"", "a", "s"}[g.r.IntN(3)]}
	case n < 88:
		return Op{Kind: KAllChildren, Path: g.shallow()}
	case n < 96:
		return Op{Kind: KAuth, Data: users[g.r.IntN(len(users))]}
	case n < 97:
		return Op{Kind: KDeleteContainer, Path: g.shallow()}
	case n < 98:
		return Op{Kind: KWhoAmI}
	default:
		return Op{Kind: KClose}
	}
}

func (g *gen) multi() Op {
	op := Op{Kind: KMulti}
	switch g.r.IntN(40) {
	case 0:
		return op // an empty multi
	case 1: // only reads, sent as a multi rather than a multiRead
		op.Sub = []Op{{Kind: KGetData, Path: g.shallow()}}
		return op
	}
	for range 1 + g.r.IntN(4) {
		var sub Op
		switch g.r.IntN(5) {
		case 0, 1:
			sub = g.create()
			if sub.Code == jute.OpCreateTTL && sub.TTL <= 0 {
				sub.TTL = 60_000_000
			}
		case 2:
			sub = Op{Kind: KDelete, Path: g.victim(), Version: g.version()}
		case 3:
			sub = Op{Kind: KSetData, Path: g.shallow(), Data: g.data(), Version: g.version()}
		case 4:
			sub = Op{Kind: "check", Code: jute.OpCheck, Path: g.shallow(), Version: g.version()}
		}
		op.Sub = append(op.Sub, sub)
	}
	if g.r.IntN(30) == 0 { // a read inside a multi: ZooKeeper refuses the mix
		op.Sub = append(op.Sub, Op{Kind: KGetData, Path: g.shallow()})
	}
	return op
}

func (g *gen) multiRead() Op {
	op := Op{Kind: KMultiRead}
	if g.r.IntN(10) == 0 { // only writes, sent as a multiRead
		op.Sub = []Op{{Kind: KDelete, Path: g.victim(), Version: -1}}
		return op
	}
	if g.r.IntN(30) == 0 { // a write inside a multiRead
		op.Sub = append(op.Sub, Op{Kind: KSetData, Path: g.shallow(), Version: -1})
	}
	for range 1 + g.r.IntN(3) {
		if g.r.IntN(2) == 0 {
			op.Sub = append(op.Sub, Op{Kind: KGetData, Path: g.shallow()})
		} else {
			op.Sub = append(op.Sub, Op{Kind: KGetChildren, Path: g.shallow()})
		}
	}
	return op
}

// Without returns s without the steps and multi sub-operations whose
// rendering (Op.String without the session) matches re, for long runs that
// look past a known difference.
func (s Script) Without(re *regexp.Regexp) Script {
	if re == nil {
		return s
	}
	out := s
	out.Ops = nil
	for _, o := range s.Ops {
		if re.MatchString(o.body()) {
			continue
		}
		if len(o.Sub) > 0 {
			o.Sub = slices.DeleteFunc(slices.Clone(o.Sub), func(x Op) bool { return re.MatchString(x.body()) })
			if len(o.Sub) == 0 {
				continue
			}
		}
		out.Ops = append(out.Ops, o)
	}
	return out
}

// String renders the step as one readable line, e.g.
// `s1 create2 /R/a/x mode=ephemeral data="d1" acl=[world:anyone:31]`.
func (o Op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "s%d ", o.Session)
	b.WriteString(o.body())
	return b.String()
}

func (o Op) body() string {
	p := "/R"
	if sp, ok := specialPaths[o.Path]; ok {
		if sp.absolute {
			p = fmt.Sprintf("%q", sp.path)
		} else {
			p = fmt.Sprintf("%q", p+sp.path)
		}
	} else if o.Path != "" {
		p += "/" + o.Path
	}
	switch o.Kind {
	case KCreate:
		s := fmt.Sprintf("%s %s mode=%d data=%s acl=%s", jute.OpName(o.Code), p, o.Mode, shortData([]byte(o.Data)), aclString(o.ACL))
		if o.Code == jute.OpCreateTTL || o.TTL != 0 {
			s += fmt.Sprintf(" ttl=%d", o.TTL)
		}
		return s
	case KDelete, "check":
		return fmt.Sprintf("%s %s version=%d", o.Kind, p, o.Version)
	case KSetData:
		return fmt.Sprintf("setData %s data=%s version=%d", p, shortData([]byte(o.Data)), o.Version)
	case KSetACL:
		return fmt.Sprintf("setACL %s acl=%s version=%d", p, aclString(o.ACL), o.Version)
	case KExists, KGetData, KGetChildren, KGetChildren2:
		return fmt.Sprintf("%s %s watch=%v", o.Kind, p, o.Watch)
	case KMulti, KMultiRead:
		parts := make([]string, len(o.Sub))
		for i, s := range o.Sub {
			parts[i] = s.body()
		}
		return fmt.Sprintf("%s [%s]", o.Kind, strings.Join(parts, "; "))
	case KAddWatch, KCheckWatches, KRemoveWatches:
		return fmt.Sprintf("%s %s mode=%d", o.Kind, p, o.Mode)
	case KAuth:
		return fmt.Sprintf("addAuth digest %s", o.Data)
	case KOpen, KClose, KWhoAmI:
		return string(o.Kind)
	}
	return fmt.Sprintf("%s %s", o.Kind, p)
}

func aclString(acl []jute.ACL) string {
	parts := make([]string, len(acl))
	for i, a := range acl {
		parts[i] = fmt.Sprintf("%s:%s:%d", a.Id.Scheme, a.Id.Id, a.Perms)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// String renders the script, one numbered step a line.
func (s Script) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %d sessions, %d steps:\n", s.Seed, s.Sessions, len(s.Ops))
	for i, o := range s.Ops {
		fmt.Fprintf(&b, "  %3d  %s\n", i, o)
	}
	return b.String()
}
