package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zkd/zkd/compat/zkproc"
)

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIntegration_Reconnect cuts the shell's connection and keeps it from
// reconnecting while another client changes watched nodes: after the
// reconnect the shell re-registers its watches (setWatches2 with the last
// zxid it saw), so the changes it missed are reported and its persistent
// watch keeps working, as with zkCli.
func TestIntegration_Reconnect(t *testing.T) {
	srv := zkproc.StartZkd(t, zkproc.Options{})
	proxy := zkproc.StartProxy(t, srv.Addr)

	var out, errb zkproc.SyncBuffer
	sh := NewShell(&out, &errb, 4*time.Second)
	if err := sh.Connect(proxy.Addr); err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	var other zkproc.SyncBuffer
	peer := NewShell(&other, &other, 4*time.Second)
	if err := peer.Connect(srv.Addr); err != nil {
		t.Fatal(err)
	}
	defer peer.Close()

	for _, line := range []string{"create /r a", "create /rec", "get -w /r", "ls -w /r", "addWatch /rec"} {
		sh.Execute(line)
		if sh.ExitCode() != 0 {
			t.Fatalf("%s failed: %s", line, errb.String())
		}
	}

	proxy.Reject()
	proxy.Reset()
	waitFor(t, "the Disconnected event", 10*time.Second, func() bool {
		return strings.Contains(out.String(), "state:Disconnected type:None")
	})
	if got := sh.Prompt(); !strings.Contains(got, "(CONNECTING)") {
		t.Errorf("prompt while disconnected = %q", got)
	}
	for _, line := range []string{"set /r b", "create /r/c", "create /rec/x"} {
		peer.Execute(line)
		if peer.ExitCode() != 0 {
			t.Fatalf("peer %s failed: %s", line, other.String())
		}
	}
	proxy.Heal()

	for _, want := range []string{
		"state:SyncConnected type:NodeDataChanged path:/r\n",
		"state:SyncConnected type:NodeChildrenChanged path:/r\n",
	} {
		waitFor(t, want, 20*time.Second, func() bool { return strings.Contains(out.String(), want) })
	}
	if n := strings.Count(out.String(), "type:None path:null"); n != 3 {
		t.Errorf("want 3 session events (connected, disconnected, connected), got %d:\n%s", n, out.String())
	}
	// Missed changes under a persistent watch are not replayed, as in ZooKeeper.
	if strings.Contains(out.String(), "path:/rec/x") {
		t.Errorf("event for /rec/x replayed:\n%s", out.String())
	}
	peer.Execute("create /rec/y")
	waitFor(t, "the recursive watch after reconnect", 10*time.Second, func() bool {
		return strings.Contains(out.String(), "type:NodeCreated path:/rec/y\n")
	})
	// The session survived: its requests still work.
	sh.Execute("get /r")
	if sh.ExitCode() != 0 || !strings.HasSuffix(out.String(), "b\n") {
		t.Errorf("get after reconnect: exit %d, output %q", sh.ExitCode(), out.String())
	}
}

// openPTY opens a pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestIntegration_Interactive drives zkcli on a terminal: the zkCli prompt
// with its state and command number, line editing, history recall and
// command completion.
func TestIntegration_Interactive(t *testing.T) {
	srv := zkproc.StartZkd(t, zkproc.Options{})
	master, slave := openPTY(t)
	defer master.Close()

	cmd := exec.Command(os.Args[0], "-server", srv.Addr)
	cmd.Env = append(os.Environ(), "ZKCLI_TEST_MAIN=1", "TZ=UTC")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var screen zkproc.SyncBuffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			screen.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	}()

	prompt := func(n int) string { return fmt.Sprintf("[zk: %s(CONNECTED) %d] ", srv.Addr, n) }
	steps := []struct {
		keys string
		want string // appears on the screen after the keys
	}{
		{"", "JLine support is enabled"},
		{"", prompt(0)},
		{"create /p hello\r", prompt(1)},
		{"get /px\x7f\r", "hello"},                      // backspace
		{"\x1b[A\r", prompt(3)},                         // up arrow recalls "get /p"
		{"et /p\x01g\r", prompt(4)},                     // Ctrl-A, then insert at the start
		{"getAc\t/p\r", "'world,'anyone"},               // Tab completes "getAcl "
		{"set /p x\x1b[D\x1b[D\x7fX\r", prompt(6)},      // left arrows and backspace: "set /pX x"
		{"ls /\r", "[p, zookeeper]"},                    // the set above failed: no /pX created
		{"get /pX\r", "Node does not exist: /pX"},       // ...and here is why
		{"history\r", "6 - ls /"},                       // history lists the typed lines
		{"\x15garbage\x15stat /p\r", "dataVersion = 0"}, // Ctrl-U kills the line
		{"ls /zoo\t\r", "[config, quota]"},              // Tab completes a znode path
		{"quit\r", ""},
	}
	for _, s := range steps {
		before := len(screen.String())
		if s.keys != "" {
			if _, err := master.Write([]byte(s.keys)); err != nil {
				t.Fatal(err)
			}
		}
		if s.want == "" {
			continue
		}
		waitFor(t, fmt.Sprintf("%q after %q", s.want, s.keys), 15*time.Second, func() bool {
			text := screen.String()
			if s.keys == "" {
				return strings.Contains(text, s.want)
			}
			return strings.Contains(text[before:], s.want)
		})
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("zkcli exited with %v\n%s", err, screen.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("zkcli did not quit:\n%s", screen.String())
	}
}

// TestIntegration_Chroot uses a connection string with a chroot path: the
// shell sees the chroot as "/" in requests, replies and watch events.
func TestIntegration_Chroot(t *testing.T) {
	srv := zkproc.StartZkd(t, zkproc.Options{})
	if r := runCLI(t, srv.Addr, nil, "create", "/app"); r.code != 0 {
		t.Fatalf("create /app: %+v", r)
	}
	script := "create /x 1\ncreate -e -s /x/e- \nget -w /x\nset /x 2\ngetEphemerals /\nls -R /\nquit\n"
	r := runCLI(t, srv.Addr+"/app", &script)
	wantOut := "Connecting to ADDR/app\nWelcome to ZooKeeper!\nJLine support is disabled\n" +
		event("SyncConnected", "None", "null") +
		"1\n" + event("SyncConnected", "NodeDataChanged", "/x") +
		"[/x/e-0000000000]\n/\n/x\n/x/e-0000000000\n" + event("Closed", "None", "null")
	if got := mask(r.out, srv.Addr); got != wantOut {
		t.Errorf("stdout\n%s\nwant\n%s", got, wantOut)
	}
	if r.err != "Created /x\nCreated /x/e-0000000000\n" || r.code != 0 {
		t.Errorf("stderr %q, exit %d", r.err, r.code)
	}
	if r := runCLI(t, srv.Addr, nil, "get", "/app/x"); !strings.HasSuffix(r.out, "\n2\n") {
		t.Errorf("get /app/x without the chroot: %+v", r)
	}
	if r := runCLI(t, srv.Addr+"/nope", nil, "ls", "/"); r.code != 1 || r.err != "Node does not exist: /\n" {
		t.Errorf("ls in a missing chroot: %+v", r)
	}
}

// TestIntegration_Expiry partitions the shell from the server until its
// session expires: after the partition heals the shell reports Expired, its
// state becomes CLOSED, commands print "Not connected", its ephemeral is
// gone, and connect starts a new session.
func TestIntegration_Expiry(t *testing.T) {
	srv := zkproc.StartZkd(t, zkproc.Options{TickTime: 500})
	proxy := zkproc.StartProxy(t, srv.Addr)

	var out, errb zkproc.SyncBuffer
	sh := NewShell(&out, &errb, 2*time.Second)
	if err := sh.Connect(proxy.Addr); err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	sh.Execute("create -e /e x")
	if sh.ExitCode() != 0 {
		t.Fatalf("create -e failed: %s", errb.String())
	}

	proxy.Blackhole()
	waitFor(t, "the Disconnected event", 10*time.Second, func() bool {
		return strings.Contains(out.String(), "state:Disconnected type:None")
	})
	var other zkproc.SyncBuffer
	peer := NewShell(&other, &other, 4*time.Second)
	if err := peer.Connect(srv.Addr); err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	waitFor(t, "the server to expire the session", 20*time.Second, func() bool {
		peer.Execute("stat /e")
		return peer.ExitCode() == 1
	})
	proxy.Heal()
	waitFor(t, "the Expired event", 20*time.Second, func() bool {
		return strings.Contains(out.String(), "state:Expired type:None path:null\n")
	})
	if got := sh.Prompt(); got != "[zk: "+proxy.Addr+"(CLOSED) 1] " {
		t.Errorf("prompt after expiry = %q", got)
	}
	before := len(out.String())
	sh.Execute("ls /")
	if got := out.String()[before:]; got != "Not connected\n" || sh.ExitCode() != 0 {
		t.Errorf("ls after expiry printed %q, exit %d", got, sh.ExitCode())
	}
	sh.Execute("connect " + srv.Addr)
	sh.Execute("getEphemerals /")
	if !strings.HasSuffix(out.String(), "[]\n") || sh.ExitCode() != 0 {
		t.Errorf("after reconnecting: %q", out.String())
	}
}
