package zab

import (
	"testing"
	"time"
)

// unanswered is a raft future that raft never answers, as hashicorp/raft
// leaves one that is still in its apply queue when it shuts down.
type unanswered struct{ block chan struct{} }

func (u unanswered) Error() error  { <-u.block; return nil }
func (u unanswered) Index() uint64 { return 0 }
func (u unanswered) Response() any { return nil }

// TestCloseWithUnansweredFutures: Close returns although raft left a
// future unanswered, whether a goroutine Close waits for awaits it (as
// ensureConfig and ensureFencingKey await their barriers) or completeLoop
// does (a batch); whoever waited on it, or on a batch queued behind it,
// learns that the member stopped.
func TestCloseWithUnansweredFutures(t *testing.T) {
	tests := []struct {
		name string
		// hang makes n wait on f and returns the outcomes its waiters get.
		hang func(t *testing.T, n *Node, f unanswered) []func() error
	}{
		{"a barrier's waiter", func(t *testing.T, n *Node, f unanswered) []func() error {
			got := make(chan error, 1)
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				got <- n.awaitRaft(f)
			}()
			return []func() error{func() error { return <-got }}
		}},
		{"a batch completeLoop waits on", func(t *testing.T, n *Node, f unanswered) []func() error {
			stuck, behind := make(chan error, 1), make(chan error, 1)
			n.applyq <- pendingApply{af: f, forwarded: []chan error{stuck}, at: time.Now()}
			for deadline := time.Now().Add(10 * time.Second); len(n.applyq) > 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("completeLoop did not take the batch")
				}
			}
			n.applyq <- pendingApply{af: f, forwarded: []chan error{behind}, at: time.Now()}
			return []func() error{n.forwardedWait(stuck), n.forwardedWait(behind)}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := openNode(t, t.TempDir(), func(c *Config) { c.raftLog = true })
			f := unanswered{block: make(chan struct{})}
			defer close(f.block)
			waiters := tc.hang(t, n, f)
			closed := make(chan error, 1)
			go func() { closed <- n.Close() }()
			select {
			case <-closed:
			case <-time.After(30 * time.Second):
				t.Fatal("Close did not return: it waits on a future raft never answers")
			}
			for i, w := range waiters {
				got := make(chan error, 1)
				go func() { got <- w() }()
				select {
				case err := <-got:
					if raftErr(err) != ErrStopped && err != ErrStopped {
						t.Errorf("waiter %d got %v, want the member's stop", i, err)
					}
				case <-time.After(10 * time.Second):
					t.Errorf("waiter %d still waits after Close", i)
				}
			}
		})
	}
}
