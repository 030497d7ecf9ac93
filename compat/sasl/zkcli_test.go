package sasl

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

const zkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

// TestIntegration_SASLJavaClient: ZooKeeper's own Java client (zkCli.sh)
// with a JAAS Client section in CLIENT_JVMFLAGS authenticates to zkd as to
// ZooKeeper 3.8 (SaslAuthenticated, whoami shows sasl: bob), and a wrong
// password ends in AuthFailed on both.
func TestIntegration_SASLJavaClient(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	if _, err := os.Stat(zkCliPath); err != nil {
		t.Fatalf("%s missing with ZooKeeper installed: %v", zkCliPath, err)
	}
	dir := t.TempDir()
	clientJAAS := func(password string) string {
		p := filepath.Join(dir, password+".conf")
		text := "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  username=\"bob\"\n  password=\"" + password + "\";\n};\n"
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, bad := clientJAAS("bobsecret"), clientJAAS("wrong")
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			s := start(t, kind, jaasText, nil,
				map[string]string{"authProvider.1": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"})
			out := zkCli(t, s.Addr, good)
			for _, want := range []string{"state:SaslAuthenticated", "sasl: bob"} {
				if !strings.Contains(out, want) {
					t.Errorf("good password: output lacks %q:\n%s", want, out)
				}
			}
			out = zkCli(t, s.Addr, bad)
			if !strings.Contains(out, "state:AuthFailed") || strings.Contains(out, "sasl: bob") {
				t.Errorf("wrong password: want AuthFailed and no sasl identity:\n%s", out)
			}
		})
	}
}

// zkCli runs `zkCli.sh -server addr whoami` with the JAAS file jaas.
func zkCli(t *testing.T, addr, jaas string) string {
	t.Helper()
	return zkCliFlags(t, addr, "-Djava.security.auth.login.config="+jaas)
}

// zkCliFlags runs `zkCli.sh -server addr whoami` with java flags.
func zkCliFlags(t *testing.T, addr, flags string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, zkCliPath, "-server", addr, "whoami")
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS="+flags+" -XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("zkCli.sh timed out: %s", out)
	}
	if err != nil {
		t.Logf("zkCli.sh: %v", err)
	}
	return string(out)
}
