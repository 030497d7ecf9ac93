package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/compat/zkproc"
)

// entrypoint runs scripts/docker/docker-entrypoint.sh with env and the
// command args.
func entrypoint(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	script, err := filepath.Abs("../../scripts/docker/docker-entrypoint.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// TestDockerEntrypointConfig: the image's entrypoint writes zoo.cfg and
// myid from the official ZooKeeper image's variables, zkd reads that
// zoo.cfg as the ensemble member it describes, and a mounted zoo.cfg is
// left alone. (No container runtime here: the script runs directly.)
func TestDockerEntrypointConfig(t *testing.T) {
	dir := t.TempDir()
	conf, data := filepath.Join(dir, "conf"), filepath.Join(dir, "data")
	env := []string{"ZOO_CONF_DIR=" + conf, "ZOO_DATA_DIR=" + data, "ZOO_DATA_LOG_DIR=" + filepath.Join(dir, "datalog"),
		"ZOO_MY_ID=2", "ZOO_TICK_TIME=500", "ZOO_4LW_COMMANDS_WHITELIST=srvr,ruok",
		"ZOO_SERVERS=server.1=zoo1:2888:3888;2181 server.2=zoo2:2888:3888;2181 server.3=zoo3:2888:3888;2181",
		"ZOO_CFG_EXTRA=zkd.log.level=debug reconfigEnabled=true"}
	if out, err := entrypoint(t, env, "true").CombinedOutput(); err != nil {
		t.Fatalf("entrypoint: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(conf, "zoo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dataDir=" + data, "tickTime=500", "initLimit=5", "syncLimit=2",
		"4lw.commands.whitelist=srvr,ruok", "server.2=zoo2:2888:3888;2181", "zkd.log.level=debug", "reconfigEnabled=true"} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("zoo.cfg lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "clientPort=") {
		t.Errorf("an ensemble member's zoo.cfg has a clientPort line (its server line has it):\n%s", b)
	}
	if id, _ := os.ReadFile(filepath.Join(data, "myid")); string(id) != "2\n" {
		t.Errorf("myid %q, want 2", id)
	}
	c, err := parseZooCfg(filepath.Join(conf, "zoo.cfg"), nil)
	if err != nil {
		t.Fatal(err)
	}
	qc, _, sc, err := configs(c, zap.NewNop())
	if err != nil || qc.MyID != 2 || len(qc.Peers) != 3 || sc.ClientAddr != "0.0.0.0:2181" || !sc.ReconfigEnabled {
		t.Fatalf("zkd reads the generated zoo.cfg as myid %d, %d peers, client %s, reconfig %v: %v",
			qc.MyID, len(qc.Peers), sc.ClientAddr, sc.ReconfigEnabled, err)
	}
	// A zoo.cfg already there (mounted) is kept.
	if out, err := entrypoint(t, append(env, "ZOO_TICK_TIME=999"), "true").CombinedOutput(); err != nil {
		t.Fatalf("entrypoint: %v\n%s", err, out)
	}
	if again, _ := os.ReadFile(filepath.Join(conf, "zoo.cfg")); string(again) != string(b) {
		t.Errorf("a second run rewrote zoo.cfg:\n%s", again)
	}
}

// TestIntegration_DockerEntrypointServes: the entrypoint's default command
// shape (zkd $ZOO_CONF_DIR/zoo.cfg) starts a standalone zkd from the
// generated zoo.cfg, exec'ed so that SIGTERM reaches zkd, which exits 0.
func TestIntegration_DockerEntrypointServes(t *testing.T) {
	bin := zkproc.BuildZkd(t)
	dir := t.TempDir()
	port := zkproc.FreePort(t)
	conf := filepath.Join(dir, "conf")
	cmd := entrypoint(t, []string{"ZOO_CONF_DIR=" + conf, "ZOO_DATA_DIR=" + filepath.Join(dir, "data"),
		"ZOO_DATA_LOG_DIR=" + filepath.Join(dir, "datalog"), fmt.Sprintf("ZOO_CLIENT_PORT=%d", port),
		"ZOO_ADMINSERVER_ENABLED=false", "ZOO_4LW_COMMANDS_WHITELIST=*"}, bin, filepath.Join(conf, "zoo.cfg"))
	logPath := filepath.Join(dir, "zkd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	zkproc.WaitServing(t, addr, 30*time.Second)
	if mode, err := srvrMode(addr, 5*time.Second); err != nil || mode != "Mode: standalone" {
		t.Fatalf("srvr mode %q, %v", mode, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
	if log, _ := os.ReadFile(logPath); !strings.Contains(string(log), "zkd stopped") {
		t.Errorf("zkd did not log that it stopped: SIGTERM did not reach it through the entrypoint:\n%s", log)
	}
}

// TestSystemdUnit checks the unit's essentials: zkd runs from a zoo.cfg as
// the unprivileged zookeeper user, is stopped with SIGTERM and restarted
// on failure.
func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile("../../scripts/systemd/zkd.service")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for l := range strings.Lines(string(b)) {
		l = strings.TrimSpace(l)
		if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") {
			keys[k] = v
		}
	}
	for k, want := range map[string]string{"ExecStart": "/usr/local/bin/zkd /etc/zookeeper/zoo.cfg", "User": "zookeeper",
		"KillSignal": "SIGTERM", "Restart": "on-failure", "ReadWritePaths": "/var/lib/zookeeper", "WantedBy": "multi-user.target"} {
		if keys[k] != want {
			t.Errorf("zkd.service %s=%q, want %q", k, keys[k], want)
		}
	}
}
