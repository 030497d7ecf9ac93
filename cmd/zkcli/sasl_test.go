package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkd/zkd/compat/zkproc"
)

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSASLFromEnv(t *testing.T) {
	dir := t.TempDir()
	client := writeFile(t, dir, "client.conf", `Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="pw"; };
Other { org.apache.zookeeper.server.auth.DigestLoginModule required username="amy" password="pw2"; };`)
	krb := writeFile(t, dir, "krb.conf", `Client { com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true; };`)
	tests := []struct {
		name, env string
		want      *saslCreds
		warning   string
		err       string
	}{
		{name: "none", env: "CLIENT_JVMFLAGS=-Xmx1g"},
		{name: "client section", env: "CLIENT_JVMFLAGS=-Xmx1g -Djava.security.auth.login.config=" + client, want: &saslCreds{"bob", "pw"}},
		{name: "JVMFLAGS", env: "JVMFLAGS=-Djava.security.auth.login.config=" + client, want: &saslCreds{"bob", "pw"}},
		{name: "section override", env: "CLIENT_JVMFLAGS=-Djava.security.auth.login.config=" + client + " -Dzookeeper.sasl.clientconfig=Other", want: &saslCreds{"amy", "pw2"}},
		{name: "sasl off", env: "CLIENT_JVMFLAGS=-Djava.security.auth.login.config=" + client + " -Dzookeeper.sasl.client=false"},
		{name: "missing section", env: "CLIENT_JVMFLAGS=-Djava.security.auth.login.config=" + client + " -Dzookeeper.sasl.clientconfig=Nope", warning: `no section "Nope"`},
		{name: "missing file", env: "CLIENT_JVMFLAGS=-Djava.security.auth.login.config=" + dir + "/none", err: "no such file"},
		{name: "kerberos", env: "CLIENT_JVMFLAGS=-Djava.security.auth.login.config=" + krb, err: "DIGEST-MD5 only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warning, err := saslFromEnv([]string{"PATH=/bin", tt.env})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) || !strings.Contains(warning, tt.warning) {
				t.Fatalf("got %+v %q, want %+v %q", got, warning, tt.want, tt.warning)
			}
		})
	}
}

// TestIntegration_SASL: with a JAAS Client section in CLIENT_JVMFLAGS, as
// zkCli.sh takes it, zkcli authenticates to a zkd whose JAAS Server
// section knows the user, before its command runs; a wrong password ends
// in AuthFailed, and the command is not run ("Not connected", as zkCli.sh
// reports a command on a session that failed authentication).
func TestIntegration_SASL(t *testing.T) {
	dir := t.TempDir()
	server := writeFile(t, dir, "server.conf", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="bobsecret"; };`)
	srv := zkproc.StartZkd(t, zkproc.Options{
		Env:      []string{"SERVER_JVMFLAGS=-Djava.security.auth.login.config=" + server},
		ExtraCfg: map[string]string{"authProvider.1": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"},
	})
	good := writeFile(t, dir, "good.conf", `Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="bobsecret"; };`)
	bad := writeFile(t, dir, "bad.conf", `Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="nope"; };`)

	t.Setenv("CLIENT_JVMFLAGS", "-Djava.security.auth.login.config="+good)
	script := "create /s data sasl:bob:cdrwa\nget /s\nwhoami\n"
	r := runCLI(t, srv.Addr, &script)
	for _, want := range []string{"state:SaslAuthenticated", "Created /s", "data", "sasl: bob"} {
		if !strings.Contains(r.out+r.err, want) {
			t.Errorf("good password: output lacks %q:\n%s\n%s", want, r.out, r.err)
		}
	}

	t.Setenv("CLIENT_JVMFLAGS", "-Djava.security.auth.login.config="+bad)
	r = runCLI(t, srv.Addr, nil, "get", "/s")
	if out := r.out + r.err; !strings.Contains(out, "state:AuthFailed") || strings.Contains(out, "SaslAuthenticated") || strings.Contains(out, "data") {
		t.Errorf("wrong password: want AuthFailed and no data:\n%s\n%s", r.out, r.err)
	}

	t.Setenv("CLIENT_JVMFLAGS", "")
	r = runCLI(t, srv.Addr, nil, "get", "/s")
	if !strings.Contains(r.out+r.err, "Insufficient permission : /s") {
		t.Errorf("without SASL: want NoAuth:\n%s\n%s", r.out, r.err)
	}
}
