package main

import (
	"crypto/ed25519"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab/fencing"
)

// init adds zkcli's own fence command to zkCli's table (see locks.go).
func init() {
	commands["fence"] = command{optSpec{vals: "k"}, "show path | verify [-k key] token # zkd fencing tokens: read a lock node's token, or check one", cmdFence}
}

// cmdFence handles zkd's fencing tokens (docs/fencing.md):
//
//	fence show PATH          reads the token of lock node PATH from
//	                         /zookeeper/fencing<PATH>, checks it against the
//	                         key at /zookeeper/fencing and prints it
//	fence verify [-k KEY] TOKEN
//	                         checks TOKEN against KEY (a file holding the
//	                         key as published, or the raw key in base64;
//	                         default: the server's /zookeeper/fencing) and
//	                         prints its content
//
// A token that does not verify is an error (exit status 1 in one-shot
// mode). Neither command checks that a token is the newest: that is the
// resource's job (package zab/fencing/verify).
func cmdFence(sh *Shell, p *parsedArgs) error {
	if len(p.args) != 3 || (p.args[1] != "show" && p.args[1] != "verify") || (p.args[1] == "show" && p.has("k")) {
		return usageErr(p)
	}
	var key ed25519.PublicKey
	var err error
	if k, ok := p.opts["k"]; ok {
		key, err = keyArg(k)
	} else {
		key, err = serverKey(sh)
	}
	if err != nil {
		return err
	}
	token := []byte(p.args[2])
	if p.args[1] == "show" {
		path := p.args[2]
		if err := checkPath(path); err != nil {
			return err
		}
		resp := &jute.GetDataResponse{}
		if err := sh.sess.Call(jute.OpGetData, &jute.GetDataRequest{Path: fencing.TokenPathPrefix + path}, resp); err != nil {
			return zkErr(err, fencing.TokenPathPrefix+path)
		}
		token = resp.Data
	}
	return printToken(sh.out, token, key)
}

// serverKey reads the public key the server publishes.
func serverKey(sh *Shell) (ed25519.PublicKey, error) {
	resp := &jute.GetDataResponse{}
	if err := sh.sess.Call(jute.OpGetData, &jute.GetDataRequest{Path: fencing.TokenPathPrefix}, resp); err != nil {
		return nil, zkErr(err, fencing.TokenPathPrefix)
	}
	key, err := fencing.ParsePublicKey(resp.Data)
	if err != nil {
		return nil, failf("%s: %v", fencing.TokenPathPrefix, err)
	}
	return key, nil
}

// keyArg reads -k: a file holding the key as published, or the raw key in
// base64.
func keyArg(k string) (ed25519.PublicKey, error) {
	data := []byte(k)
	if b, err := os.ReadFile(k); err == nil {
		data = b
	}
	key, err := fencing.ParsePublicKey(data)
	if err != nil {
		return nil, failf("-k %s: %v", k, err)
	}
	return key, nil
}

// printToken decodes token, prints its fields and checks its signature.
func printToken(w io.Writer, token []byte, key ed25519.PublicKey) error {
	d, err := fencing.Decode(token)
	if err != nil {
		return failf("%v", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "token = %s\n", strings.TrimSpace(string(token)))
	fmt.Fprintf(&b, "lock = %s\nnode = %s\n", d.LockPath, d.Node)
	fmt.Fprintf(&b, "czxid = 0x%x\nsession = 0x%x\nreadZxid = 0x%x\nkeyId = %s\n",
		uint64(d.Czxid), uint64(d.Session), uint64(d.ReadZxid), d.KeyID)
	fmt.Fprint(w, b.String())
	if !d.Verify(key) {
		return failf("fence: signature does not verify with key %s", fencing.IDOf(key))
	}
	fmt.Fprintf(w, "signature = valid (Ed25519, key %s)\n", fencing.IDOf(key))
	return nil
}
