package main

import "testing"

func TestSystemPropertiesRedactsSecrets(t *testing.T) {
	c := defaultZooCfg()
	for k, v := range map[string]string{
		"zookeeper.DigestAuthenticationProvider.superDigest": "super:abc=",
		"zookeeper.SASLAuthenticationProvider.superPassword": "s3cret",
		"zookeeper.ssl.keyStore.password":                    "ks",
		"java.security.auth.login.config":                    "/etc/jaas.conf",
		"zookeeper.superUser":                                "super",
		"zookeeper.zkd.console.identity":                     "digest:ops:pw",
	} {
		c.Props[k] = v
	}
	got := systemProperties(c)
	want := map[string]string{
		"zookeeper.DigestAuthenticationProvider.superDigest": redacted,
		"zookeeper.SASLAuthenticationProvider.superPassword": redacted,
		"zookeeper.ssl.keyStore.password":                    redacted,
		"java.security.auth.login.config":                    "/etc/jaas.conf",
		"zookeeper.superUser":                                "super",
		"zookeeper.zkd.console.identity":                     redacted,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %q", k, got[k], v)
		}
	}
}
