package corners

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// runToExit runs cmd until it exits (within 30s) and returns its
// output and whether it exited non-zero.
func runToExit(t *testing.T, cmd *exec.Cmd) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env = cmd.Env
	out, err := c.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s still running after 30s:\n%s", cmd.Args, out)
	}
	return string(out), err != nil
}

// TestIntegration_MissingMyID: an ensemble zoo.cfg (three server lines)
// whose dataDir has no myid file stops both servers at start, each saying
// that the myid file is missing; zkd also names where it should be.
func TestIntegration_MissingMyID(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	for _, kind := range []zkproc.Kind{zkproc.KindZkd, zkproc.KindZooKeeper} {
		t.Run(string(kind), func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			if err := os.MkdirAll(data, 0o755); err != nil {
				t.Fatal(err)
			}
			ports := zkproc.FreePorts(t, 7)
			cfg := fmt.Sprintf("tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n", data, ports[0])
			for i := 1; i <= 3; i++ {
				cfg += fmt.Sprintf("server.%d=127.0.0.1:%d:%d\n", i, ports[2*i-1], ports[2*i])
			}
			path := filepath.Join(dir, "zoo.cfg")
			if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			out, failed := runToExit(t, zkproc.Command(t, kind, path))
			t.Logf("%s exits non-zero %v:\n%s", kind, failed, lastLines(out, 3))
			if !failed || !strings.Contains(out, "myid file is missing") {
				t.Fatalf("exited non-zero %v, output:\n%s\nwant a refusal saying the myid file is missing", failed, out)
			}
			if kind == zkproc.KindZkd && !strings.Contains(out, filepath.Join(data, "myid")) {
				t.Fatalf("zkd does not say where myid belongs (%s):\n%s", filepath.Join(data, "myid"), out)
			}
		})
	}
}

// TestIntegration_ZooKeeperDataDir: a dataDir that ZooKeeper 3.8 wrote
// (version-2/ with its snapshot and log) is served by ZooKeeper on
// restart; zkd given the same zoo.cfg refuses to start, naming zkd import,
// rather than serve an empty tree, and after that import serves the data.
func TestIntegration_ZooKeeperDataDir(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	s := zkproc.StartZooKeeper(t, zkproc.Options{})
	c := connect(t, s.Addr)
	if _, err := c.Create("/moved", []byte("kept"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	s.Restart(t)
	read := func(addr string) string {
		c := connect(t, addr)
		defer c.Close()
		data, _, err := c.Get("/moved")
		if err != nil {
			return err.Error()
		}
		return string(data)
	}
	if got := read(s.Addr); got != "kept" {
		t.Fatalf("ZooKeeper after restart reads /moved: %s", got)
	}
	s.Stop()

	out, failed := runToExit(t, zkproc.Command(t, zkproc.KindZkd, s.CfgPath))
	t.Logf("zkd exits non-zero %v:\n%s", failed, lastLines(out, 3))
	if !failed || !strings.Contains(out, "zkd import -from "+s.DataDir) || !strings.Contains(out, "version-2") {
		t.Fatalf("zkd on ZooKeeper's dataDir: exited non-zero %v, output:\n%s\nwant a refusal naming version-2 and zkd import", failed, out)
	}
	imp := exec.Command(zkproc.BuildZkd(t), "import", "-from", s.DataDir, s.CfgPath)
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("zkd import: %v\n%s", err, out)
	}
	z := zkproc.StartZkd(t, zkproc.Options{Dir: s.Dir, Port: s.Port})
	if got := read(z.Addr); got != "kept" {
		t.Fatalf("zkd after zkd import reads /moved: %s", got)
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
