package verify

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/zkd/zkd/zab/fencing"
)

func signer(t testing.TB, b byte) *fencing.Signer {
	t.Helper()
	s, err := fencing.NewSigner(bytes.Repeat([]byte{b}, fencing.SeedLen))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func token(s *fencing.Signer, lock string, czxid int64) []byte {
	return s.Sign(&fencing.Token{LockPath: lock, Node: "lock-0000000001", Czxid: czxid, Session: 1, ReadZxid: czxid + 1})
}

// TestCheck walks one verifier through a sequence of tokens: each step's
// outcome depends on the highest czxid accepted before it, per resource.
func TestCheck(t *testing.T) {
	s, other := signer(t, 1), signer(t, 2)
	v, err := New(s.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name     string
		resource string
		token    []byte
		want     error
	}{
		{"first", "", token(s, "/a", 10), nil},
		{"same holder again", "", token(s, "/a", 10), nil},
		{"newer", "", token(s, "/a", 20), nil},
		{"stale", "", token(s, "/a", 10), ErrStale},
		{"other lock path", "", token(s, "/b", 5), nil},
		{"named resource", "table", token(s, "/a", 15), nil},
		{"stale on named", "table", token(s, "/b", 14), ErrStale},
		{"other key", "", token(other, "/a", 30), ErrSignature},
		{"garbage", "", []byte("zkdf1.xx"), fencing.ErrMalformed},
		{"still newest", "", token(s, "/a", 20), nil},
	}
	for _, st := range steps {
		_, err := v.Check(st.resource, st.token)
		if !errors.Is(err, st.want) || (st.want == nil) != (err == nil) {
			t.Fatalf("%s: %v, want %v", st.name, err, st.want)
		}
	}
	var se *StaleError
	if _, err := v.Check("", token(s, "/a", 19)); !errors.As(err, &se) || se.Highest != 20 || se.Czxid != 19 || se.Resource != "/a" {
		t.Fatalf("stale error %v", err)
	}
	for res, want := range map[string]int64{"/a": 20, "/b": 5, "table": 15} {
		if h, ok := v.Highest(res); !ok || h != want {
			t.Errorf("highest of %s: %d %v, want %d", res, h, ok, want)
		}
	}
	v.Observe("/b", 3)
	v.Observe("fresh", 50)
	if h, _ := v.Highest("/b"); h != 5 {
		t.Fatalf("Observe lowered /b to %d", h)
	}
	if _, err := v.Check("fresh", token(s, "/a", 40)); !errors.Is(err, ErrStale) {
		t.Fatalf("token below an observed czxid: %v", err)
	}
	if _, err := New(nil); err == nil {
		t.Fatal("New took an empty key")
	}
}

// TestCheckConcurrent: of tokens checked at once, a later stale one never
// wins over a newer one already accepted, and the highest is the maximum.
func TestCheckConcurrent(t *testing.T) {
	s := signer(t, 1)
	v, _ := New(s.PublicKey())
	var wg sync.WaitGroup
	for i := 1; i <= 64; i++ {
		wg.Add(1)
		go func(cz int64) {
			defer wg.Done()
			if _, err := v.Check("r", token(s, "/a", cz)); err != nil && !errors.Is(err, ErrStale) {
				t.Error(err)
			}
		}(int64(i))
	}
	wg.Wait()
	if h, _ := v.Highest("r"); h != 64 {
		t.Fatalf("highest %d, want 64", h)
	}
}

// BenchmarkVerify measures Check throughput: decode, Ed25519 verify and
// the per-resource compare.
func BenchmarkVerify(b *testing.B) {
	s := signer(b, 1)
	for _, resources := range []int{1, 1000} {
		b.Run(fmt.Sprintf("resources=%d", resources), func(b *testing.B) {
			v, _ := New(s.PublicKey())
			toks := make([][]byte, resources)
			for i := range toks {
				toks[i] = token(s, fmt.Sprintf("/locks/r%d", i), 100)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, err := v.Check("", toks[i%len(toks)]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		})
	}
}
