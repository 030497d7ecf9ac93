package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/quorum"
	"github.com/zkd/zkd/quorum/quorumtest"
	"github.com/zkd/zkd/zab"
)

var openACL = []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}

func wait(t *testing.T, f *zab.Future) zab.Result {
	t.Helper()
	select {
	case <-f.Done():
		return f.Result()
	case <-time.After(10 * time.Second):
		t.Fatal("request did not complete within 10s")
		return zab.Result{}
	}
}

func newSession(t *testing.T, m *quorum.Member, timeoutMs int32) int64 {
	t.Helper()
	res := wait(t, m.Submit(&zab.Request{Op: jute.OpCreateSession, Timeout: timeoutMs}))
	if res.Err != nil {
		t.Fatalf("createSession on %s: %v", m.Mode(), res.Err)
	}
	return res.SessionID
}

func create(m *quorum.Member, session int64, path string, data string) *zab.Future {
	body := jute.Encode(&jute.CreateRequest{Path: path, Data: []byte(data), Acl: openACL})
	return m.Submit(&zab.Request{Op: jute.OpCreate, SessionID: session, Body: body})
}

func follower(c *quorumtest.Cluster, leader int) int {
	for i := 0; i < c.Len(); i++ {
		if i != leader && c.Member(i) != nil {
			return i
		}
	}
	return -1
}

func TestEnsembleRoles(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{Members: 4, Observers: 1})
	l := c.WaitLeader(5 * time.Second)
	c.Ready(5 * time.Second)
	counts := map[string]int{}
	for i := 0; i < c.Len(); i++ {
		counts[c.Member(i).Mode()]++
	}
	if counts["leader"] != 1 || counts["follower"] != 2 || counts["observer"] != 1 {
		t.Fatalf("modes %v", counts)
	}
	if c.Member(3).Mode() != "observer" {
		t.Fatalf("member 4 is %s, want observer", c.Member(3).Mode())
	}
	stats := func(want quorum.LeaderStats) func() bool {
		return func() bool {
			ls, ok := c.Member(l).LeaderStats()
			ls.PendingSyncs = 0
			return ok && ls == want
		}
	}
	// Members report in with their touches, every TouchInterval.
	c.WaitFor("leader stats with every member synced", 5*time.Second,
		stats(quorum.LeaderStats{Followers: 3, SyncedFollowers: 2, Observers: 1}))
	f := follower(c, l)
	if _, ok := c.Member(f).LeaderStats(); ok {
		t.Fatal("a follower reports leader stats")
	}
	// A stopped follower drops out of the figures once the serving lease
	// passes, and counts again once it caught up after a restart.
	c.Stop(f)
	c.WaitFor("leader stats without the stopped follower", 10*time.Second,
		stats(quorum.LeaderStats{Followers: 2, SyncedFollowers: 1, Observers: 1}))
	c.Start(f)
	c.WaitFor("leader stats with the follower back", 10*time.Second,
		stats(quorum.LeaderStats{Followers: 3, SyncedFollowers: 2, Observers: 1}))
}

// TestWritesAnywhere sends writes of one session through every member, in
// order, and checks that each completes on the member that took it, in
// the order sent, and that the members converge.
func TestWritesAnywhere(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{Members: 3, Observers: 1})
	c.Ready(5 * time.Second)
	for i := 0; i < c.Len(); i++ {
		m := c.Member(i)
		sess := newSession(t, m, 10000)
		if _, ok := m.SessionTimeout(sess); !ok {
			t.Fatalf("member %d: session not known after createSession completed", i+1)
		}
		var futs []*zab.Future
		for k := 0; k < 50; k++ {
			futs = append(futs, create(m, sess, fmt.Sprintf("/m%d-%03d", i+1, k), "x"))
		}
		var last int64
		for k, f := range futs {
			res := wait(t, f)
			if res.Err != nil {
				t.Fatalf("member %d (%s) write %d: %v", i+1, m.Mode(), k, res.Err)
			}
			if res.Zxid <= last {
				t.Fatalf("member %d: write %d zxid 0x%x not after 0x%x: order lost", i+1, k, res.Zxid, last)
			}
			last = res.Zxid
			// Completed on this member means applied on this member.
			if _, err := m.Tree().Exists(fmt.Sprintf("/m%d-%03d", i+1, k), nil); err != nil {
				t.Fatalf("member %d: acknowledged node missing locally: %v", i+1, err)
			}
		}
		dup := wait(t, create(m, sess, fmt.Sprintf("/m%d-000", i+1), "x"))
		if !errors.Is(dup.Err, jute.CodeNodeExists) && fmt.Sprint(dup.Err) != fmt.Sprint(jute.CodeNodeExists) {
			var coder interface{ Code() jute.Code }
			if !errors.As(dup.Err, &coder) || coder.Code() != jute.CodeNodeExists {
				t.Fatalf("duplicate create: %v, want NodeExists", dup.Err)
			}
		}
	}
	c.WaitConverged(5 * time.Second)
}

func TestFollowerSyncSeesLeaderWrites(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{})
	c.Ready(5 * time.Second)
	l := c.WaitLeader(5 * time.Second)
	f := c.Member(follower(c, l))
	sess := newSession(t, c.Member(l), 10000)
	for k := 0; k < 20; k++ {
		if res := wait(t, create(c.Member(l), sess, fmt.Sprintf("/s%d", k), "")); res.Err != nil {
			t.Fatal(res.Err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := f.Sync(ctx)
		cancel()
		if err != nil {
			t.Fatalf("follower sync: %v", err)
		}
		if _, err := f.Tree().Exists(fmt.Sprintf("/s%d", k), nil); err != nil {
			t.Fatalf("after sync the follower misses /s%d: %v", k, err)
		}
	}
}

// TestFollowerTouchesKeepSessionAlive: a session whose packets arrive only
// at a follower lives as long as they keep coming, then expires on the
// leader and the close reaches every member.
func TestFollowerTouchesKeepSessionAlive(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{TickTime: 50 * time.Millisecond})
	c.Ready(5 * time.Second)
	l := c.WaitLeader(5 * time.Second)
	f := c.Member(follower(c, l))
	sess := newSession(t, f, 300)
	end := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(end) {
		if !f.Touch(sess) {
			t.Fatal("session expired although the follower kept touching it")
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.WaitFor("session expires once touches stop", 5*time.Second, func() bool {
		for i := 0; i < c.Len(); i++ {
			if _, ok := c.Member(i).SessionTimeout(sess); ok {
				return false
			}
		}
		return true
	})
}

// TestLeaderLoss stops the leader: a new one is elected, writes through a
// follower keep working, sessions survive, and the old leader catches up
// after restart.
func TestLeaderLoss(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{TickTime: 50 * time.Millisecond})
	c.Ready(5 * time.Second)
	l := c.WaitLeader(5 * time.Second)
	f := follower(c, l)
	sess := newSession(t, c.Member(f), 2000)
	for k := 0; k < 10; k++ {
		if res := wait(t, create(c.Member(f), sess, fmt.Sprintf("/before%d", k), "")); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	stopped := time.Now()
	c.Stop(l)
	nl := c.WaitLeader(5 * time.Second)
	if nl == l {
		t.Fatal("stopped member still leads")
	}
	// Keep the session alive through the follower while writing.
	var res zab.Result
	for k := 0; ; k++ {
		c.Member(f).Touch(sess)
		res = wait(t, create(c.Member(f), sess, "/after", "x"))
		if res.Err == nil {
			break
		}
		if !errors.Is(res.Err, zab.ErrNotLeader) || time.Since(stopped) > 5*time.Second {
			t.Fatalf("write after failover: %v (%s)", res.Err, c.Describe())
		}
	}
	t.Logf("leader stop → next acknowledged write: %v", time.Since(stopped))
	if _, ok := c.Member(f).SessionTimeout(sess); !ok {
		t.Fatal("session lost in failover")
	}
	c.Start(l)
	d := c.WaitConverged(10 * time.Second)
	if _, err := c.Member(l).Tree().Exists("/after", nil); err != nil {
		t.Fatalf("restarted member did not catch up: %v (digest %x)", err, d)
	}
}

// TestCutLeaderAcknowledgesNothing cuts the leader off: it stops serving
// within the serving lease, no write submitted to it is acknowledged, the
// majority elects a new leader, and after healing all members agree.
func TestCutLeaderAcknowledgesNothing(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{TickTime: 50 * time.Millisecond})
	c.Ready(5 * time.Second)
	l := c.WaitLeader(5 * time.Second)
	old := c.Member(l)
	sess := newSession(t, old, 5000)
	c.Cut(l)
	var futs []*zab.Future
	for k := 0; k < 20; k++ {
		futs = append(futs, create(old, sess, fmt.Sprintf("/lost%d", k), ""))
	}
	for k, fu := range futs {
		if res := wait(t, fu); res.Err == nil {
			t.Fatalf("cut-off leader acknowledged write %d (zxid 0x%x)", k, res.Zxid)
		}
	}
	c.WaitFor("cut member stops serving", 3*time.Second, func() bool { return !old.Serving() })
	nl := c.WaitLeader(5 * time.Second)
	nm := c.Member(nl)
	nm.Touch(sess)
	if res := wait(t, create(nm, sess, "/majority", "")); res.Err != nil {
		t.Fatalf("majority write: %v", res.Err)
	}
	c.Heal()
	c.WaitFor("healed member serves again", 5*time.Second, old.Serving)
	c.WaitConverged(10 * time.Second)
	for k := 0; k < 20; k++ {
		if _, err := old.Tree().Exists(fmt.Sprintf("/lost%d", k), nil); err == nil {
			t.Fatalf("unacknowledged /lost%d applied", k)
		}
	}
	if _, err := old.Tree().Exists("/majority", nil); err != nil {
		t.Fatal("healed member misses the majority's write")
	}
}

// TestCatchUpBySnapshot: a member that was down while the log was
// compacted past it gets a snapshot installed.
func TestCatchUpBySnapshot(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{NodeConfig: func(i int, nc *zab.Config) { nc.TrailingLogs = 5 }})
	c.Ready(5 * time.Second)
	l := c.WaitLeader(5 * time.Second)
	f := follower(c, l)
	c.Stop(f)
	sess := newSession(t, c.Member(l), 10000)
	for k := 0; k < 100; k++ {
		if res := wait(t, create(c.Member(l), sess, fmt.Sprintf("/n%03d", k), "data")); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if err := c.Member(l).Node().Snapshot(); err != nil {
		t.Fatal(err)
	}
	c.Start(f)
	c.WaitConverged(10 * time.Second)
	if n := c.Member(f).Tree().NodeCount(); n != c.Member(l).Tree().NodeCount() {
		t.Fatalf("node counts differ: %d vs %d", n, c.Member(l).Tree().NodeCount())
	}
	if _, ok := c.Member(f).SessionTimeout(sess); !ok {
		t.Fatal("session table not installed with the snapshot")
	}
}

// TestConcurrentWritesDuringFailover runs writers on every member while
// the leader is stopped and restarted; every acknowledged write must be on
// every member afterwards.
func TestConcurrentWritesDuringFailover(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{TickTime: 50 * time.Millisecond})
	c.Ready(5 * time.Second)
	l := c.WaitLeader(5 * time.Second)
	sessions := make([]int64, c.Len())
	for i := range sessions {
		sessions[i] = newSession(t, c.Member(i), 5000)
	}
	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < c.Len(); i++ {
		if i == l {
			continue
		}
		m := c.Member(i)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				m.Touch(sessions[i])
				p := fmt.Sprintf("/w%d-%05d", i, k)
				if res := create(m, sessions[i], p, "").Wait(); res.Err == nil {
					mu.Lock()
					acked = append(acked, p)
					mu.Unlock()
				} else {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}(i)
	}
	time.Sleep(300 * time.Millisecond)
	c.Stop(l)
	c.WaitLeader(5 * time.Second)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	c.Start(l)
	c.WaitConverged(10 * time.Second)
	if len(acked) == 0 {
		t.Fatal("no write acknowledged")
	}
	for i := 0; i < c.Len(); i++ {
		for _, p := range acked {
			if _, err := c.Member(i).Tree().Exists(p, nil); err != nil {
				t.Fatalf("member %d misses acknowledged %s", i+1, p)
			}
		}
	}
	t.Logf("%d acknowledged writes on every member", len(acked))
}

// TestMinorityStopsServing: a member cut off from the others stops
// serving within syncLimit ticks (read-only with readonlymode.enabled),
// and serves again, read-write, once healed.
func TestMinorityStopsServing(t *testing.T) {
	for _, ro := range []bool{false, true} {
		t.Run(fmt.Sprintf("readonlymode=%v", ro), func(t *testing.T) {
			c := quorumtest.New(t, quorumtest.Options{TickTime: 50 * time.Millisecond, ReadOnlyMode: ro})
			c.Ready(5 * time.Second)
			l := c.WaitLeader(5 * time.Second)
			fi := follower(c, l)
			f := c.Member(fi)
			if !f.Serving() || f.ReadOnlyAllowed() != ro {
				t.Fatalf("follower serving=%v readOnlyAllowed=%v", f.Serving(), f.ReadOnlyAllowed())
			}
			cut := time.Now()
			c.Cut(fi)
			c.WaitFor("cut follower stops serving", 3*time.Second, func() bool { return !f.Serving() })
			qc := c.Config()
			lease := qc.Timing().ServingLease
			if d := time.Since(cut); d < lease/2 {
				t.Fatalf("stopped serving after %v, before the serving lease %v", d, lease)
			}
			want := "follower"
			if ro {
				want = "read-only"
			}
			if m := f.Mode(); m != want {
				t.Fatalf("mode while cut off = %q, want %q", m, want)
			}
			c.Heal()
			c.WaitFor("healed follower serves", 5*time.Second, f.Serving)
			if m := f.Mode(); m != "follower" {
				t.Fatalf("mode after heal = %q", m)
			}
		})
	}
}

// TestZookeeperConfigNode: every member's /zookeeper/config holds the
// membership in ZooKeeper's format, identically.
func TestZookeeperConfigNode(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{Members: 3, Observers: 1})
	c.Ready(5 * time.Second)
	qc := c.Config()
	want := string(quorum.ConfigData(qc.Peers, 0))
	if !strings.HasSuffix(want, "\nversion=0") || !strings.Contains(want, ":observer") {
		t.Fatalf("config text %q", want)
	}
	c.WaitFor("every member holds the config", 5*time.Second, func() bool {
		for i := 0; i < c.Len(); i++ {
			data, st, err := c.Member(i).Tree().GetData("/zookeeper/config", nil, nil)
			if err != nil || string(data) != want || st.Version != -1 {
				return false
			}
		}
		return true
	})
	c.WaitConverged(5 * time.Second)
}

func reconfigReq(m *quorum.Member, session int64, super bool, req *jute.ReconfigRequest) *zab.Future {
	var auth []jute.Id
	if super {
		auth = []jute.Id{{Scheme: "super", Id: "super"}}
	}
	return m.Submit(&zab.Request{Op: jute.OpReconfig, SessionID: session, Auth: auth, Body: jute.Encode(req)})
}

func raftIDs(t *testing.T, m *quorum.Member) string {
	t.Helper()
	fut := m.Node().Raft().GetConfiguration()
	if err := fut.Error(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range fut.Configuration().Servers {
		ids = append(ids, string(s.ID))
	}
	return strings.Join(ids, ",")
}

// TestEnsembleReconfig removes a member and adds a new one with the reconfig op
// sent through a follower, checking ZooKeeper's refusals on the way, and
// that /zookeeper/config and raft's membership follow on every member.
func TestEnsembleReconfig(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{Members: 4, Spares: 1, TickTime: 50 * time.Millisecond})
	c.Ready(5 * time.Second)
	l := c.WaitLeader(5 * time.Second)
	// A follower other than member 3, which leaves.
	fi := 0
	for fi == l || fi == 2 {
		fi++
	}
	f := c.Member(fi)
	sess := newSession(t, f, 10000)
	code := func(err error) jute.Code {
		var c jute.Code
		var coder interface{ Code() jute.Code }
		switch {
		case errors.As(err, &coder):
			return coder.Code()
		case errors.As(err, &c):
			return c
		}
		return 0
	}

	if res := wait(t, reconfigReq(f, sess, false, &jute.ReconfigRequest{LeavingServers: "3", CurConfigId: -1})); code(res.Err) != jute.CodeNoAuth {
		t.Fatalf("reconfig without super: %v, want NoAuth", res.Err)
	}
	if res := wait(t, reconfigReq(f, sess, true, &jute.ReconfigRequest{LeavingServers: "3", CurConfigId: 99})); code(res.Err) != jute.CodeBadVersion {
		t.Fatalf("reconfig with a stale version: %v, want BadVersion", res.Err)
	}
	if res := wait(t, reconfigReq(f, sess, true, &jute.ReconfigRequest{
		JoiningServers: "server.7=127.0.0.1:1:2;3,server.8=127.0.0.1:4:5;6,server.9=127.0.0.1:7:8;9", CurConfigId: -1,
	})); code(res.Err) != jute.CodeNewConfigNoQuorum {
		t.Fatalf("reconfig adding three dead voters: %v, want NewConfigNoQuorum", res.Err)
	}

	res := wait(t, reconfigReq(f, sess, true, &jute.ReconfigRequest{LeavingServers: "3", CurConfigId: -1}))
	if res.Err != nil {
		t.Fatalf("remove member 3: %v", res.Err)
	}
	gd, ok := res.Resp.(*jute.GetDataResponse)
	wantText := fmt.Sprintf("version=%x", res.Zxid)
	if !ok || !strings.HasSuffix(string(gd.Data), wantText) || strings.Contains(string(gd.Data), "server.3=") {
		t.Fatalf("reconfig reply %+v", res.Resp)
	}
	c.WaitFor("raft drops member 3", 5*time.Second, func() bool {
		return raftIDs(t, c.Member(c.WaitLeader(5*time.Second))) == "1,2"
	})
	c.Stop(2)

	c.Start(3)
	qc := c.Config()
	p4 := qc.Peers[3]
	join := fmt.Sprintf("server.4=%s:%d:%d;127.0.0.1:4004", p4.Host, p4.QuorumPort, p4.ElectionPort)
	_, version, _ := quorum.ParseConfigData(gd.Data)
	res = wait(t, reconfigReq(f, sess, true, &jute.ReconfigRequest{JoiningServers: join, CurConfigId: version}))
	if res.Err != nil {
		t.Fatalf("add member 4: %v", res.Err)
	}
	c.WaitFor("raft adds member 4", 5*time.Second, func() bool {
		return raftIDs(t, c.Member(c.WaitLeader(5*time.Second))) == "1,2,4"
	})
	data := res.Resp.(*jute.GetDataResponse).Data
	c.WaitFor("every member holds the new config", 5*time.Second, func() bool {
		for _, i := range []int{0, 1, 3} {
			got, _, err := c.Member(i).Tree().GetData("/zookeeper/config", nil, nil)
			if err != nil || string(got) != string(data) {
				return false
			}
		}
		return true
	})
	if res := wait(t, create(c.Member(3), sess, "/after-join", "")); res.Err != nil {
		t.Fatalf("write through the new member: %v", res.Err)
	}
	c.WaitConverged(5 * time.Second)
}

// TestFiveMembersSurviveTwoLosses: a 5-member ensemble keeps taking
// writes with its leader and another member down, and refuses them (no
// quorum) with a third down.
func TestFiveMembersSurviveTwoLosses(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{Members: 5, TickTime: 50 * time.Millisecond})
	c.Ready(5 * time.Second)
	l := c.WaitLeader(5 * time.Second)
	c.Stop(l)
	c.Stop(follower(c, l))
	c.WaitLeader(5 * time.Second)
	m := c.Member(follower(c, -1))
	sess := newSession(t, m, 10000)
	if res := wait(t, create(m, sess, "/five", "")); res.Err != nil {
		t.Fatalf("write with 3 of 5: %v", res.Err)
	}
	c.Stop(c.WaitLeader(5 * time.Second))
	m = c.Member(follower(c, -1))
	m.Touch(sess)
	if res := wait(t, create(m, sess, "/two-of-five", "")); res.Err == nil {
		t.Fatal("write acknowledged by 2 of 5 members")
	}
	c.WaitFor("minority stops serving", 5*time.Second, func() bool { return !m.Serving() })
}

// TestPipelinedWritesKeepOrderAcrossFailover: followers pipeline batches
// of writes (as one connection does, each batch spread over a few
// milliseconds) while the leader stops. Whatever applied of a batch must
// be a prefix of it: a later write of a connection never lands when an
// earlier one was lost with the old leader.
func TestPipelinedWritesKeepOrderAcrossFailover(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{TickTime: 50 * time.Millisecond})
	c.Ready(5 * time.Second)
	l := c.WaitLeader(5 * time.Second)
	const batch = 20
	type run struct{ member, n int }
	var mu sync.Mutex
	var runs []run
	var nextOrigin atomic.Uint64 // client connections
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < c.Len(); i++ {
		if i == l {
			continue
		}
		m := c.Member(i)
		sess := newSession(t, m, 5000)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			origin := nextOrigin.Add(1)
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				m.Touch(sess)
				futures := make([]*zab.Future, batch)
				for j := range futures {
					body := jute.Encode(&jute.CreateRequest{Path: fmt.Sprintf("/fifo-%d-%d-%02d", i, n, j), Acl: openACL})
					futures[j] = m.Submit(&zab.Request{Op: jute.OpCreate, SessionID: sess, Body: body, Origin: origin})
					// Spread the batch out, so the leader's loss falls
					// inside one and later writes of the batch are
					// submitted after earlier ones were lost.
					time.Sleep(100 * time.Microsecond)
				}
				failed := false
				for _, f := range futures {
					if f.Wait().Err != nil {
						failed = true
					}
				}
				if failed {
					// The server closes a connection whose write
					// failed; the client goes on with a new one.
					origin = nextOrigin.Add(1)
				}
				mu.Lock()
				runs = append(runs, run{i, n})
				mu.Unlock()
			}
		}(i)
	}
	time.Sleep(200 * time.Millisecond)
	c.Stop(l)
	c.WaitLeader(5 * time.Second)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	c.Start(l)
	c.WaitConverged(10 * time.Second)
	tree := c.Member(0).Tree()
	for _, r := range runs {
		gap := -1
		for j := 0; j < batch; j++ {
			_, err := tree.Exists(fmt.Sprintf("/fifo-%d-%d-%02d", r.member, r.n, j), nil)
			switch {
			case err != nil && gap < 0:
				gap = j
			case err == nil && gap >= 0:
				t.Fatalf("member %d batch %d: write %d applied after write %d was lost", r.member+1, r.n, j, gap)
			}
		}
	}
	t.Logf("%d pipelined batches checked", len(runs))
}

// TestSyncReattachWaitsForNewLeader: clients resuming their sessions on
// a follower while the leader stops are not refused: a sync that fails
// with the old leader is tried again with the new one.
func TestSyncReattachWaitsForNewLeader(t *testing.T) {
	c := quorumtest.New(t, quorumtest.Options{TickTime: 50 * time.Millisecond})
	c.Ready(5 * time.Second)
	l := c.WaitLeader(5 * time.Second)
	f := c.Member(follower(c, l))
	stop := make(chan struct{})
	errs := make(chan error, 1000)
	var syncs atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := f.SyncReattach(ctx)
				cancel()
				syncs.Add(1)
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	c.Stop(l)
	c.WaitLeader(5 * time.Second)
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("SyncReattach across the leader change: %v", err)
	}
	t.Logf("%d syncs", syncs.Load())
}
