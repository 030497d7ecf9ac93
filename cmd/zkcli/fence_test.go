package main

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/zab/fencing"
)

// TestIntegration_Fence runs zkcli fence show and fence verify against a
// real zkd: a lock node's token is shown and verifies with the server's
// key and with the key given by -k; another key, a tampered token, a
// non-lock path and bad usage fail with exit status 1.
func TestIntegration_Fence(t *testing.T) {
	srv := zkproc.StartZkd(t, zkproc.Options{})
	c, _, err := zk.Connect([]string{srv.Addr}, 10*time.Second, zk.WithLogger(nopLog{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var keyData []byte
	deadline := time.Now().Add(20 * time.Second)
	for keyData == nil {
		if keyData, _, err = c.Get(fencing.TokenPathPrefix); err != nil && time.Now().After(deadline) {
			t.Fatalf("no fencing key: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := c.Create("/l", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	node, err := c.Create("/l/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Get(node)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := fencing.ParsePublicKey(keyData)
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, srv.Addr, nil, "fence", "show", node)
	want := []string{"lock = /l\n", "node = lock-0000000000\n", fmt.Sprintf("czxid = 0x%x\n", st.Czxid),
		fmt.Sprintf("session = 0x%x\n", c.SessionID()), "signature = valid (Ed25519, key " + fencing.IDOf(pub).String() + ")\n"}
	for _, w := range want {
		if r.code != 0 || !strings.Contains(r.out, w) {
			t.Fatalf("fence show: exit %d, stdout %q, stderr %q; want %q", r.code, r.out, r.err, w)
		}
	}
	var token string
	for _, line := range strings.Split(r.out, "\n") {
		if v, ok := strings.CutPrefix(line, "token = "); ok {
			token = v
		}
	}
	other, _ := fencing.NewSigner(make([]byte, fencing.SeedLen))
	// The same token with its czxid raised by one, under the old signature.
	d, err := fencing.DecodeString(token)
	if err != nil {
		t.Fatal(err)
	}
	d.Payload[5+fencing.KeyIDLen+7]++
	_, sig, _ := strings.Cut(strings.TrimPrefix(token, fencing.Prefix), ".")
	tampered := fencing.Prefix + base64.RawURLEncoding.EncodeToString(d.Payload) + "." + sig
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"fence", "verify", token}, 0, "signature = valid"},
		{[]string{"fence", "verify", "-k", base64.StdEncoding.EncodeToString(pub), token}, 0, "signature = valid"},
		{[]string{"fence", "verify", "-k", base64.StdEncoding.EncodeToString(other.PublicKey()), token}, 1, "lock = /l"},
		{[]string{"fence", "verify", tampered}, 1, ""},
		{[]string{"fence", "verify", "zkdf1.nonsense"}, 1, ""},
		{[]string{"fence", "show", "/l"}, 1, ""},
		{[]string{"fence", "show", "-k", "x", node}, 1, ""},
		{[]string{"fence", "frobnicate", node}, 1, ""},
	}
	for _, tt := range tests {
		r := runCLI(t, srv.Addr, nil, tt.args...)
		if r.code != tt.code || !strings.Contains(r.out, tt.out) {
			t.Errorf("zkcli %q: exit %d, stdout %q, stderr %q; want exit %d and %q", tt.args, r.code, r.out, r.err, tt.code, tt.out)
		}
		if tt.code != 0 && r.err == "" {
			t.Errorf("zkcli %q: failed without a message", tt.args)
		}
	}
}

type nopLog struct{}

func (nopLog) Printf(string, ...any) {}
