package server

import (
	"slices"
	"testing"

	"github.com/zkd/zkd/jute"
)

func TestIdentity(t *testing.T) {
	super := Digest("super:secret")
	s := startServer(t, func(c *Config) { c.SuperDigest = super })
	tests := []struct {
		scheme, cred string
		want         []jute.Id
		wantErr      bool
	}{
		{"digest", "alice:pw", []jute.Id{{Scheme: "digest", Id: Digest("alice:pw")}}, false},
		{"digest", "super:secret", nil, false}, // checked below: digest and super
		{"digest", "nopassword", nil, true},
		{"digest", ":pw", nil, true},
		{"ip", "127.0.0.1", nil, true},
		{"x509", "CN=a", nil, true},
		{"sasl", "bob", nil, true},
	}
	for _, tc := range tests {
		got, err := s.Identity(tc.scheme, tc.cred)
		if (err != nil) != tc.wantErr {
			t.Errorf("Identity(%s, %s): err = %v, want error %v", tc.scheme, tc.cred, err, tc.wantErr)
			continue
		}
		if tc.want != nil && !slices.Equal(got, tc.want) {
			t.Errorf("Identity(%s, %s) = %v, want %v", tc.scheme, tc.cred, got, tc.want)
		}
	}
	ids, _ := s.Identity("digest", "super:secret")
	if !slices.Contains(ids, jute.Id{Scheme: "super"}) || !slices.Contains(ids, jute.Id{Scheme: "digest", Id: super}) {
		t.Errorf("super identity = %v, want digest and super", ids)
	}
}
