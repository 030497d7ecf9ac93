package quorum_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zkd/zkd/quorum"
	"github.com/zkd/zkd/quorum/quorumtest"
)

// TestProgressOnEveryMember: the leader's table of each member's applied
// zxid, lag and readiness reaches every member, observers included; a
// stopped member turns "not in touch" in it, and a member without a
// leader has no table.
func TestProgressOnEveryMember(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{Members: 4, Observers: 1})
	l := c.WaitLeader(5 * time.Second)
	c.Ready(5 * time.Second)
	s := newSession(t, c.Member(l), 30000)
	if res := wait(t, create(c.Member(l), s, "/progress", "x")); res.Err != nil {
		t.Fatal(res.Err)
	}
	zxid := c.Member(l).LastZxid()
	// describe is a member's table in short, "" when it has none.
	describe := func(i int) string {
		p, ok := c.Member(i).Progress()
		if !ok {
			return ""
		}
		out := fmt.Sprintf("leader %d:", p.LeaderID)
		for _, mp := range p.Members {
			out += fmt.Sprintf(" %d leader=%v observer=%v ready=%v touch=%v zxid=%v", mp.ID, mp.Leader, mp.Observer, mp.Ready, mp.InTouch, mp.Zxid >= zxid)
		}
		return out
	}
	leaderID := int64(l + 1)
	want := func(down int64) string {
		out := fmt.Sprintf("leader %d:", leaderID)
		n := int64(c.Len()) // the last member is the observer
		for id := int64(1); id <= n; id++ {
			up := id != down
			out += fmt.Sprintf(" %d leader=%v observer=%v ready=%v touch=%v zxid=true", id, id == leaderID, id == n, up, up)
		}
		return out
	}
	for i := 0; i < c.Len(); i++ {
		var got string
		deadline := time.Now().Add(5 * time.Second)
		for got = describe(i); got != want(0) && time.Now().Before(deadline); got = describe(i) {
			time.Sleep(10 * time.Millisecond)
		}
		if got != want(0) {
			t.Fatalf("member %d's table:\n%s\nwant\n%s", i+1, got, want(0))
		}
	}
	// targets is whom the leader would hand leadership to if its disk
	// stalled: the ready voters but itself.
	targets := func(down int64) string {
		out := ""
		for id := int64(1); id < int64(c.Len()); id++ {
			if id != leaderID && id != down {
				out += fmt.Sprint(id)
			}
		}
		return out
	}
	gotTargets := func() string {
		ids := quorum.HandoffTargets(c.Member(l))
		slices.Sort(ids)
		out := ""
		for _, id := range ids {
			out += string(id)
		}
		return out
	}
	if got := gotTargets(); got != targets(0) {
		t.Errorf("hand-off targets %q, want the other voters %q", got, targets(0))
	}
	f := follower(c, l)
	c.Stop(f)
	c.WaitFor("the leader's table with the stopped member not in touch", 10*time.Second,
		func() bool { return describe(l) == want(int64(f+1)) })
	if got := gotTargets(); got != targets(int64(f+1)) {
		t.Errorf("hand-off targets %q with member %d stopped, want %q", got, f+1, targets(int64(f+1)))
	}
	if _, ok := (&quorum.Member{}).Progress(); ok {
		t.Error("a member without forwarding (standalone) has a table")
	}
}
