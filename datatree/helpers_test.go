package datatree

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/zkd/zkd/jute"
)

// recorder is a Watcher that remembers its events.
type recorder struct {
	name string
	mu   sync.Mutex
	evs  []jute.WatcherEvent
	auth []jute.Id
}

func (r *recorder) Notify(ev jute.WatcherEvent) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

// take returns and clears the events as "Type:path" strings.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.evs {
		out = append(out, evString(e))
	}
	r.evs = nil
	return out
}

// authRecorder also exposes identities, enabling ACL filtering.
type authRecorder struct{ recorder }

func (r *authRecorder) WatchAuth() []jute.Id { return r.auth }

func evString(e jute.WatcherEvent) string {
	names := map[int32]string{
		jute.EventNodeCreated: "created", jute.EventNodeDeleted: "deleted",
		jute.EventNodeDataChanged: "changed", jute.EventNodeChildrenChanged: "children",
	}
	return names[e.Type] + ":" + e.Path
}

// harness drives a tree with increasing zxids and times.
type harness struct {
	t    testing.TB
	tree *Tree
	zxid int64
}

func newHarness(t testing.TB, cfg Config) *harness {
	return &harness{t: t, tree: New(cfg), zxid: 0x100000000}
}

func (h *harness) tx(session int64, auth ...jute.Id) *Txn {
	h.zxid++
	return &Txn{Zxid: h.zxid, Time: 1000 * h.zxid & 0xffffffff, SessionID: session, Auth: auth}
}

func (h *harness) create(path string, mode int32) string {
	h.t.Helper()
	p, _, err := h.tree.Create(h.tx(1), CreateOp{Path: path, Data: []byte("d"), ACL: OpenACLUnsafe, Mode: mode})
	if err != nil {
		h.t.Fatalf("create %s: %v", path, err)
	}
	return p
}

func (h *harness) check() {
	h.t.Helper()
	if err := h.tree.CheckInvariants(); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) stat(path string) jute.Stat {
	h.t.Helper()
	st, err := h.tree.Exists(path, nil)
	if err != nil {
		h.t.Fatalf("exists %s: %v", path, err)
	}
	return st
}

func wantErr(t testing.TB, what string, got, want error) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Fatalf("%s: unexpected error %v", what, got)
		}
		return
	}
	if !errors.Is(got, want) {
		t.Fatalf("%s: error %v, want %v", what, got, want)
	}
	var ce interface{ Code() jute.Code }
	if !errors.As(got, &ce) || ce.Code() != want.(*Error).Code() {
		t.Fatalf("%s: error %v has no matching Code()", what, got)
	}
}

func digestID(user, pw string) jute.Id { return jute.Id{Scheme: "digest", Id: DigestID(user, pw)} }

func aclFor(perms int32, scheme, id string) []jute.ACL {
	return []jute.ACL{{Perms: perms, Id: jute.Id{Scheme: scheme, Id: id}}}
}

var _ = fmt.Sprint
