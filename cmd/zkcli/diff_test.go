package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

// zkCliScript is the commandSteps script for the server at addr, ending in
// quit.
func zkCliScript(addr string) string {
	var b strings.Builder
	for _, s := range commandSteps() {
		if s.zkdOnly {
			continue
		}
		b.WriteString(strings.ReplaceAll(s.line, "ADDR", addr) + "\n")
	}
	b.WriteString("quit\n")
	return b.String()
}

// TestIntegration_DiffZooKeeper runs the same script with zkcli against
// ZooKeeper 3.8 and against zkd: the outputs must be equal once zxids,
// times, session ids and addresses are masked.
func TestIntegration_DiffZooKeeper(t *testing.T) {
	zk := zkproc.StartZooKeeper(t, zkdOptions)
	zkd := zkproc.StartZkd(t, zkdOptions)

	script := zkCliScript(zk.Addr)
	onZK := runCLI(t, zk.Addr, &script)
	script = zkCliScript(zkd.Addr)
	onZkd := runCLI(t, zkd.Addr, &script)

	compareLines(t, "stdout (zkd vs ZooKeeper)", mask(onZkd.out, zkd.Addr), mask(onZK.out, zk.Addr))
	compareLines(t, "stderr (zkd vs ZooKeeper)", onZkd.err, onZK.err)
	if onZkd.code != onZK.code {
		t.Errorf("exit %d on zkd, %d on ZooKeeper", onZkd.code, onZK.code)
	}
}

// usageLines matches zkCli's command list, which differs where zkcli lacks
// zkCli.sh's quota commands.
var usageLines = regexp.MustCompile(`(?m)^(ZooKeeper -server .*|\t.*)\n`)

// TestIntegration_MatchesZkCli runs the script with Debian's zkCli.sh and
// with zkcli, each against a fresh ZooKeeper 3.8: the outputs must be equal
// once zxids, times, session ids, addresses, the version line, the command
// list and the JVM's logging noise are masked, comparing the command output
// and the sequence of watch events separately (see splitEvents). Set
// ZKCLI_DUMP to a directory to keep both outputs for diffing.
func TestIntegration_MatchesZkCli(t *testing.T) {
	const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"
	if _, err := os.Stat(zkCli); err != nil {
		zkproc.RequireZooKeeper(t)
		t.Fatalf("zkCli.sh missing: %v", err)
	}
	ours := zkproc.StartZooKeeper(t, zkdOptions)
	theirs := zkproc.StartZooKeeper(t, zkdOptions)

	script := zkCliScript(ours.Addr)
	want := runCLI(t, ours.Addr, &script)

	cmd := exec.Command(zkCli, "-server", theirs.Addr)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	cmd.Stdin = strings.NewReader(zkCliScript(theirs.Addr))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	err := cmd.Run()
	timer.Stop()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var gotErr strings.Builder
	for _, line := range strings.SplitAfter(errb.String(), "\n") {
		if !strings.HasPrefix(line, "SLF4J:") {
			gotErr.WriteString(line)
		}
	}

	if dir := os.Getenv("ZKCLI_DUMP"); dir != "" {
		os.WriteFile(dir+"/zkcli.sh.out", []byte(mask(out.String(), theirs.Addr)), 0o644)
		os.WriteFile(dir+"/zkcli.out", []byte(mask(want.out, ours.Addr)), 0o644)
		os.WriteFile(dir+"/zkcli.sh.err", []byte(gotErr.String()), 0o644)
		os.WriteFile(dir+"/zkcli.err", []byte(want.err), 0o644)
	}
	gotLines, gotEvents := splitEvents(mask(out.String(), theirs.Addr))
	wantLines, wantEvents := splitEvents(mask(want.out, ours.Addr))
	compareLines(t, "stdout without events (zkCli.sh vs zkcli)", gotLines, wantLines)
	// zkCli.sh exits right after closing on quit, often before its event
	// thread prints the Closed event.
	closed := "WatchedEvent state:Closed type:None path:null\n"
	gotEvents, wantEvents = strings.TrimSuffix(gotEvents, closed), strings.TrimSuffix(wantEvents, closed)
	compareLines(t, "watch events (zkCli.sh vs zkcli)", gotEvents, wantEvents)
	compareLines(t, "stderr (zkCli.sh vs zkcli)", usageLines.ReplaceAllString(gotErr.String(), ""), usageLines.ReplaceAllString(want.err, ""))
	if code != want.code {
		t.Errorf("zkCli.sh exited %d, zkcli %d", code, want.code)
	}
}

// splitEvents separates zkCli output into the command output and the watch
// events, each in order, dropping blank lines and "WATCHER::" markers:
// zkCli.sh prints events from its event thread, so where they fall between
// (or inside) command output lines varies from run to run. (The exact
// interleaving zkcli produces is checked against zkd by
// TestIntegration_Script.)
func splitEvents(s string) (lines, events string) {
	var l, e strings.Builder
	for _, line := range strings.Split(s, "\n") {
		switch {
		case line == "" || line == "WATCHER::":
		case strings.HasPrefix(line, "WatchedEvent "):
			e.WriteString(line + "\n")
		default:
			l.WriteString(line + "\n")
		}
	}
	return l.String(), e.String()
}
