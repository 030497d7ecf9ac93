package sasl

import (
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"
)

// TestKerberosMapName: principals become names as ZooKeeper's
// SaslServerCallbackHandler makes them with KerberosName's DEFAULT rule
// (checked against ZooKeeper 3.8 by compat/sasl's GSSAPI tests).
func TestKerberosMapName(t *testing.T) {
	tests := []struct {
		comps                   []string
		realm                   string
		removeHost, removeRealm bool
		want                    string
	}{
		{[]string{"bob"}, "R", false, false, "bob@R"},
		{[]string{"bob"}, "R", false, true, "bob"},
		{[]string{"app", "h.example"}, "R", false, false, "app/h.example@R"},
		{[]string{"app", "h.example"}, "R", true, false, "app@R"},
		{[]string{"app", "h.example"}, "R", true, true, "app"},
		{[]string{"app", "h.example"}, "R", false, true, "app/h.example"},
		// Another realm matches no DEFAULT rule: the whole principal.
		{[]string{"bob"}, "OTHER", true, true, "bob@OTHER"},
		{[]string{"a", "b", "c"}, "R", true, true, "a/b/c@R"},
	}
	for _, tt := range tests {
		k := &Kerberos{DefaultRealm: "R", RemoveHost: tt.removeHost, RemoveRealm: tt.removeRealm}
		if got := k.MapName(tt.comps, tt.realm); got != tt.want {
			t.Errorf("MapName(%v, %s) host=%v realm=%v = %q, want %q", tt.comps, tt.realm, tt.removeHost, tt.removeRealm, got, tt.want)
		}
	}
}

// TestKerberosValidate: a principal not of the form service/host@REALM,
// or one the keytab has no key of, is refused.
func TestKerberosValidate(t *testing.T) {
	for _, p := range []string{"zookeeper@R", "zookeeper/h", "/h@R", "zookeeper/a/b@R"} {
		if err := (&Kerberos{Principal: p}).Validate(); err == nil {
			t.Errorf("Validate(%q) passed", p)
		}
	}
}

// testKerberos is a service with a keytab made from a password.
func testKerberos(t testing.TB) *Kerberos {
	kt := keytab.New()
	if err := kt.AddEntry("zookeeper/localhost", "R", "pw", time.Unix(0, 0), 1, 18); err != nil {
		t.Fatal(err)
	}
	return &Kerberos{Principal: "zookeeper/localhost@R", Keytab: kt, DefaultRealm: "R"}
}

// TestGSSAPIServerGarbage: tokens that are not a valid exchange end it
// with an error naming GSSAPI, and nothing after a failure is accepted.
func TestGSSAPIServerGarbage(t *testing.T) {
	if err := testKerberos(t).Validate(); err != nil {
		t.Fatalf("Validate of a good keytab: %v", err)
	}
	for _, tok := range [][]byte{nil, {}, {0x60}, {0x60, 0x03, 0x06, 0x01, 0x00}, []byte("username=bob"),
		{0x60, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x01, 0x00}} {
		s := NewGSSAPIServer(testKerberos(t), nil)
		if _, err := s.Evaluate(tok); err == nil || !strings.HasPrefix(err.Error(), "GSSAPI: ") {
			t.Errorf("Evaluate(%x) = %v, want a GSSAPI error", tok, err)
		}
		if _, err := s.Evaluate(nil); err == nil || s.Complete() {
			t.Errorf("exchange goes on after a failure")
		}
	}
}

// FuzzGSSAPIServer: any first and second token fail or succeed, never panic.
func FuzzGSSAPIServer(f *testing.F) {
	f.Add([]byte{0x60, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x01, 0x00}, []byte{5, 4, 0, 0xff})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		s := NewGSSAPIServer(testKerberos(t), nil)
		if _, err := s.Evaluate(a); err == nil {
			s.Evaluate(b)
		}
	})
}
