package zab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/zkd/zkd/jute"
)

// crashImage copies the data directory dir of a running member as a crash
// would leave it: every file as it is now. A file that vanishes while the
// copy runs (the log's spare segment, renamed into place meanwhile) is
// left out, as a crash just before it was made would leave it out.
func crashImage(t *testing.T, dir string) string {
	t.Helper()
	image := t.TempDir()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(image, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(image, rel), b, 0o644)
	})
	if err != nil {
		t.Fatalf("crash image of %s: %v", dir, err)
	}
	return image
}

// viaRaft makes a standalone node keep its writes in raft (no direct log).
func viaRaft(c *Config) { c.raftLog = true }

// logWrites creates 40 nodes from each of 8 goroutines at once, so that
// the writes pack into batches, and deletes every fifth.
func logWrites(t *testing.T, n *Node, s Result, prefix string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				p := fmt.Sprintf("/%s-%d-%d", prefix, w, i)
				if r := n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: createBody(p)}).Wait(); r.Err != nil {
					errs <- fmt.Errorf("create %s: %w", p, r.Err)
					return
				}
				if i%5 == 0 {
					body := jute.Encode(&jute.DeleteRequest{Path: p, Version: -1})
					if r := n.Submit(&Request{Op: jute.OpDelete, SessionID: s.SessionID, Body: body}).Wait(); r.Err != nil {
						errs <- fmt.Errorf("delete %s: %w", p, r.Err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestDirectLogDataDirectory: a standalone member's data directory reads
// the same whichever path wrote it, the direct log (solo.go) or raft, and
// whichever reads it, after a clean stop (snapshot at close) and after a
// crash (the directory as the running member left it: every acknowledged
// write is fsynced, nothing else is promised). The direct log's own
// snapshot trims the log and restores; writes go on after the restart,
// with zxids of a new epoch.
func TestDirectLogDataDirectory(t *testing.T) {
	for _, tc := range []struct {
		name            string
		writer, reader  func(*Config)
		crash, directly bool
	}{
		{"direct to direct, clean stop", nil, nil, false, true},
		{"direct to direct, crash", nil, nil, true, true},
		{"direct to raft, crash", nil, viaRaft, true, true},
		{"direct to raft, clean stop", nil, viaRaft, false, true},
		{"raft to direct, crash", viaRaft, nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := func(o func(*Config)) []func(*Config) {
				l := []func(*Config){func(c *Config) { c.SnapshotThreshold, c.TrailingLogs = 1<<40, 5 }}
				if o != nil {
					l = append(l, o)
				}
				return l
			}
			dir := t.TempDir()
			n := openNode(t, dir, opts(tc.writer)...)
			first := n
			t.Cleanup(func() { first.Close() }) // a failed test still stops it
			s := openSession(t, n)
			logWrites(t, n, s, "a")
			if err := n.Snapshot(); err != nil {
				t.Fatal(err)
			}
			logWrites(t, n, s, "b")
			st := n.Stats()
			logged, _ := strconv.ParseUint(st.Raft["last_log_index"], 10, 64)
			if direct := logged > n.raft.LastIndex(); direct != tc.directly {
				t.Fatalf("direct log wrote the entries: %v (last index %d, raft's %d), want %v", direct, logged, n.raft.LastIndex(), tc.directly)
			}
			if st.Store.FirstIndex <= 1 {
				t.Fatalf("log not trimmed behind the snapshot: first index %d", st.Store.FirstIndex)
			}
			digest, zxid := n.Tree().Digest(), n.LastZxid()
			if tc.crash {
				dir = crashImage(t, dir)
			}
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}

			n = openNode(t, dir, opts(tc.reader)...)
			defer n.Close()
			if got := n.Tree().Digest(); got != digest {
				t.Fatalf("tree digest after restart %x, want %x", got, digest)
			}
			if n.LastZxid() != zxid {
				t.Fatalf("last zxid after restart 0x%x, want 0x%x", n.LastZxid(), zxid)
			}
			if _, ok := n.SessionTimeout(s.SessionID); !ok {
				t.Fatal("session lost")
			}
			logWrites(t, n, s, "c")
			if got := n.LastZxid(); got>>32 <= zxid>>32 {
				t.Fatalf("zxid 0x%x after the restart is not of a later epoch than 0x%x", got, zxid)
			}
		})
	}
}

// TestDirectLogRefusesRaftSnapshot: once the direct log took over, raft's
// own snapshot, which would label the tree with raft's stale last index,
// is refused, and the member's snapshot goes through the direct log.
func TestDirectLogRefusesRaftSnapshot(t *testing.T) {
	n := openNode(t, t.TempDir())
	defer n.Close()
	s := openSession(t, n)
	logWrites(t, n, s, "a")
	if err := n.raft.Snapshot().Error(); err == nil || !strings.Contains(err.Error(), errSoloSnapshot.Error()) {
		t.Fatalf("raft's snapshot after the takeover: %v, want %v", err, errSoloSnapshot)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatUint(n.solo.index.Load(), 10)
	if got := n.Stats().Raft["last_snapshot_index"]; got != want {
		t.Fatalf("last snapshot index %s, want the log's last, %s", got, want)
	}
}

// TestDirectLogDefersLargeBatchReplies: a batch of soloDeferFrom requests
// or more gives its completion hooks a Later, whose work runs once the
// whole batch has applied, in the order it was deferred; a smaller batch
// gives none.
func TestDirectLogDefersLargeBatchReplies(t *testing.T) {
	var (
		stall   atomic.Bool
		stalled = make(chan struct{}, 1)
		release = make(chan struct{})
	)
	n := openNode(t, t.TempDir(), func(c *Config) {
		c.beforeSync = func(string) {
			if stall.CompareAndSwap(true, false) {
				stalled <- struct{}{}
				<-release
			}
		}
	})
	t.Cleanup(func() { n.Close() })
	var once sync.Once
	unstall := func() { once.Do(func() { close(release) }) }
	defer unstall() // a failed test still lets Close through
	s := openSession(t, n)
	var (
		mu      sync.Mutex
		hooked  []int // the requests whose hooks ran, in order
		ran     []int // the deferred work that ran, in order
		seenAll []int // how many hooks had run when each deferred work ran
		lone    = make(chan *Later, 1)
	)
	const big = soloDeferFrom + 4
	// The first write's append stalls: the next ones queue behind it
	// and go as one batch.
	stall.Store(true)
	first := n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: createBody("/lone")})
	if !first.OnComplete(func() { lone <- first.Later() }) {
		t.Fatal("the first write completed before its append")
	}
	select {
	case <-stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("the first write's append never reached the disk")
	}
	done := make(chan struct{}, big)
	for i := range big {
		f := n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: createBody(fmt.Sprintf("/big%d", i))})
		if !f.OnComplete(func() {
			l := f.Later()
			mu.Lock()
			hooked = append(hooked, i)
			mu.Unlock()
			if l == nil {
				t.Errorf("request %d of a batch of %d: its hook got no Later", i, big)
				done <- struct{}{}
				return
			}
			l.Defer(func() {
				mu.Lock()
				ran = append(ran, i)
				seenAll = append(seenAll, len(hooked))
				mu.Unlock()
				done <- struct{}{}
			})
		}) {
			t.Fatalf("request %d completed while the log was stalled", i)
		}
	}
	unstall()
	if l := <-lone; l != nil {
		t.Error("a batch of one request gave its hook a Later")
	}
	for range big {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("deferred work did not run")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range big {
		if hooked[i] != i || ran[i] != i {
			t.Fatalf("hooks ran in order %v and deferred work in order %v, want both in submit order", hooked, ran)
		}
		if seenAll[i] != big {
			t.Fatalf("deferred work %d ran when %d of the batch's %d hooks had: before the batch had applied", i, seenAll[i], big)
		}
	}
}

// TestDirectLogTakeoverFails: a standalone member whose takeover fails
// says so in one WARN line and keeps writing through raft: its writes
// commit and grow raft's log, raft's snapshot works, and a restart (whose
// takeover succeeds) keeps them.
func TestDirectLogTakeoverFails(t *testing.T) {
	dir := t.TempDir()
	core, warns := observer.New(zapcore.WarnLevel)
	n := openNode(t, dir, func(c *Config) {
		c.takeoverErr = errors.New("injected takeover failure")
		c.Logger = zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))
	})
	if got := warns.FilterMessageSnippet("did not take over").Len(); got != 1 {
		t.Fatalf("%d WARN lines about the failed takeover, want 1", got)
	}
	n.submitMu.Lock()
	active := n.solo.active
	n.submitMu.Unlock()
	if active {
		t.Fatal("the direct log took over although its takeover failed")
	}
	before := n.raft.LastIndex()
	s := openSession(t, n)
	for i := range 20 {
		if r := n.Submit(&Request{Op: jute.OpCreate, SessionID: s.SessionID, Body: createBody(fmt.Sprintf("/f%d", i))}).Wait(); r.Err != nil {
			t.Fatalf("create /f%d after a failed takeover: %v", i, r.Err)
		}
	}
	if after := n.raft.LastIndex(); after <= before {
		t.Fatalf("raft's last index went from %d to %d: the writes did not go through raft", before, after)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatalf("a snapshot after a failed takeover: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n2 := openNode(t, dir)
	defer n2.Close()
	n2.submitMu.Lock()
	active = n2.solo.active
	n2.submitMu.Unlock()
	if !active {
		t.Error("after a restart the direct log did not take over")
	}
	for i := range 20 {
		if _, _, err := n2.Tree().GetData(fmt.Sprintf("/f%d", i), nil, nil); err != nil {
			t.Errorf("/f%d after the restart: %v", i, err)
		}
	}
}
