package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestSASLConfig reads SASL settings from zoo.cfg and JVM flags as
// zkServer.sh users write them, and refuses what zkd cannot honour, with
// the key or module named.
func TestSASLConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	digest := write("digest.conf", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="pw"; };
ZkCustom { org.apache.zookeeper.server.auth.DigestLoginModule required user_amy="pw2"; };`)
	krb := write("krb.conf", `Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="`+dir+`/none.keytab" principal="zookeeper/h@R"; };`)
	krbCache := write("krbcache.conf", `Server { com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true principal="zookeeper/h@R"; };`)
	broken := write("broken.conf", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="pw" };`)
	const saslProv = "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"

	tests := []struct {
		name, cfg, jvm string
		users          []string // sorted; nil: SASL off
		scheme         bool
		enforce        []string
		superUser      string
		err            string
	}{
		{name: "nothing", cfg: ""},
		{name: "jaas via SERVER_JVMFLAGS", cfg: saslProv, jvm: "-Djava.security.auth.login.config=" + digest + " -Dzookeeper.superUser=bob",
			users: []string{"bob"}, scheme: true, superUser: "bob"},
		{name: "section override", jvm: "-Djava.security.auth.login.config=" + digest + " -Dzookeeper.sasl.serverconfig=ZkCustom", users: []string{"amy"}},
		{name: "missing section leaves SASL off", jvm: "-Djava.security.auth.login.config=" + digest + " -Dzookeeper.sasl.serverconfig=Nope"},
		{name: "missing file", jvm: "-Djava.security.auth.login.config=" + dir + "/none.conf", err: "java.security.auth.login.config"},
		{name: "syntax error", jvm: "-Djava.security.auth.login.config=" + broken, err: "broken.conf: sasl: JAAS configuration line 1"},
		{name: "kerberos keytab missing", jvm: "-Djava.security.auth.login.config=" + krb, err: "section Server: keyTab " + dir + "/none.keytab: open"},
		{name: "kerberos from a ticket cache refused", jvm: "-Djava.security.auth.login.config=" + krbCache, err: "zkd takes a server's Kerberos keys from a keytab only"},
		{name: "auth_to_local rules refused", jvm: "-Djava.security.auth.login.config=" + krb + " -Dzookeeper.security.auth_to_local=RULE:[1:$1]", err: "zkd implements the DEFAULT rule only"},
		{name: "enforce", cfg: saslProv + "enforce.auth.enabled=true\nenforce.auth.schemes=sasl, digest\n", scheme: true, enforce: []string{"sasl", "digest"}},
		{name: "enforce without schemes", cfg: "enforce.auth.enabled=true\n", err: "zookeeper.enforce.auth.schemes must be configured"},
		{name: "enforce without provider", cfg: "enforce.auth.enabled=true\nenforce.auth.schemes=sasl\n", err: "authentication scheme sasl is not available"},
		{name: "sessionRequireClientSASLAuth", cfg: saslProv + "sessionRequireClientSASLAuth=true\n", scheme: true, enforce: []string{"sasl"}},
		{name: "sessionRequireClientSASLAuth without provider", jvm: "-Dzookeeper.sessionRequireClientSASLAuth=true", err: "scheme sasl is not available"},
		{name: "unknown provider", cfg: "authProvider.2=com.example.Ldap\n", err: "zookeeper.authProvider.2=com.example.Ldap: authentication provider not implemented"},
		{name: "letAnySaslUserDoX", jvm: "-Dzookeeper.letAnySaslUserDoX=anyone", err: "zookeeper.letAnySaslUserDoX=anyone is not implemented"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := write("zoo.cfg", "dataDir="+dir+"\n"+tt.cfg)
			c, err := parseZooCfg(p, []string{"SERVER_JVMFLAGS=" + tt.jvm})
			if err != nil {
				t.Fatal(err)
			}
			sc, scheme, err := saslConfig(c, zap.NewNop())
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var users []string
			if sc.Users != nil {
				for u := range sc.Users.Passwords {
					users = append(users, u)
				}
				slices.Sort(users)
			}
			if !slices.Equal(users, tt.users) || scheme != tt.scheme || !slices.Equal(sc.EnforceAuthSchemes, tt.enforce) || sc.SuperUser != tt.superUser {
				t.Fatalf("users %v scheme %v enforce %v super %q; want %v %v %v %q",
					users, scheme, sc.EnforceAuthSchemes, sc.SuperUser, tt.users, tt.scheme, tt.enforce, tt.superUser)
			}
			if (tt.users == nil) != (sc.Users == nil) {
				t.Fatalf("SASL on = %v, want %v", sc.Users != nil, tt.users != nil)
			}
		})
	}
}
