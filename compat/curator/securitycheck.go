// Package curator lets Go tests drive Curator 5.4 (Debian's
// libcurator-recipes-java) against servers they started themselves: it
// compiles src/zkdcompat/SecurityCheck.java, the Curator program of the
// TLS and SASL tests (compat/zktls, compat/sasl), and runs it in a JVM
// with the flags of the case. The scenario suite of this directory is
// driven by ./run instead (README.md).
package curator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// jars are Debian's jars SecurityCheck needs: Curator, the ZooKeeper Java
// client and, for ClientCnxnSocketNetty, Netty (zookeeper.jar's manifest
// lacks netty-codec, as zkCli.sh's class path does).
var jars = []string{
	"curator-recipes", "curator-framework", "curator-client", "zookeeper", "zookeeper-jute",
	"guava", "slf4j-api", "slf4j-simple",
	"netty-buffer", "netty-codec", "netty-common", "netty-handler", "netty-resolver", "netty-transport",
	"netty-transport-native-epoll", "netty-transport-native-unix-common",
}

// aptCommand installs what SecurityCheck needs.
const aptCommand = "sudo apt-get update && sudo apt-get install -y zookeeper libcurator-recipes-java default-jdk-headless"

// classPath is the jars' class path.
func classPath() string {
	paths := make([]string, len(jars))
	for i, j := range jars {
		paths[i] = "/usr/share/java/" + j + ".jar"
	}
	return strings.Join(paths, ":")
}

// require skips t (fails it under CI=true) unless java, javac and every
// jar are installed.
func require(t testing.TB) {
	t.Helper()
	var missing []string
	for _, p := range strings.Split(classPath(), ":") {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	for _, b := range []string{"java", "javac"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("curator: missing %s; install with: %s", strings.Join(missing, ", "), aptCommand)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// SecurityCheck is SecurityCheck.java compiled for one test.
type SecurityCheck struct {
	classes string // javac's output directory
}

// CompileSecurityCheck compiles SecurityCheck.java (and the classes of
// this directory it uses) into a temporary directory of t.
func CompileSecurityCheck(t testing.TB) *SecurityCheck {
	t.Helper()
	require(t)
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("curator: cannot locate the package's source directory")
	}
	src := filepath.Join(filepath.Dir(self), "src")
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "javac", "-Xlint:-options", "-encoding", "UTF-8", "-d", out,
		"-cp", classPath(), "-sourcepath", src, filepath.Join(src, "zkdcompat", "SecurityCheck.java"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("curator: javac SecurityCheck.java: %v\n%s", err, b)
	}
	return &SecurityCheck{classes: out}
}

// Args are SecurityCheck's arguments: the server, the owner's identity
// (which the JVM flags give it), the other client's identity and the
// ZKClientConfig properties that make it so.
type Args struct {
	Connect  string // host:port
	Scheme   string // sasl or x509
	Owner    string // the owner's id under Scheme
	Other    string // the other client's id under Scheme
	OtherCfg map[string]string
}

// javaArgs is java's command line up to SecurityCheck's flags.
func (s *SecurityCheck) javaArgs(jvmFlags []string) []string {
	args := []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dzookeeper.admin.enableServer=false"}
	args = append(args, jvmFlags...)
	return append(args, "-cp", s.classes+":"+classPath(), "zkdcompat.SecurityCheck")
}

// Probe runs SecurityCheck --probe against connect with jvmFlags: one
// Curator client configured by them reads "/". It returns what it
// printed after "securitycheck: outcome " ("ok [sasl:bob@R]", or the
// simple class name of the exception Curator threw), or an error with
// the output when it printed none.
func (s *SecurityCheck) Probe(t testing.TB, jvmFlags []string, connect string) (string, error) {
	t.Helper()
	args := append(s.javaArgs(jvmFlags), "--connect", connect, "--probe")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, _ := exec.CommandContext(ctx, "java", args...).CombinedOutput()
	out := string(b)
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "securitycheck: outcome "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("SecurityCheck --probe against %s printed no outcome:\n%s", connect, out)
}

// Run runs SecurityCheck with jvmFlags (the -D properties of the case)
// and returns its output, with an error if it did not report success
// within three minutes.
func (s *SecurityCheck) Run(t testing.TB, jvmFlags []string, a Args) (string, error) {
	t.Helper()
	args := append(s.javaArgs(jvmFlags),
		"--connect", a.Connect, "--scheme", a.Scheme, "--id", a.Owner, "--other-id", a.Other)
	for k, v := range a.OtherCfg {
		args = append(args, "--other", k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := exec.CommandContext(ctx, "java", args...).CombinedOutput()
	out := string(b)
	if ctx.Err() != nil {
		return out, fmt.Errorf("SecurityCheck against %s timed out", a.Connect)
	}
	if err != nil || !strings.Contains(out, "securitycheck: ok") {
		return out, fmt.Errorf("SecurityCheck against %s: %v", a.Connect, err)
	}
	return out, nil
}
