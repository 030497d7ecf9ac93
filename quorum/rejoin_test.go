package quorum

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestVoteFence: a fenced transport answers vote and pre-vote requests
// itself, ungranted, and refuses leadership transfers, without raft ever
// seeing them; its own vote requests are answered at home, ungranted.
// Lifted, requests reach raft again.
func TestVoteFence(t *testing.T) {
	inner, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 2*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	fence := newVoteFence(inner)
	defer fence.Close()
	peer, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 2*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("2"), Addr: []byte(peer.LocalAddr())}

	// Nobody reads fence.Consumer(): a request that got through would go
	// unanswered until the transport's timeout, and fail.
	var vote raft.RequestVoteResponse
	if err := peer.RequestVote("1", fence.LocalAddr(), &raft.RequestVoteRequest{RPCHeader: hdr, Term: 7, LastLogIndex: 100, LastLogTerm: 7}, &vote); err != nil || vote.Granted || vote.Term != 7 {
		t.Fatalf("vote request to a fenced member: %+v, %v; want refused in term 7", vote, err)
	}
	var pre raft.RequestPreVoteResponse
	if err := peer.RequestPreVote("1", fence.LocalAddr(), &raft.RequestPreVoteRequest{RPCHeader: hdr, Term: 8, LastLogIndex: 100, LastLogTerm: 7}, &pre); err != nil || pre.Granted {
		t.Fatalf("pre-vote request to a fenced member: %+v, %v; want refused", pre, err)
	}
	var tn raft.TimeoutNowResponse
	if err := peer.TimeoutNow("1", fence.LocalAddr(), &raft.TimeoutNowRequest{RPCHeader: hdr}, &tn); err == nil || !strings.Contains(err.Error(), "does not vote") {
		t.Fatalf("leadership transfer to a fenced member: %v; want refused", err)
	}
	if got := fence.refused.Load(); got != 2 {
		t.Fatalf("refused %d vote requests, want 2", got)
	}
	// Its own requests: nobody reads peer.Consumer() either.
	if err := fence.RequestVote("2", peer.LocalAddr(), &raft.RequestVoteRequest{RPCHeader: hdr, Term: 9}, &vote); err != nil || vote.Granted {
		t.Fatalf("fenced member asking for a vote: %+v, %v; want refused at home", vote, err)
	}
	if err := fence.RequestPreVote("2", peer.LocalAddr(), &raft.RequestPreVoteRequest{RPCHeader: hdr, Term: 9}, &pre); err != nil || pre.Granted {
		t.Fatalf("fenced member asking for a pre-vote: %+v, %v; want refused at home", pre, err)
	}

	fence.fenced.Store(false)
	done := make(chan error, 1)
	go func() {
		done <- peer.RequestVote("1", fence.LocalAddr(), &raft.RequestVoteRequest{RPCHeader: hdr, Term: 10}, &vote)
	}()
	select {
	case rpc := <-fence.Consumer():
		if _, ok := rpc.Command.(*raft.RequestVoteRequest); !ok {
			t.Fatalf("raft got %T, want the vote request", rpc.Command)
		}
		rpc.Respond(&raft.RequestVoteResponse{Term: 10, Granted: true}, nil)
	case <-time.After(5 * time.Second):
		t.Fatal("vote request did not reach raft once the fence was lifted")
	}
	if err := <-done; err != nil || !vote.Granted {
		t.Fatalf("vote after the fence was lifted: %+v, %v", vote, err)
	}
}
