package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/krb5kdc"
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

// checkErr fails t unless err contains want ("" wants no error), and
// reports whether the test goes on (no error was wanted).
func checkErr(t *testing.T, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return true
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	return false
}

func TestSASLFromEnv(t *testing.T) {
	dir := t.TempDir()
	client := writeFile(t, dir, "client.conf", `Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="pw"; };
Other { org.apache.zookeeper.server.auth.DigestLoginModule required username="amy" password="pw2"; };`)
	other := writeFile(t, dir, "other.conf", `Client { com.example.LoginModule required; };`)
	tests := []struct {
		name, env string
		want      *saslCreds
		warning   string
		err       string
	}{
		{name: "none", env: "CLIENT_JVMFLAGS=-Xmx1g"},
		{name: "client section", env: "CLIENT_JVMFLAGS=-Xmx1g -Djava.security.auth.login.config=" + client, want: &saslCreds{user: "bob", password: "pw"}},
		{name: "JVMFLAGS", env: "JVMFLAGS=-Djava.security.auth.login.config=" + client, want: &saslCreds{user: "bob", password: "pw"}},
		{name: "section override", env: "CLIENT_JVMFLAGS=-Djava.security.auth.login.config=" + client + " -Dzookeeper.sasl.clientconfig=Other", want: &saslCreds{user: "amy", password: "pw2"}},
		{name: "sasl off", env: "CLIENT_JVMFLAGS=-Djava.security.auth.login.config=" + client + " -Dzookeeper.sasl.client=false"},
		{name: "missing section", env: "CLIENT_JVMFLAGS=-Djava.security.auth.login.config=" + client + " -Dzookeeper.sasl.clientconfig=Nope", warning: `no section "Nope"`},
		{name: "missing file", env: "CLIENT_JVMFLAGS=-Djava.security.auth.login.config=" + dir + "/none", err: "no such file"},
		{name: "other module", env: "CLIENT_JVMFLAGS=-Djava.security.auth.login.config=" + other, err: "zkcli speaks DIGEST-MD5 (org.apache.zookeeper.server.auth.DigestLoginModule) and Kerberos"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warning, err := saslFromEnv([]string{"PATH=/bin", tt.env})
			if !checkErr(t, err, tt.err) {
				return
			}
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) || !strings.Contains(warning, tt.warning) {
				t.Fatalf("got %+v %q, want %+v %q", got, warning, tt.want, tt.warning)
			}
		})
	}
}

// TestKrbFromEnv: a Krb5LoginModule Client section and the client
// properties become a Kerberos login: the principal completed with
// krb5.conf's default realm, the keytab or credential cache (ticketCache,
// else KRB5CCNAME without FILE:), the service name, canonicalization
// (on unless "false"), the server realm; a section zkcli cannot log in
// with (no keytab or cache, a keytab without principal, no krb5.conf) is
// refused, naming what is missing.
func TestKrbFromEnv(t *testing.T) {
	dir := t.TempDir()
	conf := writeFile(t, dir, "krb5.conf", "[libdefaults]\n  default_realm = R.TEST\n")
	jaas := func(opts string) string {
		return "-Djava.security.auth.login.config=" + writeFile(t, t.TempDir(), "c.conf", `Client { com.sun.security.auth.module.Krb5LoginModule required `+opts+`; };`) + " -Djava.security.krb5.conf=" + conf
	}
	tests := []struct {
		name, flags, ccname string
		want                *krbLogin // compared without conf and mu
		err                 string
	}{
		{name: "keytab", flags: jaas(`useKeyTab=true keyTab="/k" principal="bob"`),
			want: &krbLogin{principal: "bob@R.TEST", keyTab: "/k", service: "zookeeper", canonicalize: true}},
		{name: "client properties", flags: jaas(`useKeyTab=true keyTab="/k" principal="bob@X.TEST"`) +
			" -Dzookeeper.sasl.client.username=zk -Dzookeeper.sasl.client.canonicalize.hostname=no -Dzookeeper.server.realm=X.TEST -Dzookeeper.server.principal=zk/h",
			want: &krbLogin{principal: "bob@X.TEST", keyTab: "/k", service: "zk", serverRealm: "X.TEST", serverPrincipal: "zk/h"}},
		{name: "ticket cache option", flags: jaas(`useTicketCache=true ticketCache="/c"`),
			want: &krbLogin{ticketCache: "/c", service: "zookeeper", canonicalize: true}},
		{name: "KRB5CCNAME", flags: jaas(`useTicketCache=true`), ccname: "FILE:/cc",
			want: &krbLogin{ticketCache: "/cc", service: "zookeeper", canonicalize: true}},
		{name: "keytab without principal", flags: jaas(`useKeyTab=true keyTab="/k"`), err: "needs keyTab and principal"},
		{name: "neither", flags: jaas(`principal="bob"`), err: "cannot prompt for a password"},
		{name: "other cache type", flags: jaas(`useTicketCache=true ticketCache="KEYRING:persistent:0"`), err: "FILE: caches only"},
		{name: "no krb5.conf", flags: jaas(`useKeyTab=true keyTab="/k" principal="bob"`) + " -Djava.security.krb5.conf=" + dir + "/none", err: "needs a krb5.conf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := saslFromEnv([]string{"CLIENT_JVMFLAGS=" + tt.flags, "KRB5CCNAME=" + tt.ccname})
			if !checkErr(t, err, tt.err) {
				return
			}
			k := got.krb
			if k == nil || k.conf == nil {
				t.Fatalf("no Kerberos login: %+v", got)
			}
			g := []any{k.principal, k.keyTab, k.ticketCache, k.service, k.canonicalize, k.serverRealm, k.serverPrincipal}
			w := []any{tt.want.principal, tt.want.keyTab, tt.want.ticketCache, tt.want.service, tt.want.canonicalize, tt.want.serverRealm, tt.want.serverPrincipal}
			for i := range g {
				if g[i] != w[i] {
					t.Fatalf("got %v, want %v", g, w)
				}
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

// TestIntegration_SASLGSSAPI: with a JAAS Client section using
// Krb5LoginModule, zkcli authenticates by Kerberos to zkd and to
// ZooKeeper 3.8 (a real MIT KDC, the server's Server section as
// compat/sasl sets it up), from a keytab or a credential cache, and whoami
// shows the principal as the sasl identity; the server principal follows
// zookeeper.sasl.client.username, zookeeper.server.principal and the
// host as zkCli.sh builds it (127.0.0.1 becomes localhost, with
// canonicalization or without, and LOCALHOST localhost: zkCli.sh
// authenticates in these cases too, and fails with username zk). Failures end in AuthFailed with
// one line saying why, promptly: a keytab of old keys, a deleted
// principal, an unreachable KDC, an expired ticket, an unknown service,
// a server whose keytab is stale (the server refuses).
func TestIntegration_SASLGSSAPI(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	const realm = "ZKD.TEST"
	kdc := krb5kdc.Start(t, realm)
	kdc.AddPrincipal("zookeeper/localhost")
	oldServerKeytab := kdc.Keytab("zk-old.keytab", "zookeeper/localhost")
	kdc.Rekey("zookeeper/localhost")
	serverKeytab := kdc.Keytab("zk.keytab", "zookeeper/localhost")
	kdc.AddPrincipal("bob")
	oldBob := kdc.Keytab("bob-old.keytab", "bob")
	kdc.Rekey("bob")
	bob := kdc.Keytab("bob.keytab", "bob")
	kdc.AddPrincipal("eve")
	eve := kdc.Keytab("eve.keytab", "eve")
	kdc.Delete("eve")
	cache, err := kdc.Kinit("bob@"+realm, bob, 0)
	if err != nil {
		t.Fatal(err)
	}
	short, err := kdc.Kinit("bob@"+realm, bob, time.Second)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	// The server's keytab; a stale one holds keys the KDC no longer has
	// (isInitiator=false, so that the server starts with it).
	serverJAAS := func(name, keytab, extra string) string {
		return writeFile(t, dir, name, `Server { com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true keyTab="`+keytab+`" storeKey=true useTicketCache=false `+extra+` principal="zookeeper/localhost@`+realm+`"; };`)
	}
	jaasFiles := map[bool]string{false: serverJAAS("server.conf", serverKeytab, ""), true: serverJAAS("stale.conf", oldServerKeytab, "isInitiator=false")}
	keytabJAAS := func(name, principal, keytab string) string {
		return writeFile(t, dir, name, `Client { com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true keyTab="`+keytab+`" storeKey=true useTicketCache=false principal="`+principal+`"; };`)
	}
	cacheJAAS := func(name, ccache string) string {
		return writeFile(t, dir, name, `Client { com.sun.security.auth.module.Krb5LoginModule required
  useTicketCache=true ticketCache="`+ccache+`" principal="bob@`+realm+`"; };`)
	}
	good := keytabJAAS("bob.conf", "bob@"+realm, bob)
	flags := func(jaas string, extra ...string) string {
		return strings.Join(append([]string{"-Djava.security.auth.login.config=" + jaas, "-Djava.security.krb5.conf=" + kdc.Conf}, extra...), " ")
	}
	// A krb5.conf naming a KDC where nothing listens.
	deadKDC := writeFile(t, dir, "dead-krb5.conf", "[libdefaults]\n default_realm = "+realm+"\n[realms]\n "+realm+" = {\n  kdc = 127.0.0.1:"+strconv.Itoa(zkproc.FreePort(t))+"\n }\n")
	for deadline := time.Now().Add(20 * time.Second); !kdc.Expired(short); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a 1s ticket still valid after 20s")
		}
	}

	ok := []string{"state:SaslAuthenticated", "sasl: bob@" + realm}
	tests := []struct {
		name, host, flags string
		staleServer       bool
		want              []string // in stdout and stderr
	}{
		{name: "keytab", host: "localhost", flags: flags(good), want: ok},
		{name: "ticket cache", host: "localhost", flags: flags(cacheJAAS("cc.conf", cache)), want: ok},
		{name: "canonicalized address", host: "127.0.0.1", flags: flags(good), want: ok},
		// A literal IP is looked up even without canonicalization (Java's
		// InetSocketAddress.getHostName), and the host is lowercased.
		{name: "canonicalize off, address", host: "127.0.0.1", flags: flags(good, "-Dzookeeper.sasl.client.canonicalize.hostname=false"), want: ok},
		{name: "canonicalize off, upper case", host: "LOCALHOST", flags: flags(good, "-Dzookeeper.sasl.client.canonicalize.hostname=false"), want: ok},
		{name: "server principal", host: "localhost", flags: flags(good, "-Dzookeeper.server.principal=zookeeper/nohost@"+realm),
			want: []string{"state:AuthFailed", "service ticket for zookeeper/nohost@" + realm}},
		{name: "service name", host: "localhost", flags: flags(good, "-Dzookeeper.sasl.client.username=zk"),
			want: []string{"state:AuthFailed", "service ticket for zk/localhost@" + realm}},
		{name: "old keytab", host: "localhost", flags: flags(keytabJAAS("old.conf", "bob@"+realm, oldBob)),
			want: []string{"state:AuthFailed", "Kerberos login of bob@" + realm + " with keyTab " + oldBob}},
		{name: "unknown principal", host: "localhost", flags: flags(keytabJAAS("eve.conf", "eve@"+realm, eve)),
			want: []string{"state:AuthFailed", "Kerberos login of eve@" + realm}},
		{name: "KDC unreachable", host: "localhost", flags: flags(good, "-Djava.security.krb5.conf="+deadKDC),
			want: []string{"state:AuthFailed", "Kerberos login of bob@" + realm}},
		{name: "stale server keytab", host: "localhost", flags: flags(good), staleServer: true,
			want: []string{"state:AuthFailed", "SASL authentication to localhost:"}},
		{name: "expired ticket", host: "localhost", flags: flags(cacheJAAS("short.conf", short)),
			want: []string{"state:AuthFailed", "credential cache " + short + ": the ticket of bob@" + realm + " expired"}},
	}
	for _, kind := range []zkproc.Kind{zkproc.KindZkd, zkproc.KindZooKeeper} {
		t.Run(string(kind), func(t *testing.T) {
			servers := map[bool]string{} // port by staleServer
			port := func(stale bool) string {
				if p, ok := servers[stale]; ok {
					return p
				}
				jvm := []string{"-Djava.security.auth.login.config=" + jaasFiles[stale], "-Djava.security.krb5.conf=" + kdc.Conf}
				opts := zkproc.Options{ExtraCfg: map[string]string{"authProvider.1": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"}}
				var srv *zkproc.Server
				if kind == zkproc.KindZkd {
					opts.Env = []string{"SERVER_JVMFLAGS=" + strings.Join(jvm, " ")}
					srv = zkproc.StartZkd(t, opts)
				} else {
					opts.JVMFlags = jvm
					srv = zkproc.StartZooKeeper(t, opts)
				}
				_, servers[stale], _ = strings.Cut(srv.Addr, ":")
				return servers[stale]
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					p := port(tt.staleServer)
					t.Setenv("CLIENT_JVMFLAGS", tt.flags)
					start := time.Now()
					r := runCLI(t, tt.host+":"+p, nil, "whoami")
					out := r.out + r.err
					for _, w := range tt.want {
						if !strings.Contains(out, w) {
							t.Errorf("output lacks %q:\n%s", w, out)
						}
					}
					if tt.want[0] != ok[0] && strings.Contains(out, "sasl:") {
						t.Errorf("failed authentication shows a sasl identity:\n%s", out)
					}
					if d := time.Since(start); d > 15*time.Second {
						t.Errorf("took %v", d)
					}
				})
			}
		})
	}
}
