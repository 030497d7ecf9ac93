package wal

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	raftbench "github.com/hashicorp/raft/bench"
)

// benchSegmentSize keeps the segments of benchmarks at 8 MiB: a benchmark
// function runs several times with growing b.N, each time on a new log
// whose first segment is preallocated by writing zeros.
const benchSegmentSize = 8 << 20

// openBench opens a log with real fdatasyncs, as production runs.
func openBench(b *testing.B) *Log {
	l, err := Open(Options{Dir: b.TempDir(), SegmentSize: benchSegmentSize})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	b.ReportAllocs()
	return l
}

// BenchmarkStore runs hashicorp/raft's LogStore benchmarks. It has the name
// and sub-benchmark names of zab/store's BenchmarkStore so that benchstat
// pairs the two backends.
func BenchmarkStore(b *testing.B) {
	for _, bc := range []struct {
		name string
		fn   func(*testing.B, *Log)
	}{
		{"op=FirstIndex", func(b *testing.B, l *Log) { raftbench.FirstIndex(b, l) }},
		{"op=LastIndex", func(b *testing.B, l *Log) { raftbench.LastIndex(b, l) }},
		{"op=GetLog", func(b *testing.B, l *Log) { raftbench.GetLog(b, l) }},
		{"op=StoreLog", func(b *testing.B, l *Log) { raftbench.StoreLog(b, l) }},
		{"op=StoreLogs", func(b *testing.B, l *Log) { raftbench.StoreLogs(b, l) }},
		{"op=DeleteRange", benchDeleteRange},
	} {
		b.Run(bc.name, func(b *testing.B) { bc.fn(b, openBench(b)) })
	}
}

// benchDeleteRange is raftbench.DeleteRange for a log that refuses gaps:
// raftbench stores indexes 10n..10n+2 for each n, which a monotonic log
// rejects, so this stores every index 0..10N-1 (the same ranges, filled)
// and then, like raftbench, deletes [10n, 10n+9] from the front for each n.
func benchDeleteRange(b *testing.B, l *Log) {
	logs := make([]*raft.Log, 0, 10*b.N)
	for i := range 10 * b.N {
		logs = append(logs, &raft.Log{Index: uint64(i), Data: []byte("data")})
	}
	if err := l.StoreLogs(logs); err != nil {
		b.Fatalf("err: %s", err)
	}
	b.ResetTimer()
	for n := range b.N {
		offset := 10 * n
		if err := l.DeleteRange(uint64(offset), uint64(offset+9)); err != nil {
			b.Fatalf("err: %s", err)
		}
	}
}

// BenchmarkAppend appends batches of entries of a given size, each batch
// one pwrite and one fdatasync, across segment rotations.
func BenchmarkAppend(b *testing.B) {
	for _, batch := range []int{1, 64} {
		for _, size := range []int{256, 4096} {
			b.Run(fmt.Sprintf("batch=%d/size=%dB", batch, size), func(b *testing.B) {
				l := openBench(b)
				data := make([]byte, size)
				logs := make([]*raft.Log, batch)
				for i := range logs {
					logs[i] = &raft.Log{Type: raft.LogCommand, Term: 1, Data: data}
				}
				b.SetBytes(int64(batch * size))
				b.ResetTimer()
				next := uint64(1)
				for range b.N {
					for _, e := range logs {
						e.Index = next
						next++
					}
					if err := l.StoreLogs(logs); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkGetLog reads entries of a given size, spread over the log.
func BenchmarkGetLog(b *testing.B) {
	for _, size := range []int{256, 4096} {
		b.Run(fmt.Sprintf("size=%dB", size), func(b *testing.B) {
			l := openBench(b)
			const entries = 1024
			logs := make([]*raft.Log, entries)
			for i := range logs {
				logs[i] = &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Term: 1, Data: make([]byte, size)}
			}
			if err := l.StoreLogs(logs); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ResetTimer()
			var e raft.Log
			for i := range b.N {
				if err := l.GetLog(uint64(i%entries+1), &e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
