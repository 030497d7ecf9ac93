package sasl

import (
	"strings"
	"testing"
)

// TestQuorumServicePrincipal: "_HOST" is replaced by the dialed member's
// host, lowercased, only in a principal of exactly two parts split at
// "/", as ZooKeeper 3.8's SecurityUtils.getServerPrincipal does.
func TestQuorumServicePrincipal(t *testing.T) {
	tests := []struct{ configured, host, want string }{
		{"zkquorum/localhost", "10.0.0.1", "zkquorum/localhost"},
		{"zkquorum/_HOST", "ZK1.Example.COM", "zkquorum/zk1.example.com"},
		{"zkquorum/_HOST", "127.0.0.1", "zkquorum/127.0.0.1"},
		// With a realm the second part is "_HOST@R": left as it is.
		{"zkquorum/_HOST@R", "zk1", "zkquorum/_HOST@R"},
		{"zkquorum", "zk1", "zkquorum"},
		{"a/_HOST/b", "zk1", "a/_HOST/b"},
	}
	for _, tt := range tests {
		if got := QuorumServicePrincipal(tt.configured, tt.host); got != tt.want {
			t.Errorf("QuorumServicePrincipal(%q, %q) = %q, want %q", tt.configured, tt.host, got, tt.want)
		}
	}
}

// TestAuthorizeLearner: a learner is authorized as its own principal only,
// and a principal name/host@REALM only when host is a server.N host, as
// ZooKeeper's SaslQuorumServerCallbackHandler decides.
func TestAuthorizeLearner(t *testing.T) {
	hosts := []string{"127.0.0.1", "zk2.example"}
	tests := []struct {
		principal, requested string
		err                  string
	}{
		{"zkquorum/127.0.0.1@R", "", ""},
		{"zkquorum/127.0.0.1@R", "zkquorum/127.0.0.1@R", ""},
		{"learner/zk2.example@R", "", ""},
		// Not of the form name/host@REALM: no host to check.
		{"learner@R", "", ""},
		{"zkquorum/127.0.0.2@R", "", "host 127.0.0.2 is in no server.N line"},
		{"zkquorum/127.0.0.1@R", "bob@R", "asked to be authorized as bob@R"},
	}
	for _, tt := range tests {
		err := authorizeLearner(tt.principal, tt.requested, hosts)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("authorizeLearner(%q, %q) = %v, want %q", tt.principal, tt.requested, err, tt.err)
		}
	}
}
