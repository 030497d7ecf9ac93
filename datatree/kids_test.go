package datatree

import (
	"bytes"
	"unsafe"

	"fmt"
	"github.com/zkd/zkd/jute"
	"math/rand/v2"
	"testing"
)

// TestKidSet drives a kidSet through list and table sizes, growing and
// shrinking, against a map, checking every lookup and the held count
// after each step.
func TestKidSet(t *testing.T) {
	tests := []struct {
		name  string
		peak  int // children added before removals start
		sized int // newKidSet hint
		seed  uint64
	}{
		{"list only", smallKids, 1, 1},
		{"list to table and back", 40, 1, 2},
		{"large table grows and shrinks", 5000, 1, 3},
		{"presized table", 1000, 1000, 4},
		{"presized list overflows", 30, 3, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 0))
			k := newKidSet(tc.sized)
			model := map[string]*node{}
			check := func(step string) {
				t.Helper()
				if k.size() != len(model) {
					t.Fatalf("%s: size %d, want %d", step, k.size(), len(model))
				}
				held := 0
				for c := range k.all() {
					held++
					if model[c.name()] != c {
						t.Fatalf("%s: holds %q, not in the model", step, c.name())
					}
				}
				if held != len(model) {
					t.Fatalf("%s: iterates %d, want %d", step, held, len(model))
				}
				for name, c := range model {
					if got := k.get(name); got != c {
						t.Fatalf("%s: get(%q) = %p, want %p", step, name, got, c)
					}
				}
				if k.get("absent") != nil {
					t.Fatalf("%s: get(absent) found a node", step)
				}
			}
			for i := 0; i < tc.peak; i++ {
				c := &node{nd: makeNameData(fmt.Sprintf("c%d", rng.Uint32()), nil)}
				if model[c.name()] != nil {
					continue
				}
				k.add(c)
				model[c.name()] = c
				if i%97 == 0 || len(model) <= 2*minKidsTable {
					check(fmt.Sprintf("add %d", i))
				}
			}
			check("peak")
			if tc.peak > smallKids && !k.hashed {
				t.Fatalf("%d children in a list", k.size())
			}
			for len(model) > 0 {
				var victim *node
				for _, c := range model {
					victim = c
					break
				}
				k.remove(victim)
				delete(model, victim.name())
				if len(model)%89 == 0 || len(model) <= 2*minKidsTable {
					check(fmt.Sprintf("remove to %d", len(model)))
				}
			}
			if k.hashed || len(k.slots) != 0 {
				t.Fatalf("empty set: hashed %v, %d slots", k.hashed, len(k.slots))
			}
		})
	}
}

// TestNodeData checks that nil, empty and other data keep their identity
// (after the name they share an allocation with) through create, setData
// and a snapshot round trip, and that a node stays
// in the allocator's 96-byte class.
func TestNodeData(t *testing.T) {
	if sz := unsafe.Sizeof(node{}); sz != 96 {
		t.Errorf("node is %d bytes, want 96", sz)
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"bytes", []byte("lock-holder")},
		// Past the snapshot reader's 64 KiB step, which grows as bytes
		// arrive.
		{"large", bytes.Repeat([]byte("0123456789abcdef"), 5000)},
	}
	h := newHarness(t, DefaultConfig())
	for _, tc := range tests {
		if _, _, err := h.tree.Create(h.tx(1), CreateOp{Path: "/c-" + tc.name, Data: tc.data, ACL: OpenACLUnsafe}); err != nil {
			t.Fatal(err)
		}
		h.create("/s-"+tc.name, jute.ModePersistent)
		if _, err := h.tree.SetData(h.tx(1), "/s-"+tc.name, tc.data, -1); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := h.tree.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	loaded, err := ReadSnapshot(&buf, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []*Tree{h.tree, loaded} {
		for _, tc := range tests {
			for _, p := range []string{"/c-" + tc.name, "/s-" + tc.name} {
				got, st, err := tr.GetData(p, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if (got == nil) != (tc.data == nil) || !bytes.Equal(got, tc.data) || int(st.DataLength) != len(tc.data) {
					t.Errorf("%s: data %q (nil %v), want %q (nil %v)", p, got, got == nil, tc.data, tc.data == nil)
				}
			}
		}
	}
	if h.tree.Digest() != loaded.Digest() {
		t.Error("digest changed through a snapshot")
	}
}
