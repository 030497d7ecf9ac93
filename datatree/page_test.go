package datatree

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/zkd/zkd/jute"
)

func TestChildrenPage(t *testing.T) {
	h := newHarness(t, Config{})
	h.create("/d", jute.ModePersistent)
	var all []string
	for i := range 50 {
		name := fmt.Sprintf("n%03d", (i*37)%50) // created out of order
		h.create("/d/"+name, jute.ModePersistent)
		all = append(all, name)
	}
	h.create("/d/x-only", jute.ModePersistent)
	slices.Sort(all)
	names := func(p ChildPage) []string {
		var out []string
		for _, c := range p.Children {
			out = append(out, c.Name)
		}
		return out
	}
	tests := []struct {
		name, prefix, after string
		limit               int
		want                []string
		matched             int
		more                bool
	}{
		{"first page", "n", "", 10, all[:10], 50, true},
		{"next page", "n", all[9], 10, all[10:20], 50, true},
		{"last page", "n", all[44], 10, all[45:], 50, false},
		{"prefix", "n04", "", 100, all[40:50], 10, false},
		{"every child", "", "", 100, append(slices.Clone(all), "x-only"), 51, false},
		{"after everything", "", "z", 5, nil, 51, false},
		{"limit one", "x", "", 1, []string{"x-only"}, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, st, err := h.tree.ChildrenPage("/d", tc.prefix, tc.after, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(p); !slices.Equal(got, tc.want) {
				t.Errorf("names = %v, want %v", got, tc.want)
			}
			if p.Matched != tc.matched || p.More != tc.more {
				t.Errorf("matched, more = %d, %v; want %d, %v", p.Matched, p.More, tc.matched, tc.more)
			}
			if st.NumChildren != 51 {
				t.Errorf("stat numChildren = %d, want 51", st.NumChildren)
			}
		})
	}
	if _, _, err := h.tree.ChildrenPage("/nope", "", "", 10); !errors.Is(err, ErrNoNode) {
		t.Errorf("missing node: err = %v, want ErrNoNode", err)
	}
	if _, _, err := h.tree.ChildrenPage("/d", "", "", 0); !errors.Is(err, ErrBadArguments) {
		t.Errorf("limit 0: err = %v, want ErrBadArguments", err)
	}
}

func BenchmarkChildrenPage(b *testing.B) {
	h := newHarness(b, Config{})
	h.create("/d", jute.ModePersistent)
	const n = 100_000
	for i := range n {
		h.create(fmt.Sprintf("/d/n%08d", i), jute.ModePersistent)
	}
	for _, bc := range []struct{ name, prefix, after string }{
		{"children=100k/page=first", "", ""},
		{"children=100k/page=middle", "", fmt.Sprintf("n%08d", n/2)},
		{"children=100k/prefix=miss", "x", ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := h.tree.ChildrenPage("/d", bc.prefix, bc.after, 100); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
