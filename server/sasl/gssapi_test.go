package sasl

import "testing"

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
