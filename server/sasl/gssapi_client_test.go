package sasl

import (
	"strings"
	"testing"

	"github.com/jcmturner/gokrb5/v8/types"
)

// TestGSSAPIClientOffer: the client takes only a security-layer offer
// wrapped by the acceptor under the session key, of 4 bytes, offering
// no security layer; anything else ends the exchange with an error
// naming GSSAPI. (The successful exchange runs against zkd and ZooKeeper
// 3.8 in cmd/zkcli's TestIntegration_SASLGSSAPI.)
func TestGSSAPIClientOffer(t *testing.T) {
	key := types.EncryptionKey{KeyType: 18, KeyValue: []byte("0123456789abcdef0123456789abcdef")}
	other := types.EncryptionKey{KeyType: 18, KeyValue: []byte("fedcba9876543210fedcba9876543210")}
	tok := func(k types.EncryptionKey, fromAcceptor bool, payload []byte) []byte {
		b, err := wrap(k, 7, fromAcceptor, payload)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tampered := tok(key, true, noLayerOffer)
	tampered[len(tampered)-1] ^= 1
	tests := []struct {
		name  string
		token []byte
		err   string
	}{
		{"from the initiator", tok(key, false, noLayerOffer), "lacks the SentByAcceptor flag"},
		{"another key", tok(other, true, noLayerOffer), "checksum"},
		{"tampered", tampered, "checksum"},
		{"short offer", tok(key, true, []byte{1, 0, 0}), "3 bytes, want 4"},
		{"layers only", tok(key, true, []byte{4, 0, 0x10, 0}), "not authentication alone"},
		{"not a wrap token", []byte("0123456789abcdefghij"), "not an RFC 4121 wrap token"},
	}
	for _, tt := range tests {
		c := &GSSAPIClient{service: "zookeeper/h", step: 1, key: key}
		_, err := c.Evaluate(tt.token)
		if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "GSSAPI: ") {
			t.Errorf("%s: err = %v, want GSSAPI: ...%q", tt.name, err, tt.err)
		}
		if c.Complete() {
			t.Errorf("%s: complete after a bad offer", tt.name)
		}
	}
	// The server's offer, as GSSAPIServer wraps it, is what the client
	// unwraps.
	s := &GSSAPIServer{key: key, seq: 9}
	offer, err := s.offer()
	if err != nil {
		t.Fatal(err)
	}
	got, err := unwrap(key, offer, true)
	if err != nil || string(got) != string(noLayerOffer) {
		t.Fatalf("server offer unwrapped as %x, %v", got, err)
	}
}
