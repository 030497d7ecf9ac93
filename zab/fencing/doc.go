// Package fencing is zkd's fencing-token codec and signer. A token names one
// lock node — the lock path, the node's name, its czxid and its owner
// session — and the zxid at which a member read it, and is signed with the
// ensemble's Ed25519 key. czxid is the order of grants: every node ever
// created gets a larger one, so a later holder of any lock carries a larger
// czxid than an earlier one, even after the lock's parent container was
// removed and its sequence numbers restarted at 0.
//
// The key is a 32-byte Ed25519 seed that the leader draws once and
// replicates through the raft log (package zab); every member signs with it,
// and since Ed25519 signatures are deterministic, every member signs the same
// token alike. Clients read tokens through the ZooKeeper protocol at
// /zookeeper/fencing<lock node path> and the public key at /zookeeper/fencing
// (package server).
//
// # Wire format
//
// A token is ASCII text, so that zkCli's get prints it and a shell can pass it
// on:
//
//	zkdf1.<payload>.<signature>
//
// Both parts are unpadded base64url (RFC 4648 §5). The signature is Ed25519
// (RFC 8032) over the payload's raw bytes. The payload is big-endian:
//
//	4 bytes   magic "ZKDF"
//	1 byte    version 1
//	8 bytes   key id: the first 8 bytes of SHA-256 of the raw public key
//	8 bytes   czxid (signed)
//	8 bytes   owner session id (signed)
//	8 bytes   read zxid (signed)
//	4+n bytes lock path: a signed length, then UTF-8 bytes
//	4+n bytes node name: likewise
//
// and nothing after. Decode refuses anything else. This package imports only
// the standard library, so storage services can import it (or its verify
// sub-package) without pulling in the server.
package fencing
