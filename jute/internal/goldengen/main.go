// Command goldengen records the client-protocol frames that real clients
// (go-zookeeper/zk, Kazoo and the Java client inside zkCli.sh) exchange with a
// real ZooKeeper 3.8 and writes them as golden files for jute's tests.
//
// It starts ZooKeeper from Debian's jars on a free loopback port (or uses
// -zk), puts a recording TCP proxy in front of it, drives each client through
// a fixed scenario, and writes every frame, length prefix included, to
// -out as <client>_<seq>_<req|resp>_<op>[_err<code>].bin. Run it by hand from
// the repository root when the scenarios change:
//
//	go run ./jute/internal/goldengen -out jute/testdata/golden
//
// Normal tests only read the files.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd/zkd/jute"
)

func main() {
	out := flag.String("out", "jute/testdata/golden", "directory for the golden frames (emptied of *.bin first)")
	zkAddr := flag.String("zk", "", "address of a running ZooKeeper 3.8; empty starts one from /usr/share/java")
	clients := flag.String("clients", "gozk,kazoo,zkcli,java", "comma-separated scenarios to run")
	flag.Parse()

	addr := *zkAddr
	if addr == "" {
		a, stop, err := startZooKeeper()
		if err != nil {
			log.Fatalf("goldengen: start zookeeper: %v", err)
		}
		defer stop()
		addr = a
	}
	rec, err := newRecorder(addr)
	if err != nil {
		log.Fatalf("goldengen: %v", err)
	}
	defer rec.Close()

	old, _ := filepath.Glob(filepath.Join(*out, "*.bin"))
	for _, f := range old {
		os.Remove(f)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatalf("goldengen: %v", err)
	}
	scenarios := map[string]func(*recorder) error{"gozk": runGoZK, "kazoo": runKazoo, "zkcli": runZkCli, "java": runJava}
	for _, name := range strings.Split(*clients, ",") {
		run, ok := scenarios[name]
		if !ok {
			log.Fatalf("goldengen: unknown client %q", name)
		}
		rec.Reset()
		if err := run(rec); err != nil {
			log.Fatalf("goldengen: %s: %v", name, err)
		}
		time.Sleep(300 * time.Millisecond) // let the proxy see the last frames
		n, err := rec.Write(*out, name)
		if err != nil {
			log.Fatalf("goldengen: %s: %v", name, err)
		}
		log.Printf("goldengen: %s: %d frames", name, n)
	}
}

// startZooKeeper runs ZooKeeperServerMain on a free loopback port with a
// temporary data directory and returns its address and a stop function.
func startZooKeeper() (string, func(), error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "goldengen-zk")
	if err != nil {
		return "", nil, err
	}
	cfg := filepath.Join(dir, "zoo.cfg")
	conf := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n", filepath.Join(dir, "data"), port)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return "", nil, err
	}
	cmd := exec.Command("java",
		"-Dzookeeper.extendedTypesEnabled=true",
		"-Dzookeeper.admin.enableServer=false",
		"-cp", "/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/*",
		"org.apache.zookeeper.server.ZooKeeperServerMain", cfg)
	logf, err := os.Create(filepath.Join(dir, "zk.log"))
	if err != nil {
		return "", nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
		os.RemoveAll(dir)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue
		}
		c.SetDeadline(time.Now().Add(2 * time.Second))
		c.Write([]byte("srvr"))
		b, _ := io.ReadAll(c)
		c.Close()
		if bytes.Contains(b, []byte("Zookeeper version")) {
			log.Printf("goldengen: zookeeper on %s (pid %d)", addr, cmd.Process.Pid)
			return addr, stop, nil
		}
	}
	stop()
	return "", nil, errors.New("zookeeper did not start within 30s")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// frame is one recorded frame, length prefix included.
type frame struct {
	conn   int  // connection number within the scenario
	toSrv  bool // client to server
	seq    int  // global order of arrival
	raw    []byte
	label  string
	ignore bool
}

// recorder is a TCP proxy that records every frame in both directions.
type recorder struct {
	ln     net.Listener
	target string
	mu     struct {
		sync.Mutex
		frames []*frame
		conns  int
		seq    int
		live   []net.Conn
	}
}

func newRecorder(target string) (*recorder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &recorder{ln: ln, target: target}
	go r.accept()
	return r, nil
}

// Addr is the proxy's address, for clients to connect to.
func (r *recorder) Addr() string { return r.ln.Addr().String() }

// Close stops accepting connections.
func (r *recorder) Close() { r.ln.Close() }

// Reset forgets recorded frames before the next scenario.
func (r *recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.frames, r.mu.conns = nil, 0
}

// Kick closes every proxied connection, so that clients reconnect and
// re-send their watches and credentials.
func (r *recorder) Kick() {
	r.mu.Lock()
	live := r.mu.live
	r.mu.live = nil
	r.mu.Unlock()
	for _, c := range live {
		c.Close()
	}
}

func (r *recorder) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", r.target)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		id := r.mu.conns
		r.mu.conns++
		r.mu.live = append(r.mu.live, c, s)
		r.mu.Unlock()
		go r.pipe(id, true, c, s)
		go r.pipe(id, false, s, c)
	}
}

// pipe copies frames from src to dst, recording each. Frames are recorded
// before they are forwarded, so a request always precedes its reply.
func (r *recorder) pipe(id int, toSrv bool, src, dst net.Conn) {
	defer src.Close()
	defer dst.Close()
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if toSrv && n < 4 {
			// A 4-letter word, not a frame: forward the rest untouched.
			dst.Write(hdr[:])
			io.Copy(dst, src)
			return
		}
		raw := make([]byte, 4+int(n))
		copy(raw, hdr[:])
		if _, err := io.ReadFull(src, raw[4:]); err != nil {
			return
		}
		r.mu.Lock()
		r.mu.frames = append(r.mu.frames, &frame{conn: id, toSrv: toSrv, seq: r.mu.seq, raw: raw})
		r.mu.seq++
		r.mu.Unlock()
		if _, err := dst.Write(raw); err != nil {
			return
		}
	}
}

// Write labels the recorded frames and writes them to dir, prefixed with
// client. Pings after the first of each direction are left out.
func (r *recorder) Write(dir, client string) (int, error) {
	r.mu.Lock()
	frames := r.mu.frames
	r.mu.Unlock()
	byConn := map[int][]*frame{}
	for _, f := range frames {
		byConn[f.conn] = append(byConn[f.conn], f)
	}
	seenPing := map[bool]bool{}
	for _, fs := range byConn {
		xidOp := map[int32]int32{}
		sawReq, sawResp := false, false
		for _, f := range fs {
			body := f.raw[4:]
			switch {
			case f.toSrv && !sawReq:
				sawReq = true
				f.label = "req_connect"
			case !f.toSrv && !sawResp:
				sawResp = true
				f.label = "resp_connect"
			case f.toSrv:
				xid := int32(binary.BigEndian.Uint32(body))
				op := int32(binary.BigEndian.Uint32(body[4:]))
				xidOp[xid] = op
				f.label = "req_" + jute.OpName(op)
			default:
				var h jute.ReplyHeader
				d := jute.NewDecoder(body)
				h.Decode(d)
				switch {
				case h.Xid == jute.XidNotification:
					f.label = "resp_event"
				default:
					op, ok := xidOp[h.Xid]
					if !ok {
						f.label = fmt.Sprintf("resp_unknown%d", h.Xid)
					} else {
						f.label = "resp_" + jute.OpName(op)
					}
				}
				if h.Err != 0 {
					f.label += fmt.Sprintf("_err%d", h.Err)
				}
			}
			if strings.HasSuffix(f.label, "_ping") {
				if seenPing[f.toSrv] {
					f.ignore = true
				}
				seenPing[f.toSrv] = true
			}
		}
	}
	n := 0
	for _, f := range frames {
		if f.ignore {
			continue
		}
		name := fmt.Sprintf("%s_%03d_%s.bin", client, n, f.label)
		if err := os.WriteFile(filepath.Join(dir, name), f.raw, 0o644); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// runGoZK drives go-zookeeper/zk: connect without the readOnly byte, auth,
// every create flavour it has, reads with watches, a data watch firing,
// errors, a successful and a failed multi, ACLs, sync, a ping and close.
func runGoZK(rec *recorder) error {
	c, _, err := zk.Connect([]string{rec.Addr()}, 4*time.Second, zk.WithLogger(discard{}))
	if err != nil {
		return err
	}
	defer c.Close()
	waitSession := func() error {
		for i := 0; c.State() != zk.StateHasSession; i++ {
			if i > 200 {
				return errors.New("no session")
			}
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	}
	if err := waitSession(); err != nil {
		return err
	}
	world := zk.WorldACL(zk.PermAll)
	steps := []func() error{
		func() error { return c.AddAuth("digest", []byte("user:secret")) },
		func() error { _, err := c.Create("/golden", []byte("root"), 0, world); return err },
		func() error {
			_, err := c.CreateContainer("/golden/container", []byte{}, zk.FlagContainer, world)
			return err
		},
		func() error {
			_, err := c.CreateTTL("/golden/ttl", []byte("t"), zk.FlagTTL, world, time.Minute)
			return err
		},
		func() error {
			_, err := c.Create("/golden/eph-", []byte("e"), zk.FlagEphemeral|zk.FlagSequence, world)
			return err
		},
		func() error {
			_, err := c.Create("/golden", nil, 0, world)
			return expect(err, zk.ErrNodeExists)
		},
		func() error {
			_, _, ev, err := c.GetW("/golden")
			if err != nil {
				return err
			}
			if _, err := c.Set("/golden", []byte("v2"), 0); err != nil {
				return err
			}
			select {
			case <-ev:
				return nil
			case <-time.After(5 * time.Second):
				return errors.New("no data watch event")
			}
		},
		func() error { _, _, _, err := c.ChildrenW("/golden"); return err },
		func() error { _, _, err := c.Exists("/golden/missing"); return err },
		func() error { _, _, err := c.Get("/golden/missing"); return expect(err, zk.ErrNoNode) },
		func() error { _, err := c.Set("/golden", []byte("x"), 42); return expect(err, zk.ErrBadVersion) },
		func() error {
			_, err := c.Multi(
				&zk.CreateRequest{Path: "/golden/m1", Data: []byte("m"), Acl: world},
				&zk.SetDataRequest{Path: "/golden", Data: []byte("v3"), Version: -1},
				&zk.CheckVersionRequest{Path: "/golden", Version: 2},
				&zk.DeleteRequest{Path: "/golden/m1", Version: -1},
			)
			return err
		},
		func() error {
			_, err := c.Multi(
				&zk.CreateRequest{Path: "/golden/m2", Data: []byte{}, Acl: world},
				&zk.CheckVersionRequest{Path: "/golden", Version: 99},
				&zk.DeleteRequest{Path: "/golden/nothere", Version: -1},
			)
			return expect(err, zk.ErrBadVersion)
		},
		func() error { _, _, err := c.GetACL("/golden"); return err },
		func() error {
			_, err := c.SetACL("/golden", append(zk.DigestACL(zk.PermAll, "user", "secret"), zk.WorldACL(zk.PermRead)...), -1)
			return err
		},
		func() error { _, err := c.Sync("/golden"); return err },
		func() error { return c.Delete("/golden/container", -1) },
		func() error { return expect(c.Delete("/golden", -1), zk.ErrNotEmpty) },
		func() error { time.Sleep(2 * time.Second); return nil }, // at least one ping
		func() error {
			// Reconnect with watches armed: setWatches and auth again.
			if _, _, _, err := c.ExistsW("/golden/later"); err != nil {
				return err
			}
			if _, _, _, err := c.ChildrenW("/golden"); err != nil {
				return err
			}
			rec.Kick()
			time.Sleep(200 * time.Millisecond)
			if err := waitSession(); err != nil {
				return err
			}
			_, _, err := c.Get("/golden")
			return err
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	return nil
}

func expect(err, want error) error {
	if !errors.Is(err, want) {
		return fmt.Errorf("got %v, want %v", err, want)
	}
	return nil
}

type discard struct{}

// Printf drops go-zk's log lines.
func (discard) Printf(string, ...interface{}) {}

// kazooScript is run by /usr/bin/python3 with the server address as argv[1].
const kazooScript = `
import sys, threading
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=10)
zk.start()
fired = threading.Event()
zk.create("/kz", b"data", include_data=True)
zk.create("/kz/c", b"", ephemeral=True, sequence=True, include_data=True)
zk.get_children("/kz", include_data=True)
zk.get("/kz")
zk.exists("/kz/w", watch=lambda ev: fired.set())
zk.create("/kz/w", b"")
fired.wait(5)
t = zk.transaction()
t.check("/kz", 0)
t.create("/kz/t", b"t")
t.set_data("/kz", b"d2")
t.delete("/kz/w")
t.commit()
zk.get_acls("/kz")
zk.sync("/kz")
zk.stop()
zk.close()
`

func runKazoo(rec *recorder) error {
	cmd := exec.Command("/usr/bin/python3", "-c", kazooScript, rec.Addr())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// zkCliScript is fed to zkCli.sh on stdin; it covers the Java client's
// operations that the other clients lack.
const zkCliScript = `create /zc data
create -e /zc/e eph
getEphemerals
getAllChildrenNumber /zc
addWatch /zc
addWatch -m PERSISTENT /zc/e
whoami
set /zc d2
removewatches /zc -a
get -s /zc
ls -s /zc
stat /zc
getAcl /zc
delete /zc/e
delete /zc
quit
`

func runZkCli(rec *recorder) error {
	cmd := exec.Command("/usr/share/zookeeper/bin/zkCli.sh", "-server", rec.Addr())
	cmd.Stdin = strings.NewReader(zkCliScript)
	cmd.Env = append(os.Environ(), "ZOO_LOG4J_PROP=ERROR,CONSOLE")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	if os.Getenv("GOLDENGEN_VERBOSE") != "" {
		os.Stderr.Write(out)
	}
	return nil
}

// javaSource is a Java client scenario for what zkCli cannot reach:
// create2, createTTL and createContainer from Java, multi with TTL and
// sequential creates, multiRead with a failing read, checkWatches, and
// setWatches2 after a reconnect (the generator kicks the connection when
// the program prints KICK and continues once it reads a line).
const javaSource = `
import java.io.*;
import java.util.*;
import java.util.concurrent.*;
import org.apache.zookeeper.*;
import org.apache.zookeeper.data.*;

public class Golden {
    public static void main(String[] args) throws Exception {
        final Semaphore connected = new Semaphore(0);
        ZooKeeper zk = new ZooKeeper(args[0], 6000, e -> {
            if (e.getType() == Watcher.Event.EventType.None && e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.release();
            }
        });
        connected.acquire();
        List<ACL> open = ZooDefs.Ids.OPEN_ACL_UNSAFE;
        zk.addAuthInfo("digest", "user:secret".getBytes());
        Stat st = new Stat();
        zk.create("/jv", "j".getBytes(), open, CreateMode.PERSISTENT, st);
        zk.create("/jv/ttl", new byte[0], open, CreateMode.PERSISTENT_WITH_TTL, st, 5000);
        zk.create("/jv/c", new byte[0], open, CreateMode.CONTAINER);
        zk.multi(Arrays.asList(
            Op.create("/jv/m-", new byte[0], open, CreateMode.PERSISTENT_SEQUENTIAL),
            Op.create("/jv/t2", new byte[0], open, CreateMode.PERSISTENT_WITH_TTL, 1000),
            Op.check("/jv", 0),
            Op.setData("/jv", "x".getBytes(), -1),
            Op.delete("/jv/c", -1)));
        zk.multi(Arrays.asList(Op.getData("/jv"), Op.getChildren("/jv"), Op.getData("/jv/missing")));
        Watcher w = e -> {};
        zk.getChildren("/jv", w);
        zk.getData("/jv", w, st);
        zk.exists("/jv/nope", w);
        zk.removeWatches("/jv", w, Watcher.WatcherType.Children, false);
        zk.getEphemerals("/");
        zk.getAllChildrenNumber("/jv");
        zk.addWatch("/jv", AddWatchMode.PERSISTENT_RECURSIVE);
        zk.setACL("/jv", open, -1);
        zk.whoAmI();
        System.out.println("KICK");
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        connected.acquire();
        zk.getData("/jv", false, st);
        zk.removeAllWatches("/jv", Watcher.WatcherType.Any, false);
        zk.close();
        System.out.println("DONE");
    }
}
`

func runJava(rec *recorder) error {
	dir, err := os.MkdirTemp("", "goldengen-java")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "Golden.java"), []byte(javaSource), 0o644); err != nil {
		return err
	}
	cp := "/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/*"
	if out, err := exec.Command("javac", "-cp", cp, "-d", dir, filepath.Join(dir, "Golden.java")).CombinedOutput(); err != nil {
		return fmt.Errorf("javac: %v: %s", err, out)
	}
	cmd := exec.Command("java", "-cp", dir+":"+cp, "Golden", rec.Addr())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		switch lines.Text() {
		case "KICK":
			time.Sleep(200 * time.Millisecond)
			rec.Kick()
			time.Sleep(200 * time.Millisecond)
			io.WriteString(stdin, "go\n")
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("java: %v: %s", err, stderr.String())
	}
	return nil
}
