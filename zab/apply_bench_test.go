package zab

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
)

// BenchmarkApplyBatch is the apply path of one member: entries of 64
// packed client writes (creates of ephemeral sequential nodes, then their
// deletes, as a lock recipe makes) decoded and applied by the FSM, each
// carrying the proposer's digest as a leader's do. Per op is per write.
func BenchmarkApplyBatch(b *testing.B) {
	const per = 64
	f := newFSM(datatree.DefaultConfig(), zap.NewNop())
	var index uint64
	apply := func(e *entry) {
		if d, ok := f.digests.newest(); ok {
			e.mark = digestMark{version: datatree.DigestVersion, zxid: d.Zxid, digest: d.Digest}
		}
		index++
		f.Apply(&raft.Log{Index: index, Term: 2, Type: raft.LogCommand, Data: e.encode()})
	}
	apply(&entry{kind: kindBatch, time: 1, batch: []queued{{req: Request{Op: jute.OpCreateSession, SessionID: 7, Timeout: 30000}}}})
	apply(&entry{kind: kindBatch, time: 1, batch: []queued{{req: Request{Op: jute.OpCreate, SessionID: 7,
		Body: jute.Encode(&jute.CreateRequest{Path: "/locks", Acl: datatree.OpenACLUnsafe})}}}})
	create := jute.Encode(&jute.CreateRequest{Path: "/locks/lock-", Data: []byte("x"), Acl: datatree.OpenACLUnsafe, Flags: jute.ModeEphemeralSequential})
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += 2 * per {
		e := &entry{kind: kindBatch, time: 2}
		for i := 0; i < per; i++ {
			e.batch = append(e.batch, queued{seq: uint64(i), req: Request{Op: jute.OpCreate, SessionID: 7, Body: create}})
		}
		apply(e)
		kids, _, _ := f.tree.Load().GetChildren("/locks", nil, nil)
		e = &entry{kind: kindBatch, time: 3}
		for _, k := range kids {
			e.batch = append(e.batch, queued{req: Request{Op: jute.OpDelete, SessionID: 7, Body: jute.Encode(&jute.DeleteRequest{Path: fmt.Sprint("/locks/", k), Version: -1})}})
		}
		apply(e)
	}
}
