package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/server/lockview"
)

func TestPrintLocks(t *testing.T) {
	locks := []lockview.Lock{{
		Path: "/a/lock", Kind: lockview.KindMutex,
		Holders: []lockview.Node{{Name: "lock-0000000000", Mode: lockview.LockExclusive, Session: "0x1", Czxid: 0x10, Sequence: 0, AgeMs: 1500}},
		Waiters: []lockview.Node{{Name: "lock-0000000001", Mode: lockview.LockExclusive, Session: "0x2", Czxid: 0x11, Sequence: 1, AgeMs: 20}},
	}}
	tests := []struct {
		locks []lockview.Lock
		want  string
	}{
		{nil, "No locks at or under /x\n"},
		{locks, "/a/lock (mutex): 1 holding, 1 waiting\n" +
			"  ROLE      MODE       SEQUENCE  CZXID  SESSION  AGE   NODE\n" +
			"  holder    exclusive  0         0x10   0x1      1.5s  lock-0000000000\n" +
			"  waiter 1  exclusive  1         0x11   0x2      20ms  lock-0000000001\n"},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		printLocks(&b, "/x", tc.locks)
		if b.String() != tc.want {
			t.Errorf("printLocks:\n%s\nwant\n%s", b.String(), tc.want)
		}
	}
	if _, ok := commands["locks"]; !ok {
		t.Error("locks is not in the command table")
	}
}

// contender is one lock contender a test started: its lock path and
// session, in queue order.
type contender struct {
	path    string
	session string
}

// gozkContenders queues n go-zk lock contenders on path, each with its own
// session, and returns them in queue order.
func gozkContenders(t *testing.T, addr, path string, n int) []contender {
	t.Helper()
	var out []contender
	for i := 0; i < n; i++ {
		c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(nopLogger{}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		deadline := time.Now().Add(10 * time.Second)
		for c.SessionID() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if i == 0 {
			if _, err := c.Create(filepath.Dir(path), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
				t.Fatal(err)
			}
		}
		l := zk.NewLock(c, path, zk.WorldACL(zk.PermAll))
		go l.Lock() // returns when the test's sessions close
		out = append(out, contender{path, fmt.Sprintf("0x%x", uint64(c.SessionID()))})
		for {
			kids, _, err := c.Children(path)
			if err == nil && len(kids) > i {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("go-zk contender %d on %s did not queue", i, path)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return out
}

// startContenders runs a helper program from testdata/locks that queues
// lock contenders and prints "contender PATH SESSION" lines, then "ready".
// It returns the contenders; the helper holds them until the test ends.
func startContenders(t *testing.T, name string, args ...string) []contender {
	t.Helper()
	cmd := exec.Command(name, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	var out []contender
	timeout := time.After(90 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s %v ended before ready: %s", name, args, stderr.String())
			}
			if l == "ready" {
				return out
			}
			if f := strings.Fields(l); len(f) == 3 && f[0] == "contender" {
				out = append(out, contender{f[1], f[2]})
			}
		case <-timeout:
			cmd.Process.Kill()
			t.Fatalf("%s %v: no ready line: %s", name, args, stderr.String())
		}
	}
}

// wantQueues groups contenders by lock path, in queue order.
func wantQueues(cs []contender) map[string][]string {
	out := map[string][]string{}
	for _, c := range cs {
		out[c.path] = append(out[c.path], c.session)
	}
	return out
}

// checkView compares a lock view with the contenders: per lock path the
// queue order of sessions, the number of holders, and fencing tokens that
// grow along the queue.
func checkView(t *testing.T, what string, locks []lockview.Lock, want map[string][]string, holders map[string]int, clientKnown bool) {
	t.Helper()
	got := map[string][]string{}
	for _, l := range locks {
		if _, ok := want[l.Path]; !ok {
			continue
		}
		if len(l.Holders) != holders[l.Path] {
			t.Errorf("%s: %s has %d holders, want %d: %+v", what, l.Path, len(l.Holders), holders[l.Path], l)
		}
		queue := append(append([]lockview.Node{}, l.Holders...), l.Waiters...)
		for i, n := range queue {
			got[l.Path] = append(got[l.Path], n.Session)
			if i > 0 && (n.Sequence <= queue[i-1].Sequence || n.Czxid <= queue[i-1].Czxid) {
				t.Errorf("%s: %s: fencing token of %s (%d, 0x%x) does not follow %s (%d, 0x%x)", what, l.Path,
					n.Name, n.Sequence, n.Czxid, queue[i-1].Name, queue[i-1].Sequence, queue[i-1].Czxid)
			}
			if clientKnown && !strings.HasPrefix(n.Client, "127.0.0.1:") {
				t.Errorf("%s: %s: client of %s = %q, want the loopback connection", what, l.Path, n.Name, n.Client)
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: queues (sessions by lock path)\n got %v\nwant %v", what, got, want)
	}
}

// cliHeader and cliRow read zkcli locks output.
var (
	cliHeader = regexp.MustCompile(`^(/\S*) \((\w+)\): (\d+) holding, (\d+) waiting$`)
	cliRow    = regexp.MustCompile(`^  (holder|waiter \d+)\s+\S+\s+\d+\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)\s+\S+\s+\S+$`)
)

// parseCLI reads zkcli locks output into sessions by lock path and holder
// counts.
func parseCLI(t *testing.T, out string) (map[string][]string, map[string]int) {
	t.Helper()
	queues, holders := map[string][]string{}, map[string]int{}
	path := ""
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if m := cliHeader.FindStringSubmatch(line); m != nil {
			path = m[1]
			continue
		}
		if m := cliRow.FindStringSubmatch(line); m != nil {
			queues[path] = append(queues[path], m[2])
			if m[1] == "holder" {
				holders[path]++
			}
		}
	}
	return queues, holders
}

// filter keeps the queues whose path starts with prefix.
func filter(m map[string][]string, prefix string) map[string][]string {
	out := map[string][]string{}
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

func TestIntegration_LocksZkd(t *testing.T) {
	srv := zkproc.StartZkd(t, zkproc.Options{AdminServer: true})
	var cs []contender
	cs = append(cs, gozkContenders(t, srv.Addr, "/gozk/lock", 3)...)
	cs = append(cs, startContenders(t, "/usr/bin/python3", "testdata/locks/kazoo_locks.py", srv.Addr)...)
	cs = append(cs, startContenders(t, "java", "-cp", zkproc.CuratorClasspath(t), "testdata/locks/CuratorLocks.java", srv.Addr)...)
	want := wantQueues(cs)
	holders := map[string]int{"/gozk/lock": 1, "/kazoo/lock": 1, "/kazoo/rw": 1, "/curator/lock": 1, "/curator/rw": 2}
	if len(want) != len(holders) {
		t.Fatalf("contenders by path: %v", want)
	}

	admin := func(query string) []lockview.Lock {
		resp, err := http.Get("http://" + srv.AdminAddr + "/commands/locks" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Locks []lockview.Lock `json:"locks"`
			Error any             `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Error != nil {
			t.Fatalf("admin locks%s: %v %v", query, err, out.Error)
		}
		return out.Locks
	}
	all := admin("")
	checkView(t, "admin locks", all, want, holders, true)
	kinds := map[string]string{}
	for _, l := range all {
		kinds[l.Path] = l.Kind
	}
	wantKinds := map[string]string{"/gozk/lock": "mutex", "/kazoo/lock": "mutex", "/kazoo/rw": "rwlock", "/curator/lock": "mutex", "/curator/rw": "rwlock"}
	if !reflect.DeepEqual(kinds, wantKinds) {
		t.Errorf("kinds = %v, want %v", kinds, wantKinds)
	}
	checkView(t, "admin locks?path=/kazoo", admin("?path=/kazoo"), filter(want, "/kazoo"), holders, true)
	if n := len(admin("?path=/kazoo")); n != 2 {
		t.Errorf("admin locks?path=/kazoo: %d lock paths, want 2", n)
	}

	r := runCLI(t, srv.Addr, nil, "locks", "/")
	if r.code != 0 {
		t.Fatalf("zkcli locks: exit %d: %s%s", r.code, r.out, r.err)
	}
	q, h := parseCLI(t, r.out)
	if !reflect.DeepEqual(q, want) || !reflect.DeepEqual(h, holders) {
		t.Errorf("zkcli locks /:\n%s\nqueues %v holders %v\nwant %v %v", r.out, q, h, want, holders)
	}
	r = runCLI(t, srv.Addr, nil, "locks", "/curator")
	if q, _ := parseCLI(t, r.out); !reflect.DeepEqual(q, filter(want, "/curator")) {
		t.Errorf("zkcli locks /curator:\n%s", r.out)
	}
	if r := runCLI(t, srv.Addr, nil, "locks", "/none"); r.code != 1 || !strings.Contains(r.err, "/none") {
		t.Errorf("zkcli locks /none: exit %d, %q %q", r.code, r.out, r.err)
	}
}

// TestIntegration_LocksZooKeeper runs zkcli locks against ZooKeeper 3.8:
// it needs nothing but the client protocol.
func TestIntegration_LocksZooKeeper(t *testing.T) {
	srv := zkproc.StartZooKeeper(t, zkproc.Options{})
	var cs []contender
	cs = append(cs, gozkContenders(t, srv.Addr, "/gozk/lock", 2)...)
	cs = append(cs, startContenders(t, "/usr/bin/python3", "testdata/locks/kazoo_locks.py", srv.Addr)...)
	r := runCLI(t, srv.Addr, nil, "locks")
	if r.code != 0 {
		t.Fatalf("zkcli locks: exit %d: %s%s", r.code, r.out, r.err)
	}
	q, h := parseCLI(t, r.out)
	want := wantQueues(cs)
	if !reflect.DeepEqual(q, want) || !reflect.DeepEqual(h, map[string]int{"/gozk/lock": 1, "/kazoo/lock": 1, "/kazoo/rw": 1}) {
		t.Errorf("zkcli locks on ZooKeeper:\n%s\nqueues %v holders %v, want %v", r.out, q, h, want)
	}
}
