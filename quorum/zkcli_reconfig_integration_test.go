package quorum_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

// TestIntegration_ReconfigJavaClient: the Java client's reconfig (zkCli's
// reconfig command, as the super user) works against zkd.
func TestIntegration_ReconfigJavaClient(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200, ExtraCfg: reconfigCfg})
	script := "addauth digest super:test\nreconfig -remove 3\nget /zookeeper/config\nquit\n"
	cmd := exec.Command("/usr/share/zookeeper/bin/zkCli.sh", "-server", servers[0].Addr)
	cmd.Stdin = strings.NewReader(script)
	cmd.Env = append(cmd.Environ(), "ZOO_LOG4J_PROP=ERROR,CONSOLE")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("zkCli did not finish:\n%s", out)
	}
	if err != nil {
		t.Fatalf("zkCli: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, "Committed new configuration") || strings.Contains(text, "server.3=") {
		t.Fatalf("zkCli reconfig output:\n%s", text)
	}
}
