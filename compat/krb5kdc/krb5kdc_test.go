package krb5kdc

import (
	"strings"
	"testing"
)

// TestIntegration_KDC: the KDC starts, a principal gets a keytab, kinit
// gets its TGT from the KDC (which logs the AS-REQ), and kinit of a
// principal the realm does not have fails.
func TestIntegration_KDC(t *testing.T) {
	k := Start(t, "TEST.ZKD")
	k.AddPrincipal("bob")
	kt := k.Keytab("bob.keytab", "bob")
	if _, err := k.Kinit("bob@TEST.ZKD", kt, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(k.Log(), "AS_REQ") || !strings.Contains(k.Log(), "bob@TEST.ZKD") {
		t.Fatalf("KDC log lacks bob's AS_REQ:\n%s", k.Log())
	}
	if _, err := k.Kinit("eve@TEST.ZKD", kt, 0); err == nil || !strings.Contains(err.Error(), "eve@TEST.ZKD") {
		t.Fatalf("kinit of an unknown principal: %v", err)
	}
}
