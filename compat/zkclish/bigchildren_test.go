package zkclish

import (
	"crypto/rand"
	"fmt"
	"io"
	"log"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// TestGetChildrenPastMaxBuffer is issue 10's lock directory with a crowd
// of waiters, CI-sized: a few thousand ephemeral-sequential children named
// as Curator names them, whose getChildren reply is larger than
// jute.maxbuffer, lowered to 64 KiB on both servers and on the clients.
// ZooKeeper 3.8 applies jute.maxbuffer to the frames it reads, not to its
// replies: it sends the whole list, and only a client enforcing its own
// limit fails. zkd must answer the same way, checked side by side:
//
//   - go-zk without a limit gets every child;
//   - go-zk with WithMaxBufferSize loses the connection on that reply
//     (ErrConnectionClosed) and resumes the same session;
//   - zkCli.sh (Java client, -Djute.maxbuffer) reports ConnectionLoss for
//     ls ("Packet len … is out of range" in its log) and its session goes
//     on: the next command on the directory answers;
//   - zkCli.sh with its jute.maxbuffer raised past the reply lists them.
//
// ZKD_BIG_CHILDREN=N and ZKD_BIG_CHILDREN_MAXBUF=B run it at another
// scale, such as issue 10's 100,000 waiters with the default 1,048,575.
func TestGetChildrenPastMaxBuffer(t *testing.T) {
	maxBuf, waiters := envInt(t, "ZKD_BIG_CHILDREN_MAXBUF", 64<<10), envInt(t, "ZKD_BIG_CHILDREN", 1500)
	flag := fmt.Sprintf("-Djute.maxbuffer=%d", maxBuf)
	t.Setenv("JVMFLAGS", flag) // zkCli.sh's client, and zkd, which reads JVMFLAGS as zkServer.sh does
	p := startPair(t, zkproc.Options{JVMFlags: []string{flag}})
	curator := regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-(\d{10})$`)
	quiet := zk.WithLogger(log.New(io.Discard, "", 0))
	for _, s := range []*zkproc.Server{p.zkd, p.zk} {
		t.Run(string(s.Kind), func(t *testing.T) {
			holder, _, err := zk.Connect([]string{s.Addr}, 20*time.Second, quiet)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			if _, err := holder.Create("/lock", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create /lock: %v", err)
			}
			var (
				wg    sync.WaitGroup
				mu    sync.Mutex
				reply = 4 + 16 + 4 // length, reply header, vector length
				fails []error
			)
			for g := 0; g < 16; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := g; i < waiters; i += 16 {
						name, err := holder.Create("/lock/_c_"+uuid()+"-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
						mu.Lock()
						if err != nil {
							fails = append(fails, err)
						} else {
							reply += 4 + len(name) - len("/lock/")
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if len(fails) > 0 {
				t.Fatalf("%d creates failed, first: %v", len(fails), fails[0])
			}
			if reply <= maxBuf {
				t.Fatalf("getChildren reply of %d bytes does not exceed jute.maxbuffer %d", reply, maxBuf)
			}

			// go-zk without a limit of its own.
			kids, _, err := holder.Children("/lock")
			if err != nil || len(kids) != waiters {
				t.Fatalf("getChildren: %d children, %v; want %d", len(kids), err, waiters)
			}
			seen := map[int]bool{}
			for _, k := range kids {
				m := curator.FindStringSubmatch(k)
				if m == nil {
					t.Fatalf("child %q is not a Curator lock node", k)
				}
				n, _ := strconv.Atoi(m[1])
				seen[n] = true
			}
			if len(seen) != waiters {
				t.Fatalf("%d distinct sequence numbers among %d children", len(seen), waiters)
			}

			// go-zk enforcing jute.maxbuffer.
			small, _, err := zk.Connect([]string{s.Addr}, 20*time.Second, quiet, zk.WithMaxBufferSize(maxBuf))
			if err != nil {
				t.Fatal(err)
			}
			defer small.Close()
			if _, _, err := small.Exists("/lock"); err != nil {
				t.Fatalf("exists /lock: %v", err)
			}
			sid := small.SessionID()
			if _, _, err := small.Children("/lock"); err != zk.ErrConnectionClosed {
				t.Fatalf("getChildren with a %d-byte client buffer: %v, want %v", maxBuf, err, zk.ErrConnectionClosed)
			}
			// go-zk with one server answers a request queued while it
			// reconnects with ErrNoServer (it flushes its queue each time
			// it starts over its server list, and waits a second), so the
			// first exists may race the reconnect; the session must
			// survive it.
			var st *zk.Stat
			for deadline := time.Now().Add(10 * time.Second); ; {
				_, st, err = small.Exists("/lock")
				if err != zk.ErrNoServer || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if st == nil {
				st = &zk.Stat{}
			}
			if err != nil || int(st.NumChildren) != waiters || small.SessionID() != sid {
				t.Fatalf("after the oversized reply: exists %v, %d children, session %x (was %x)", err, st.NumChildren, small.SessionID(), sid)
			}

			// zkCli.sh with -Djute.maxbuffer.
			res := runCli(s, "ls /lock\nstat /lock\n")
			if res.Err != nil {
				t.Fatalf("zkCli: %v\n%s", res.Err, res.Out)
			}
			ls, stat, _ := strings.Cut(res.Out, "KeeperErrorCode = ConnectionLoss for /lock")
			if ls == res.Out || !strings.Contains(stat, fmt.Sprintf("numChildren = %d", waiters)) {
				t.Fatalf("zkCli ls past jute.maxbuffer: want ConnectionLoss then the stat of %d children, got:\n%s", waiters, res.Out)
			}
			t.Setenv("JVMFLAGS", fmt.Sprintf("-Djute.maxbuffer=%d", 2*reply))
			res = runCli(s, "ls /lock\n")
			if res.Err != nil || strings.Contains(res.Out, "ConnectionLoss") || !strings.Contains(res.Out, kids[0]) || !strings.Contains(res.Out, kids[len(kids)-1]) {
				t.Fatalf("zkCli ls with jute.maxbuffer raised to %d: err %v, want every child listed, got %d bytes ending:\n%s",
					2*reply, res.Err, len(res.Out), res.Out[max(0, len(res.Out)-2000):])
			}
			t.Logf("getChildren reply %d bytes, jute.maxbuffer %d", reply, maxBuf)
		})
	}
}

// envInt reads a positive integer from the environment, def when unset.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q is not a positive integer", name, v)
	}
	return n
}

// uuid returns a random version-4 UUID, as Curator puts in its lock
// nodes' names.
func uuid() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
