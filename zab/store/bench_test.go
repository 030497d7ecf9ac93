package store

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
	raftbench "github.com/hashicorp/raft/bench"
)

// openBench opens a store with real fsyncs, as production runs.
func openBench(b *testing.B) *Store {
	s, _ := openTest(b, false)
	b.ReportAllocs()
	return s
}

func BenchmarkStore(b *testing.B) {
	for _, bc := range []struct {
		name string
		fn   func(*testing.B, *Store)
	}{
		{"op=FirstIndex", func(b *testing.B, s *Store) { raftbench.FirstIndex(b, s) }},
		{"op=LastIndex", func(b *testing.B, s *Store) { raftbench.LastIndex(b, s) }},
		{"op=GetLog", func(b *testing.B, s *Store) { raftbench.GetLog(b, s) }},
		{"op=StoreLog", func(b *testing.B, s *Store) { raftbench.StoreLog(b, s) }},
		{"op=StoreLogs", func(b *testing.B, s *Store) { raftbench.StoreLogs(b, s) }},
		{"op=DeleteRange", func(b *testing.B, s *Store) { raftbench.DeleteRange(b, s) }},
		{"op=Set", func(b *testing.B, s *Store) { raftbench.Set(b, s) }},
		{"op=Get", func(b *testing.B, s *Store) { raftbench.Get(b, s) }},
		{"op=SetUint64", func(b *testing.B, s *Store) { raftbench.SetUint64(b, s) }},
		{"op=GetUint64", func(b *testing.B, s *Store) { raftbench.GetUint64(b, s) }},
	} {
		b.Run(bc.name, func(b *testing.B) { bc.fn(b, openBench(b)) })
	}
}

// BenchmarkGroupCommit appends single-entry batches from many goroutines at
// once, as concurrent raft groups or a leader under load would, and reports
// how many WAL fsyncs each appended entry cost: below 1 means Pebble merged
// concurrent commits into shared fsyncs.
func BenchmarkGroupCommit(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		for _, batch := range []int{1, 16} {
			b.Run(fmt.Sprintf("writers=%d/batch=%d", writers, batch), func(b *testing.B) {
				s := openBench(b)
				b.SetBytes(int64(batch * 100))
				var next atomic.Uint64
				var wg sync.WaitGroup
				per := (b.N + writers - 1) / writers
				data := make([]byte, 100)
				syncs0 := s.Metrics().WALSyncs
				b.ResetTimer()
				for w := 0; w < writers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						logs := make([]*raft.Log, batch)
						for i := 0; i < per; i++ {
							base := next.Add(uint64(batch)) - uint64(batch) + 1
							for j := range logs {
								logs[j] = &raft.Log{Index: base + uint64(j), Term: 1, Data: data}
							}
							if err := s.StoreLogs(logs); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				entries := float64(writers * per * batch)
				b.ReportMetric(float64(s.Metrics().WALSyncs-syncs0)/entries, "syncs/entry")
			})
		}
	}
}

// BenchmarkSnapshot writes (Create, Write in 64 KiB pieces, Close with its
// fsync) and reads back a snapshot of the given size.
func BenchmarkSnapshot(b *testing.B) {
	for _, size := range []int{1 << 20, 16 << 20} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		b.Run(fmt.Sprintf("op=write/size=%dMiB", size>>20), func(b *testing.B) {
			s := openBench(b)
			ss := s.SnapshotStore(1)
			b.SetBytes(int64(size))
			for i := 0; i < b.N; i++ {
				sink, err := ss.Create(raft.SnapshotVersionMax, uint64(i+1), 1, raft.Configuration{}, 1, nil)
				if err != nil {
					b.Fatal(err)
				}
				for off := 0; off < size; off += 64 << 10 {
					if _, err := sink.Write(data[off:min(off+64<<10, size)]); err != nil {
						b.Fatal(err)
					}
				}
				if err := sink.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("op=read/size=%dMiB", size>>20), func(b *testing.B) {
			s := openBench(b)
			ss := s.SnapshotStore(1)
			sink, err := ss.Create(raft.SnapshotVersionMax, 1, 1, raft.Configuration{}, 1, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := sink.Write(data); err != nil {
				b.Fatal(err)
			}
			if err := sink.Close(); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 64<<10)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, rc, err := ss.Open(sink.ID())
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.CopyBuffer(io.Discard, rc, buf); err != nil {
					b.Fatal(err)
				}
				_ = rc.Close()
			}
		})
	}
}
