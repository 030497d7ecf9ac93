package sasl

import (
	"maps"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	props := map[string]string{"bob.pw": "from-prop"}
	tests := []struct {
		name    string
		text    string
		section string
		users   map[string]string
		krb     *Krb5Login
		err     string // from ParseJAAS or ServerLogin
	}{
		{
			name: "zookeeper docs",
			text: `Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_super="adminsecret"
       user_bob="bobsecret";
};`,
			section: "Server",
			users:   map[string]string{"super": "adminsecret", "bob": "bobsecret"},
		},
		{
			name: "comments, several sections, quoting",
			text: `// leading comment
/* block
   comment { ; } */
Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="bob" password="bobsecret";
};
Server {
  org.apache.zookeeper.server.auth.DigestLoginModule Required // flag case is free
    user_a='single "quoted"' user_b="with \"escape\" and ; { }" user_c=bare-word.1
    debug=true user_d="${bob.pw}";
};`,
			section: "Server",
			users:   map[string]string{"a": `single "quoted"`, "b": `with "escape" and ; { }`, "c": "bare-word.1", "d": "from-prop"},
		},
		{
			name:    "custom section name",
			text:    `MyZk { org.apache.zookeeper.server.auth.DigestLoginModule required user_x="y"; };`,
			section: "MyZk",
			users:   map[string]string{"x": "y"},
		},
		{
			name:    "missing section",
			text:    `Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="b"; };`,
			section: "Server",
			err:     `no JAAS section named "Server"`,
		},
		{
			name: "kerberos",
			text: `Server {
  com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/etc/zk.keytab"
  storeKey=true principal="zookeeper/host@EXAMPLE.COM";
};`,
			section: "Server",
			users:   map[string]string{},
			krb:     &Krb5Login{Principal: "zookeeper/host@EXAMPLE.COM", KeyTab: "/etc/zk.keytab", IsInitiator: true},
		},
		{
			name:    "kerberos from a ticket cache",
			text:    `Server { com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true storeKey=true principal="zookeeper/h@R"; };`,
			section: "Server",
			err:     "needs useKeyTab=true: zkd takes a server's Kerberos keys from a keytab only",
		},
		{
			name:    "kerberos without storeKey",
			text:    `Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k" principal="zookeeper/h@R"; };`,
			section: "Server",
			err:     "needs storeKey=true",
		},
		{
			name:    "kerberos without principal",
			text:    `Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="/k"; };`,
			section: "Server",
			err:     "needs keyTab and principal options",
		},
		{
			name:    "unknown module",
			text:    `Server { org.example.PlainLoginModule required user_a="b"; };`,
			section: "Server",
			err:     "org.example.PlainLoginModule, which zkd does not implement",
		},
		{name: "bad flag", text: `Server { org.apache.zookeeper.server.auth.DigestLoginModule mandatory; };`, err: `line 1: invalid control flag "mandatory"`},
		{name: "missing semicolon", text: "Server {\n org.apache.zookeeper.server.auth.DigestLoginModule required user_a=\"b\"\n}", err: "line 3: expected an option name or ';'"},
		{name: "unterminated quote", text: `Server { x required user_a="b; };`, err: "unterminated quoted string"},
		{name: "unterminated comment", text: `/* Server`, err: "unterminated /* comment"},
		{name: "duplicate section", text: "A { m required; };\nA { m required; };", err: "line 2: can not specify multiple entries for A"},
		{name: "option without value", text: `A { m required k=; };`, err: "option k of m has no value"},
		{name: "unknown property", text: `A { m required k="${nope}"; };`, err: "property ${nope} is not set"},
		{name: "empty section", text: `A { };`, err: "section A has no login module"},
		{name: "hash is not a comment", text: "# comment\nA { m required; };", err: "unexpected character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := ParseJAAS(tt.text, props)
			var users map[string]string
			var krb *Krb5Login
			if err == nil {
				users, krb, err = j.ServerLogin(tt.section)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(users, tt.users) {
				t.Fatalf("users = %v, want %v", users, tt.users)
			}
			if (krb == nil) != (tt.krb == nil) || krb != nil && *krb != *tt.krb {
				t.Fatalf("Krb5Login = %+v, want %+v", krb, tt.krb)
			}
		})
	}
}

// FuzzParseJAAS: any text parses or fails with an error, never a panic.
func FuzzParseJAAS(f *testing.F) {
	f.Add(`Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b"; };`)
	f.Add("/* x */ A { m optional k='${p}' ; } ;")
	f.Fuzz(func(t *testing.T, s string) {
		j, err := ParseJAAS(s, map[string]string{"p": "v"})
		if err == nil {
			for name := range j {
				j.ServerLogin(name)
			}
		}
	})
}
