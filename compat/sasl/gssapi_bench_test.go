package sasl

import (
	"strings"
	"testing"

	krb5client "github.com/jcmturner/gokrb5/v8/client"
	krb5config "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/zkd/zkd/compat/zkwire"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server/sasl"
)

// BenchmarkGSSAPISessionSetup measures new Kerberos-authenticated
// sessions a second on zkd and on ZooKeeper 3.8, with the same KDC,
// service keytab and JAAS Server section: each op connects, creates a
// session, authenticates it by GSSAPI as bob and closes it, one after
// another. bob logs in from his keytab once and keeps the service
// ticket, as a long-lived client process does, so an op costs the
// server the acceptance of one AP-REQ and the wrapped exchange after it,
// and the KDC nothing.
//
//	go test -run xxx -bench GSSAPISessionSetup -benchtime 2000x ./compat/sasl
func BenchmarkGSSAPISessionSetup(b *testing.B) {
	k := newKerberos(b)
	conf, err := krb5config.Load(k.kdc.Conf)
	if err != nil {
		b.Fatal(err)
	}
	kt, err := keytab.Load(k.bobKeytab)
	if err != nil {
		b.Fatal(err)
	}
	kc := krb5client.NewWithKeytab("bob", krbRealm, kt, conf, krb5client.DisablePAFXFAST(true))
	if err := kc.Login(); err != nil {
		b.Fatal(err)
	}
	defer kc.Destroy()
	for _, kind := range kinds {
		b.Run(string(kind), func(b *testing.B) {
			s := k.start(b, kind, k.serverKeytab, "")
			addr := "localhost:" + s.Addr[strings.LastIndex(s.Addr, ":")+1:]
			// The identity the exchange gives, once, outside the timing.
			if who := gssapiSession(b, addr, kc, true); who != "bob@"+krbRealm {
				b.Fatalf("%s: whoAmI after GSSAPI as bob: %q, want bob@%s", kind, who, krbRealm)
			}
			b.ResetTimer()
			for b.Loop() {
				gssapiSession(b, addr, kc, false)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sessions/s")
		})
	}
}

// gssapiSession opens a session at addr, authenticates it by GSSAPI with
// kc's credentials as the service zookeeper/localhost, and closes it; with
// whoAmI it returns the sasl identity the server then reports.
func gssapiSession(b *testing.B, addr string, kc *krb5client.Client, whoAmI bool) string {
	c, err := zkwire.Dial(addr, zkwire.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	g := sasl.NewGSSAPIClient(kc, "zookeeper", "localhost")
	token, err := g.First()
	if err != nil {
		b.Fatal(err)
	}
	for !g.Complete() {
		var resp jute.SetSASLResponse
		if _, err := c.Call(jute.OpSASL, &jute.GetSASLRequest{Token: token}, &resp); err != nil {
			b.Fatalf("GSSAPI exchange with %s: %v", addr, err)
		}
		if token, err = g.Evaluate(resp.Token); err != nil {
			b.Fatalf("GSSAPI exchange with %s: %v", addr, err)
		}
	}
	if !whoAmI {
		return ""
	}
	var who jute.WhoAmIResponse
	if _, err := c.Call(jute.OpWhoAmI, nil, &who); err != nil {
		b.Fatalf("whoAmI at %s: %v", addr, err)
	}
	var ids []string
	for _, id := range who.ClientInfo {
		if id.AuthScheme == "sasl" {
			ids = append(ids, id.User)
		}
	}
	return strings.Join(ids, ",")
}
