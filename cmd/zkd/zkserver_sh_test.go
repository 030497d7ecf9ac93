package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

// zkServerSh runs scripts/zkServer.sh with args and returns its stdout,
// stderr and exit status.
func zkServerSh(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	script, err := filepath.Abs("../../scripts/zkServer.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("zkServer.sh %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// TestIntegration_ZkServerSh drives scripts/zkServer.sh with the usual
// invocations of ZooKeeper's: start, status, start while running, print-cmd,
// restart, stop, status when stopped, version, and start-foreground with
// --config, with ZOO_LOG_DIR receiving the log.
func TestIntegration_ZkServerSh(t *testing.T) {
	bin := zkproc.BuildZkd(t)
	dir := t.TempDir()
	conf, logs := filepath.Join(dir, "conf"), filepath.Join(dir, "logs")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	port := zkproc.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cfg := filepath.Join(conf, "zoo.cfg")
	data := filepath.Join(dir, "data")
	body := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n", data, port)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"ZKD_BIN=" + bin, "ZOO_LOG_DIR=" + logs}
	pidFile := filepath.Join(data, "zookeeper_server.pid")
	pid := func() int {
		b, _ := os.ReadFile(pidFile)
		n, _ := strconv.Atoi(string(b))
		return n
	}
	t.Cleanup(func() {
		if p := pid(); p > 0 {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	expect := func(what string, args []string, code int, wantOut string) string {
		t.Helper()
		out, errOut, c := zkServerSh(t, env, args...)
		if c != code || !strings.Contains(out, wantOut) {
			t.Fatalf("%s: zkServer.sh %v: exit %d, stdout %q, stderr %q; want exit %d and %q",
				what, args, c, out, errOut, code, wantOut)
		}
		return out
	}

	expect("start", []string{"start", cfg}, 0, "Starting zookeeper ... STARTED")
	first := pid()
	zkproc.WaitServing(t, addr, 30*time.Second)
	expect("status", []string{"status", cfg}, 0,
		fmt.Sprintf("Client port found: %d. Client address: 127.0.0.1. Client SSL: false.\nMode: standalone\n", port))
	expect("start while running", []string{"start", cfg}, 1, fmt.Sprintf("already running as process %d", first))
	expect("print-cmd", []string{"print-cmd", cfg}, 0, fmt.Sprintf("%q %q > ", bin, cfg))
	expect("restart", []string{"restart", cfg}, 0, "STOPPED\nStarting zookeeper ... STARTED")
	if second := pid(); second == first || second == 0 {
		t.Fatalf("restart: pid %d, was %d", second, first)
	}
	zkproc.WaitServing(t, addr, 30*time.Second)
	expect("stop", []string{"stop", cfg}, 0, "Stopping zookeeper ... STOPPED")
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Fatalf("stop left %s (%v)", pidFile, err)
	}
	expect("status when stopped", []string{"status", cfg}, 1, "Error contacting service. It is probably not running.")
	expect("stop when stopped", []string{"stop", cfg}, 0, "no zookeeper to stop")
	expect("version", []string{"version"}, 0, "zkd "+version)
	expect("usage", []string{"bogus"}, 0, "")

	// start-foreground with --config and no file argument: conf/zoo.cfg.
	script, _ := filepath.Abs("../../scripts/zkServer.sh")
	fg := exec.Command("bash", script, "--config", conf, "start-foreground")
	fg.Env = append(os.Environ(), env...)
	if err := fg.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fg.Process.Kill() })
	zkproc.WaitServing(t, addr, 30*time.Second)
	if mode, err := srvrMode(addr, 5*time.Second); err != nil || mode != "Mode: standalone" {
		t.Fatalf("start-foreground: srvr mode %q, %v", mode, err)
	}
	fg.Process.Signal(syscall.SIGTERM)
	if err := fg.Wait(); err != nil {
		t.Fatalf("start-foreground after SIGTERM: %v", err)
	}
	log, err := os.ReadFile(filepath.Join(logs, "zkd.log"))
	if err != nil || strings.Count(string(log), "\t"+readyMessage+"\t") != 3 {
		t.Fatalf("ZOO_LOG_DIR/zkd.log should hold three readiness lines (start, restart, start-foreground): %v\n%s", err, log)
	}
}

// TestIntegration_ZkdStatusEnsemble: `zkd status` finds each member's
// client address in its server.N line and prints its mode.
func TestIntegration_ZkdStatusEnsemble(t *testing.T) {
	members := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200})
	modes := map[string]int{}
	for _, m := range members {
		var out, errOut bytes.Buffer
		if code := status(m.CfgPath, &out, &errOut); code != 0 {
			t.Fatalf("status %s: exit %d: %s %s", m.CfgPath, code, &out, &errOut)
		}
		if !strings.Contains(out.String(), fmt.Sprintf("Client port found: %d. Client address: 127.0.0.1.", m.Port)) {
			t.Errorf("status %s: %q", m.CfgPath, &out)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		modes[lines[len(lines)-1]]++
	}
	if modes["Mode: leader"] != 1 || modes["Mode: follower"] != 2 {
		t.Errorf("modes %v, want one leader and two followers", modes)
	}
}

func TestSubcommand(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		ok      bool
		code    int
		wantOut string
	}{
		{nil, false, 0, ""},
		{[]string{"zoo.cfg"}, false, 0, ""},
		{[]string{"version"}, true, 0, "zkd " + version + " (answers as ZooKeeper " + zkVersion + "), go"},
		{[]string{"version", "x"}, false, 0, ""},
		{[]string{"status", "a", "b"}, false, 0, ""},
		{[]string{"status", "/nonexistent/zoo.cfg"}, true, 2, ""},
	} {
		var out, errOut bytes.Buffer
		code, ok := subcommand(tc.args, &out, &errOut)
		if ok != tc.ok || code != tc.code || !strings.HasPrefix(out.String(), tc.wantOut) {
			t.Errorf("subcommand(%q) = %d, %v, %q; want %d, %v, %q", tc.args, code, ok, &out, tc.code, tc.ok, tc.wantOut)
		}
	}
}
