package main

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

// TestMain lets the test binary stand in for the zkcli binary: with
// ZKCLI_TEST_MAIN=1 it runs the program instead of the tests, so the
// integration tests exercise the real main, streams and exit codes.
func TestMain(m *testing.M) {
	if os.Getenv("ZKCLI_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// cliResult is what one zkcli process printed and its exit status.
type cliResult struct {
	out, err string
	code     int
}

// runCLI runs zkcli against addr with the given arguments; a non-nil stdin
// is fed to it (scripted mode), otherwise stdin is empty.
func runCLI(t *testing.T, addr string, stdin *string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-server", addr, "-timeout", "10000"}, args...)...)
	cmd.Env = append(os.Environ(), "ZKCLI_TEST_MAIN=1", "TZ=UTC")
	if stdin != nil {
		cmd.Stdin = strings.NewReader(*stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("zkcli %q did not finish", args)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliResult{out: out.String(), err: errb.String(), code: code}
}

var (
	maskZxid    = regexp.MustCompile(`(?m)^(cZxid|mZxid|pZxid) = 0x[0-9a-f]+$`)
	maskTime    = regexp.MustCompile(`(?m)^(ctime|mtime) = .*$`)
	maskOwner   = regexp.MustCompile(`(?m)^ephemeralOwner = 0x[1-9a-f][0-9a-f]*$`)
	maskVersion = regexp.MustCompile(`(?m)^ZooKeeper CLI version: .*$`)
)

// mask hides what legitimately differs between runs and servers: the
// server address, zxids, times, session ids and the version line.
func mask(s, addr string) string {
	s = strings.ReplaceAll(s, addr, "ADDR")
	s = maskZxid.ReplaceAllString(s, "$1 = ZXID")
	s = maskTime.ReplaceAllString(s, "$1 = TIME")
	s = maskOwner.ReplaceAllString(s, "ephemeralOwner = SESSION")
	s = maskVersion.ReplaceAllString(s, "ZooKeeper CLI version: VERSION")
	return sortWhoAmI(s)
}

// identityLine is one identity whoami prints ("digest: u").
var identityLine = regexp.MustCompile(`^[a-z0-9]+: \S`)

// sortWhoAmI sorts the identity lines after each "Auth scheme: User": the
// server sends them in the order of a hash set, which differs between
// ZooKeeper and zkd.
func sortWhoAmI(s string) string {
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] != "Auth scheme: User" {
			continue
		}
		j := i + 1
		for j < len(lines) && identityLine.MatchString(lines[j]) {
			j++
		}
		sort.Strings(lines[i+1 : j])
		i = j - 1
	}
	return strings.Join(lines, "\n")
}

// statOut is a masked Stat as zkCli prints it.
func statOut(dataVersion, cversion, aclVersion, dataLength, numChildren int, ephemeral bool) string {
	owner := "0x0"
	if ephemeral {
		owner = "SESSION"
	}
	return "cZxid = ZXID\nctime = TIME\nmZxid = ZXID\nmtime = TIME\npZxid = ZXID\n" +
		"cversion = " + itoa(cversion) + "\ndataVersion = " + itoa(dataVersion) + "\naclVersion = " + itoa(aclVersion) +
		"\nephemeralOwner = " + owner + "\ndataLength = " + itoa(dataLength) + "\nnumChildren = " + itoa(numChildren) + "\n"
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// event is a masked watch event line block as zkCli prints it.
func event(state, typ, path string) string {
	return "\nWATCHER::\n\nWatchedEvent state:" + state + " type:" + typ + " path:" + path + "\n"
}

// step is one command with what it must print (stdout masked, stderr) and
// its exit status.
type step struct {
	line      string
	out, err  string
	code      int
	sessional bool // depends on earlier commands of the same session: script mode only
	// zkdOnly steps are left out of the scripts compared with zkCli.sh,
	// whose watch events are printed by another thread and so race with
	// commands like printwatches.
	zkdOnly bool
}

// commandSteps covers every command. Run in order on a fresh server they
// give these outputs both as one-shot commands (except the sessional ones)
// and as one script.
func commandSteps() []step {
	usage := zkUsage()
	digest := func(user, pass string) string {
		h := sha1.Sum([]byte(user + ":" + pass))
		return user + ":" + base64.StdEncoding.EncodeToString(h[:])
	}
	return []step{
		{line: "create /t hello", err: "Created /t\n"},
		{line: "create /t x", err: "Node already exists: /t\n", code: 1},
		{line: "get /t", out: "hello\n"},
		{line: "get -s /t", out: "hello\n" + statOut(0, 0, 0, 5, 0, false)},
		{line: "set /t world"},
		{line: "set -s -v 1 /t again", out: statOut(2, 0, 0, 5, 0, false)},
		{line: "set -v 9 /t bad", err: "version No is not valid : /t\n", code: 1},
		{line: "stat /t", out: statOut(2, 0, 0, 5, 0, false)},
		{line: "stat /nope", err: "Node does not exist: /nope\n", code: 1},
		{line: `create /t/c1 "a b"`, err: "Created /t/c1\n"},
		{line: "get /t/c1", out: "a b\n"},
		{line: "create /t/empty", err: "Created /t/empty\n"},
		{line: "get /t/empty", out: "null\n"},
		{line: "create -s /t/s- b", err: "Created /t/s-0000000002\n"},
		{line: "create -c /cont", err: "Created /cont\n"},
		{line: "create -t 60000 /ttl", err: "Created /ttl\n"},
		{line: "create -c -e /bad", err: "-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.\n", code: 1},
		{line: "create -t x /bad", err: "-t argument must be a long value\n", code: 1},
		{line: "create -t 10 -e /bad", err: "TTLs cannot be used with Ephemeral znodes\n", code: 1},
		{line: "create noslash", err: "Path must start with / character\n", code: 1},
		{line: "create /t/", err: "Path must not end with / character\n", code: 1},
		{line: "create /nope/child", err: "Node does not exist: /nope/child\n", code: 1},
		{line: "ls /t", out: "[c1, empty, s-0000000002]\n"},
		{line: "ls -s /t", out: "[c1, empty, s-0000000002]\n" + statOut(2, 3, 0, 5, 3, false)},
		{line: "create /t/c1/d", err: "Created /t/c1/d\n"},
		{line: "ls -R /t", out: "/t\n/t/c1\n/t/empty\n/t/s-0000000002\n/t/c1/d\n"},
		{line: "delete /t/c1/d"},
		{line: "ls /nope", err: "Node does not exist: /nope\n", code: 1},
		{line: "ls", err: "ls [-s] [-w] [-R] path\n", code: 1},
		{line: "get -x /t", err: "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -x\n", code: 1},
		{line: "getAcl /t", out: "'world,'anyone\n: cdrwa\n"},
		{line: "getAcl -s /t", out: "'world,'anyone\n: cdrwa\n" + statOut(2, 3, 0, 5, 3, false)},
		{line: "getAcl /nope", err: "Node does not exist: /nope\n", code: 1},
		{line: "create /acl x world:anyone:r,ip:10.0.0.0/8:rw", err: "Created /acl\n"},
		{line: "getAcl /acl", out: "'world,'anyone\n: r\n'ip,'10.0.0.0/8\n: rw\n"},
		{line: "set /acl y", err: "Insufficient permission : /acl\n", code: 1},
		{line: "create /bogusacl x bogus:acl", err: "bogus:acl does not have the form scheme:id:perm\nKeeperErrorCode = InvalidACL\nAcl is not valid : null\n", code: 1},
		{line: "setAcl /t world:anyone:cdrwa"},
		{line: "setAcl -s /t world:anyone:cdrwa", out: statOut(2, 3, 2, 5, 3, false)},
		{line: "setAcl -v 99 /t world:anyone:cdrwa", err: "version No is not valid : /t\n", code: 1},
		{line: "setAcl -R /t world:anyone:cdrwa,ip:10.0.0.0/8:r"},
		{line: "getAcl /t/c1", out: "'world,'anyone\n: cdrwa\n'ip,'10.0.0.0/8\n: r\n"},
		{line: "setAcl /acl world:anyone:cdrwa", err: "Insufficient permission : /acl\n", code: 1},
		{line: "getAllChildrenNumber /t", out: "3\n"},
		{line: "getAllChildrenNumber /nope", err: "Node does not exist: /nope\n", code: 1},
		{line: "getEphemerals /", out: "[]\n"},
		{line: "sync /t", out: "Sync is OK\n"},
		{line: "delete /t", err: "Node not empty: /t\n", code: 1},
		{line: "delete -v 5 /t/c1", err: "version No is not valid : /t/c1\n", code: 1},
		{line: "delete /t/c1"},
		{line: "delete /nope", err: "Node does not exist: /nope\n", code: 1},
		{line: "delete /zookeeper", err: "Arguments are not valid : /zookeeper\n", code: 1},
		{line: "deleteall /t"},
		{line: "get /t", err: "Node does not exist: /t\n", code: 1},
		{line: "deleteall /nope", err: "Node does not exist: /nope\n", code: 1},
		{line: "config", out: "\n"},
		{line: "config -c", out: " \n"},
		{line: "config -s", out: "\n" + statOut(0, 0, -1, 0, 0, false)},
		{line: "reconfig -add 5=127.0.0.1:1234:1235;1236", err: "KeeperErrorCode = Reconfig is disabled\n", code: 1},
		{line: "reconfig", err: "reconfig " + commands["reconfig"].usage + "\n", code: 1},
		{line: "whoami", out: "Auth scheme: User\nip: 127.0.0.1\n"},
		{line: "addWatch -m BOGUS /", err: "addWatch " + commands["addWatch"].usage + "\n", code: 1},
		{line: "removewatches /nope", err: "KeeperErrorCode = No such watcher for /nope\n", code: 1},
		{line: "printwatches", out: "printwatches is on\n"},
		{line: "version", out: "ZooKeeper CLI version: VERSION\n"},
		{line: "bogus", err: usage + "Command not found: Command not found bogus\n", code: 127},

		// Session state: ephemerals, watches, auth, history, close and connect.
		{line: "create -e /eph e", err: "Created /eph\n", sessional: true},
		{line: "create -e -s /eph- e", err: "Created /eph-0000000005\n", sessional: true},
		{line: "getEphemerals /eph", out: "[/eph, /eph-0000000005]\n", sessional: true},
		{line: "stat /eph", out: statOut(0, 0, 0, 1, 0, true), sessional: true},
		{line: "create /eph/c", err: "Ephemerals cannot have children: /eph/c\n", code: 1, sessional: true},
		{line: "create /w", err: "Created /w\n", sessional: true},
		{line: "get -w /w", out: "null\n", sessional: true},
		{line: "set /w 1", out: event("SyncConnected", "NodeDataChanged", "/w"), sessional: true},
		{line: "set /w 2", sessional: true},
		{line: "ls -w /w", out: "[]\n", sessional: true},
		{line: "create /w/a", out: event("SyncConnected", "NodeChildrenChanged", "/w"), err: "Created /w/a\n", sessional: true},
		{line: "stat -w /w/z", err: "Node does not exist: /w/z\n", code: 1, sessional: true},
		{line: "create /w/z", out: event("SyncConnected", "NodeCreated", "/w/z"), err: "Created /w/z\n", sessional: true},
		{line: "addWatch /w", sessional: true},
		{line: "set /w/a 1", out: event("SyncConnected", "NodeDataChanged", "/w/a"), sessional: true},
		{line: "create /w/a/deep", out: event("SyncConnected", "NodeCreated", "/w/a/deep"), err: "Created /w/a/deep\n", sessional: true},
		{line: "removewatches /w", out: event("SyncConnected", "PersistentWatchRemoved", "/w"), sessional: true},
		{line: "removewatches /w", err: "KeeperErrorCode = No such watcher for /w\n", code: 1, sessional: true},
		{line: "set /w/a 2", sessional: true},
		{line: "get -w /w/a", out: "2\n", sessional: true},
		{line: "removewatches /w/a -d", out: event("SyncConnected", "DataWatchRemoved", "/w/a"), sessional: true},
		{line: "addWatch -m PERSISTENT /w/a", sessional: true},
		{line: "create /w/a/x", out: event("SyncConnected", "NodeChildrenChanged", "/w/a"), err: "Created /w/a/x\n", sessional: true},
		{line: "set /w/a 3", out: event("SyncConnected", "NodeDataChanged", "/w/a"), sessional: true},
		{line: "create /w/a/x/y", err: "Created /w/a/x/y\n", sessional: true},
		{line: "removewatches /w/a", out: event("SyncConnected", "PersistentWatchRemoved", "/w/a"), sessional: true},
		{line: "ls -w /w", out: "[a, z]\n", sessional: true},
		{line: "removewatches /w -c -l", out: event("SyncConnected", "ChildWatchRemoved", "/w"), sessional: true},
		{line: "create /w/b", err: "Created /w/b\n", sessional: true},

		{line: "get -w /w", out: "2\n", sessional: true, zkdOnly: true},
		{line: "printwatches off", sessional: true, zkdOnly: true},
		{line: "set /w 4", sessional: true, zkdOnly: true},
		{line: "printwatches", out: "printwatches is off\n", sessional: true, zkdOnly: true},
		{line: "printwatches on", sessional: true, zkdOnly: true},
		{line: "addauth digest u:p", sessional: true},
		{line: "whoami", out: "Auth scheme: User\ndigest: u\nip: 127.0.0.1\n", sessional: true}, // sorted by mask
		{line: "create /d x auth::cdrwa", err: "Created /d\n", sessional: true},
		{line: "getAcl /d", out: "'digest,'" + digest("u", "p") + "\n: cdrwa\n", sessional: true},
		{line: "history", out: "", sessional: true}, // filled in by scriptHistory
		{line: "redo 0", err: "Created /t\n", sessional: true},
		{line: "redo 999", err: "Command index out of range\n", code: 1, sessional: true},
		{line: "close", out: event("Closed", "None", "null"), sessional: true},
		{line: "printwatches on", out: "Not connected\n", sessional: true}, // also lets zkCli.sh finish printing the event
		{line: "ls /", out: "Not connected\n", sessional: true},
		{line: "connect ADDR", sessional: true},
		{line: "getEphemerals /", out: event("SyncConnected", "None", "null") + "[]\n", sessional: true},
		{line: "getAcl /d", err: "Insufficient permission : /d\n", code: 1, sessional: true},
	}
}

// zkUsage is the command list zkCli prints for an unknown command.
func zkUsage() string {
	var b bytes.Buffer
	sh := NewShell(&b, &b, time.Second)
	sh.usage()
	return b.String()
}

// scriptHistory fills in the expected output of the history step: the ten
// previous lines and itself, numbered from 0.
func scriptHistory(steps []step) {
	for i := range steps {
		if steps[i].line != "history" {
			continue
		}
		var b strings.Builder
		for j := max(i-10, 0); j <= i; j++ {
			b.WriteString(itoa(j) + " - " + steps[j].line + "\n")
		}
		steps[i].out = b.String()
	}
}

// zkdOptions start zkd with TTL nodes enabled, as the steps use them.
var zkdOptions = zkproc.Options{ExtraCfg: map[string]string{"extendedTypesEnabled": "true"}}

func TestIntegration_OneShot(t *testing.T) {
	srv := zkproc.StartZkd(t, zkdOptions)
	connected := "Connecting to ADDR\n" + event("SyncConnected", "None", "null")
	for _, s := range commandSteps() {
		if s.sessional {
			continue
		}
		args := tokenize(s.line)
		r := runCLI(t, srv.Addr, nil, args...)
		if got := mask(r.out, srv.Addr); got != connected+s.out {
			t.Errorf("%s: stdout\n%q\nwant\n%q", s.line, got, connected+s.out)
		}
		if r.err != s.err {
			t.Errorf("%s: stderr\n%q\nwant\n%q", s.line, r.err, s.err)
		}
		if r.code != s.code {
			t.Errorf("%s: exit %d, want %d", s.line, r.code, s.code)
		}
	}
}

func TestIntegration_OneShotExitCodes(t *testing.T) {
	srv := zkproc.StartZkd(t, zkproc.Options{})
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"ls", "/"}, 0},
		{[]string{"get", "/missing"}, 1},
		{[]string{"nosuchcommand"}, 127},
		{[]string{"get"}, 1},
	}
	for _, tt := range tests {
		if r := runCLI(t, srv.Addr, nil, tt.args...); r.code != tt.code {
			t.Errorf("zkcli %q: exit %d, want %d (stderr %q)", tt.args, r.code, tt.code, r.err)
		}
	}
	// No server: the command fails with a connection loss.
	r := runCLI(t, "127.0.0.1:1", nil, "-timeout", "1000", "get", "/x")
	if r.code == 0 {
		t.Errorf("get without a server exited 0: %+v", r)
	}
}

func TestIntegration_Script(t *testing.T) {
	srv := zkproc.StartZkd(t, zkdOptions)
	steps := commandSteps()
	scriptHistory(steps)
	var script, wantOut, wantErr strings.Builder
	wantOut.WriteString("Connecting to ADDR\nWelcome to ZooKeeper!\nJLine support is disabled\n" + event("SyncConnected", "None", "null"))
	for _, s := range steps {
		script.WriteString(strings.ReplaceAll(s.line, "ADDR", srv.Addr) + "\n")
		wantOut.WriteString(s.out)
		wantErr.WriteString(s.err)
	}
	last := steps[len(steps)-1]
	script.WriteString("quit\n")
	wantOut.WriteString(event("Closed", "None", "null"))
	in := script.String()
	r := runCLI(t, srv.Addr, &in)
	compareLines(t, "stdout", mask(r.out, srv.Addr), wantOut.String())
	compareLines(t, "stderr", r.err, wantErr.String())
	if r.code != last.code {
		t.Errorf("exit %d, want %d (the last command's)", r.code, last.code)
	}

	// Without quit the script ends at end of input, with the last status.
	in = "ls /\nget /missing\n"
	if r := runCLI(t, srv.Addr, &in); r.code != 1 || r.err != "Node does not exist: /missing\n" {
		t.Errorf("script ending in a failure: %+v", r)
	}
	in = "get /missing\nls /\n"
	if r := runCLI(t, srv.Addr, &in); r.code != 0 {
		t.Errorf("script ending in a success exited %d", r.code)
	}
}

// compareLines reports the first differing line of two outputs.
func compareLines(t *testing.T, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			lo := max(i-5, 0)
			t.Fatalf("%s differs at line %d: got %q, want %q\ncontext (got):\n%s", what, i+1, gl, wl,
				strings.Join(g[lo:min(i+5, len(g))], "\n"))
		}
	}
}
