package sasl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkd/zkd/compat/curator"
	"github.com/zkd/zkd/compat/krb5kdc"
	"github.com/zkd/zkd/compat/zkproc"
)

// TestIntegration_SASLGSSAPICurator: Curator with Krb5LoginModule JAAS
// sections, as Kafka, HBase and Hadoop configure it, against zkd and
// ZooKeeper 3.8 with the same KDC, keytabs and JAAS files:
//   - the Client section (bob's keytab) is sasl:bob@REALM: it takes an
//     InterProcessMutex and does ACL'd reads, writes and a transaction,
//     while a client of the Other section (alice,
//     zookeeper.sasl.clientconfig) is refused each of them;
//   - a server keytab of old keys, a client keytab of old keys, an
//     expired ticket, a principal the KDC no longer knows and a client of
//     another realm end the same for the application on both servers,
//     pinned by the outcome of Curator's first read: with the stale
//     server keytab, and for the client of another realm (whose KDC has
//     no zookeeper/localhost), it throws AuthFailedException; with a
//     client that cannot log in (stale keytab, expired ticket, deleted
//     principal) the Java client goes on without SASL, so the read
//     succeeds and the connection's only identity is ip.
func TestIntegration_SASLGSSAPICurator(t *testing.T) {
	zkproc.RequireZooKeeper(t)
	check := curator.CompileSecurityCheck(t)
	k := newKerberos(t)
	aliceKeytab := k.kdc.NewPrincipal("alice")
	short := k.kdc.ExpiredCache("bob@"+krbRealm, k.bobKeytab)
	eveKeytab := k.kdc.DeletedPrincipal("eve")
	carolOld, _ := k.kdc.RekeyedPrincipal("carol")
	// bob of another realm, with a KDC of its own (and its krb5.conf)
	// that has no zookeeper service.
	other := krb5kdc.Start(t, "OTHER.TEST")
	otherJAAS := clientJAAS(t, "bob@OTHER.TEST", other.NewPrincipal("bob"), "")
	both := filepath.Join(t.TempDir(), "client.jaas")
	if err := os.WriteFile(both, []byte(krb5kdc.JAASSection("Client", "bob@"+krbRealm, k.bobKeytab, "")+
		krb5kdc.JAASSection("Other", "alice@"+krbRealm, aliceKeytab, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := func(jaas, conf string) []string {
		if conf == "" {
			conf = k.kdc.Conf
		}
		return []string{"-Djava.security.auth.login.config=" + jaas, "-Djava.security.krb5.conf=" + conf}
	}
	failures := []struct {
		name, jaas    string
		conf          string // the client's krb5.conf; "" the realm's
		keytab, extra string // server's
		want          string // the outcome of Curator's first read
	}{
		{name: "stale server keytab", jaas: both, keytab: k.oldKeytab, extra: "isInitiator=false", want: "AuthFailedException"},
		{name: "stale client keytab", jaas: clientJAAS(t, "carol@"+krbRealm, carolOld, ""), want: "ok [ip:127.0.0.1]"},
		{name: "expired ticket", jaas: clientJAAS(t, "bob@"+krbRealm, "", short), want: "ok [ip:127.0.0.1]"},
		{name: "deleted principal", jaas: clientJAAS(t, "eve@"+krbRealm, eveKeytab, ""), want: "ok [ip:127.0.0.1]"},
		{name: "another realm", jaas: otherJAAS, conf: other.Conf, want: "AuthFailedException"},
	}
	outcomes := map[string]map[zkproc.Kind]string{}
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			ss := k.servers(t, kind)
			s := ss.get("", "", nil)
			_, port, _ := strings.Cut(s.Addr, ":")
			connect := "localhost:" + port
			out, err := check.Run(t, flags(both, ""), curator.Args{
				Connect:  connect,
				Scheme:   "sasl",
				Owner:    "bob@" + krbRealm,
				Other:    "alice@" + krbRealm,
				OtherCfg: map[string]string{"zookeeper.sasl.clientconfig": "Other"},
			})
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, f := range failures {
				s := ss.get(f.keytab, f.extra, nil)
				_, port, _ := strings.Cut(s.Addr, ":")
				got, err := check.Probe(t, flags(f.jaas, f.conf), "localhost:"+port)
				if err != nil {
					t.Fatalf("%s: %v", f.name, err)
				}
				if got != f.want {
					t.Errorf("%s: Curator's first read ends %q, want %q", f.name, got, f.want)
				}
				if outcomes[f.name] == nil {
					outcomes[f.name] = map[zkproc.Kind]string{}
				}
				outcomes[f.name][kind] = got
			}
		})
	}
	for _, f := range failures {
		o := outcomes[f.name]
		t.Logf("%s: zkd %s, ZooKeeper %s", f.name, o[zkproc.KindZkd], o[zkproc.KindZooKeeper])
		if o[zkproc.KindZkd] != o[zkproc.KindZooKeeper] {
			t.Errorf("%s: Curator ends with %q on zkd, %q on ZooKeeper 3.8", f.name, o[zkproc.KindZkd], o[zkproc.KindZooKeeper])
		}
	}
}
