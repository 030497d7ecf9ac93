package datatree

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
)

// benchZnodes is how many znodes the memory benchmarks build:
// ZKD_BENCH_ZNODES, default 1,000,000.
func benchZnodes(b *testing.B) int {
	n := 1_000_000
	if v := os.Getenv("ZKD_BENCH_ZNODES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 {
			b.Fatalf("ZKD_BENCH_ZNODES=%q: want an integer of at least 1000", v)
		}
	}
	return n
}

// memTree builds about n znodes of 32 bytes through Create, in one of two
// shapes: "locks" is /locks/rNNNNNN resource directories each holding three
// ephemeral-sequential Curator-style lock nodes
// (_c_<uuid>-lock-NNNNNNNNNN), owned by 1,000 sessions; "flat" is /a/b
// holding n persistent nodes nNNNNNNN. Three ACL lists are shared.
func memTree(b *testing.B, shape string, n int) *Tree {
	b.Helper()
	tr := New(DefaultConfig())
	tx := &Txn{Time: 1_700_000_000_000}
	data := bytes.Repeat([]byte{'x'}, 32)
	acls := [][]jute.ACL{OpenACLUnsafe, ReadACLUnsafe,
		{{Perms: jute.PermAll, Id: jute.Id{Scheme: "digest", Id: DigestID("svc", "pw")}}}}
	// Directories are open; leaves take the three lists in turn.
	mk := func(path string, mode int32, i int) {
		tx.Zxid++
		tx.SessionID = int64(i%1000) + 1
		acl := acls[0]
		if mode != jute.ModePersistent || shape == "flat" {
			acl = acls[i%len(acls)]
		}
		if _, _, err := tr.Create(tx, CreateOp{Path: path, Data: data, ACL: acl, Mode: mode}); err != nil {
			b.Fatalf("create %s: %v", path, err)
		}
	}
	switch shape {
	case "locks":
		mk("/locks", jute.ModePersistent, 0)
		for r := 0; tr.nodes < n; r++ {
			dir := fmt.Sprintf("/locks/r%06d", r)
			mk(dir, jute.ModePersistent, r)
			for k := 0; k < 3; k++ {
				// A UUID-shaped name from the counter: deterministic, and
				// spread like real ones.
				u := uint64(r)*3 + uint64(k) + 1
				u *= 0x9e3779b97f4a7c15
				mk(fmt.Sprintf("%s/_c_%08x-%04x-%04x-%04x-%012x-lock-", dir, uint32(u>>32), uint16(u>>16), uint16(u), uint16(u>>48), u&0xffffffffffff),
					jute.ModeEphemeralSequential, r*3+k)
			}
		}
	case "flat":
		mk("/a", jute.ModePersistent, 0)
		mk("/a/b", jute.ModePersistent, 0)
		for i := 0; tr.nodes < n; i++ {
			mk(fmt.Sprintf("/a/b/n%07d", i), jute.ModePersistent, i+1)
		}
	default:
		b.Fatalf("unknown shape %q", shape)
	}
	return tr
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// benchKeep holds the last loaded tree so that -memprofile, written when
// the run ends, shows it.
var benchKeep *Tree

// BenchmarkZnodeMemory reports the live heap per znode of a tree loaded
// from a snapshot (what a member holds after a restart), the time to load
// it and the snapshot's size, for 1M (ZKD_BENCH_ZNODES) znodes of 32 bytes
// in the lock-service and flat shapes. Profile where the bytes go with
//
//	go test -run '^$' -bench ZnodeMemory/shape=locks -benchtime 1x -memprofile /tmp/mem.out ./datatree/
//	go tool pprof -sample_index=inuse_space /tmp/mem.out
func BenchmarkZnodeMemory(b *testing.B) {
	n := benchZnodes(b)
	for _, shape := range []string{"locks", "flat"} {
		b.Run("shape="+shape, func(b *testing.B) {
			tr := memTree(b, shape, n)
			var buf bytes.Buffer
			if err := tr.WriteSnapshot(&buf); err != nil {
				b.Fatal(err)
			}
			nodes := tr.nodes
			tr, benchKeep = nil, nil
			snap := buf.Bytes()
			var load time.Duration
			var perNode float64
			for i := 0; i < b.N; i++ {
				base := heapInUse()
				start := time.Now()
				loaded, err := ReadSnapshot(bytes.NewReader(snap), DefaultConfig())
				load += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				perNode = float64(heapInUse()-base) / float64(nodes)
				benchKeep = loaded
			}
			b.ReportMetric(perNode, "heap-B/znode")
			b.ReportMetric(load.Seconds()/float64(b.N), "load-s")
			b.ReportMetric(float64(len(snap))/float64(nodes), "snap-B/znode")
		})
	}
}
