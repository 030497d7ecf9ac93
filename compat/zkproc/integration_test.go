package zkproc

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// connect opens a go-zk session on addrs and waits until it is usable.
func connect(t *testing.T, addrs ...string) *zk.Conn { return Connect(t, addrs...) }

// exercise checks the life cycle every Server supports, whatever it runs:
// 4-letter words, persistence across SIGKILL, pause and resume, stop.
func exercise(t *testing.T, s *Server) {
	if got, err := s.FourLetter("ruok"); err != nil || got != "imok" {
		t.Fatalf("ruok = %q, %v", got, err)
	}
	c := connect(t, s.Addr)
	if _, err := c.Create("/zkproc", []byte("kept"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c.Close()

	pid := s.PID()
	s.Kill()
	if s.Running() {
		t.Fatal("running after Kill")
	}
	if err := Handshake(s.Addr, time.Second); err == nil {
		t.Fatal("handshake succeeded after Kill")
	}
	s.Restart(t)
	if s.PID() == pid || !s.Running() {
		t.Fatalf("Restart: pid %d -> %d, running %v", pid, s.PID(), s.Running())
	}
	c = connect(t, s.Addr)
	data, _, err := c.Get("/zkproc")
	if err != nil || string(data) != "kept" {
		t.Fatalf("after restart: Get = %q, %v", data, err)
	}
	c.Close()

	s.Pause()
	if err := Handshake(s.Addr, 500*time.Millisecond); err == nil {
		t.Fatal("handshake succeeded while paused")
	}
	s.Resume()
	WaitServing(t, s.Addr, 5*time.Second)

	s.Pause() // Stop must also end a paused server
	s.Stop()
	if s.Running() {
		t.Fatal("running after Stop")
	}
	if _, err := s.FourLetter("ruok"); err == nil {
		t.Fatal("ruok answered after Stop")
	}
	if !strings.Contains(s.Log(), "=== zkproc: starting") {
		t.Errorf("log lacks zkproc's start markers:\n%s", s.Log())
	}
}

func TestIntegration_ZooKeeperLifecycle(t *testing.T) {
	s := StartZooKeeper(t, Options{TickTime: 500})
	if got, err := s.FourLetter("srvr"); err != nil || !strings.Contains(got, "Zookeeper version: 3.8") {
		t.Fatalf("srvr = %q, %v", got, err)
	}
	exercise(t, s)
}

func TestIntegration_ZooKeeperOptions(t *testing.T) {
	s := StartZooKeeper(t, Options{
		TickTime:    200,
		AdminServer: true,
		ExtraCfg:    map[string]string{"maxSessionTimeout": "3000"},
	})
	conf, err := s.FourLetter("conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tickTime=200", "maxSessionTimeout=3000", "clientPort=" + strconv.Itoa(s.Port) + "\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf lacks %q:\n%s", want, conf)
		}
	}
	if err := Handshake(s.AdminAddr, time.Second); err == nil {
		t.Errorf("admin port %s speaks the client protocol", s.AdminAddr)
	}
	if _, err := FourLetter(s.AdminAddr, "GET /commands/ruok HTTP/1.0\r\n\r\n", 5*time.Second); err != nil {
		t.Errorf("admin server on %s: %v", s.AdminAddr, err)
	}
}

// exerciseEnsemble checks a three-member ensemble: one leader and two
// followers, a write through any member, a quorum left after one member
// is killed, and the killed member back after Restart.
func exerciseEnsemble(t *testing.T, servers []*Server) {
	modes := map[string]int{}
	for _, s := range servers {
		srvr, err := s.FourLetter("srvr")
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(srvr) {
			if m, ok := strings.CutPrefix(line, "Mode: "); ok {
				modes[strings.TrimSpace(m)]++
			}
		}
	}
	if modes["leader"] != 1 || modes["follower"] != 2 {
		t.Fatalf("modes = %v, want one leader and two followers", modes)
	}
	c := connect(t, Addrs(servers)...)
	if _, err := c.Create("/ens", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	// One member down: the other two still form a quorum.
	servers[0].Kill()
	c2 := connect(t, servers[1].Addr)
	if _, err := c2.Sync("/ens"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c2.Exists("/ens"); err != nil || !ok {
		t.Fatalf("Exists(/ens) = %v, %v", ok, err)
	}
	if _, err := c2.Create("/ens/while-down", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	servers[0].Restart(t)
	WaitServing(t, servers[0].Addr, 30*time.Second)
	c3 := connect(t, servers[0].Addr)
	if _, err := c3.Sync("/ens"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c3.Exists("/ens/while-down"); err != nil || !ok {
		t.Fatalf("restarted member: Exists(/ens/while-down) = %v, %v", ok, err)
	}
}

func TestIntegration_ZooKeeperEnsemble(t *testing.T) {
	exerciseEnsemble(t, StartZooKeeperEnsemble(t, 3, Options{TickTime: 200}))
}

func TestIntegration_ZkdEnsemble(t *testing.T) {
	exerciseEnsemble(t, StartZkdEnsemble(t, 3, Options{TickTime: 200}))
}

// TestIntegration_ZkdStarts builds ./cmd/zkd, starts it from a zoo.cfg and
// runs the same life cycle as ZooKeeper's.
func TestIntegration_ZkdStarts(t *testing.T) {
	s := StartZkd(t, Options{})
	exercise(t, s)
}

func TestStartFailsForBadBinary(t *testing.T) {
	s := newServer(t, KindZkd, Options{Dir: t.TempDir(), StartTimeout: 5 * time.Second})
	if err := writeConfig(s, Options{}, nil, 0); err != nil {
		t.Fatal(err)
	}
	s.argv = []string{"/bin/sh", "-c", "echo boom >&2; exit 3"}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	err := s.waitReady()
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("waitReady = %v, want process exited", err)
	}
	var exit interface{ ExitCode() int }
	s.mu.Lock()
	werr := s.mu.err
	s.mu.Unlock()
	if !errors.As(werr, &exit) || exit.ExitCode() != 3 {
		t.Errorf("wait error = %v, want exit status 3", werr)
	}
	if !strings.Contains(s.Log(), "boom") {
		t.Errorf("log lacks the process's stderr: %q", s.Log())
	}
	s.Stop() // stopping an exited process is a no-op
}

// TestIntegration_ZkdPortRetry hands the first start a port that is taken:
// StartZkd must notice the bind failure and retry on another port.
func TestIntegration_ZkdPortRetry(t *testing.T) {
	taken := takenPort(t)
	calls := 0
	pickPort = func() (int, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		return freePort()
	}
	defer func() { pickPort = freePort }()

	s := StartZkd(t, Options{})
	if s.Port == taken || calls != 2 {
		t.Fatalf("port %d after %d picks; %d was taken", s.Port, calls, taken)
	}
	if got, err := s.FourLetter("ruok"); err != nil || got != "imok" {
		t.Fatalf("ruok = %q, %v", got, err)
	}
	if !strings.Contains(s.Log(), "address already in use") {
		t.Errorf("log does not show the failed first start:\n%s", s.Log())
	}
}

// TestIntegration_ZkdAdminPortRetry hands the first start an admin port
// that is taken (zkd then serves without its admin server, as ZooKeeper
// does), and then the client port again: StartZkd must draw new ports
// until the admin server is up.
func TestIntegration_ZkdAdminPortRetry(t *testing.T) {
	taken := takenPort(t)
	var clientPorts []int
	pickPort = func() (int, error) {
		p, err := freePort()
		clientPorts = append(clientPorts, p)
		return p, err
	}
	calls := 0
	pickAdminPort = func() (int, error) {
		calls++
		switch calls {
		case 1:
			return taken, nil
		case 2:
			return clientPorts[len(clientPorts)-1], nil // the client port: drawn again
		}
		return freePort()
	}
	defer func() { pickPort, pickAdminPort = freePort, freePort }()

	s := StartZkd(t, Options{AdminServer: true})
	if len(clientPorts) != 2 || calls != 3 {
		t.Fatalf("%d client ports and %d admin ports drawn, want 2 and 3", len(clientPorts), calls)
	}
	resp, err := http.Get("http://" + s.AdminAddr + "/commands/ruok")
	if err != nil {
		t.Fatalf("admin server on %s: %v", s.AdminAddr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("admin ruok on %s: %s", s.AdminAddr, resp.Status)
	}
}

// TestIntegration_ZkdEnsemblePortRetry hands a fresh ensemble's first
// start a quorum port that is taken: StartZkdEnsemble must notice the bind
// failure and start the ensemble again on new ports.
func TestIntegration_ZkdEnsemblePortRetry(t *testing.T) {
	taken := takenPort(t)
	calls := 0
	pickEnsemblePorts = func(t testing.TB, n int) []int {
		calls++
		ports := FreePorts(t, n)
		if calls == 1 {
			ports[4] = taken // member 2's quorum port
		}
		return ports
	}
	defer func() { pickEnsemblePorts = FreePorts }()

	members := StartZkdEnsemble(t, 3, Options{})
	if calls != 2 {
		t.Fatalf("ports drawn %d times, want 2", calls)
	}
	for i, m := range members {
		if got, err := m.FourLetter("ruok"); err != nil || got != "imok" {
			t.Fatalf("member %d: ruok = %q, %v", i+1, got, err)
		}
	}
}

// takenPort returns a loopback port held by a listener until the test ends.
func takenPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}
