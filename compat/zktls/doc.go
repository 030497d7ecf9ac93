// Package zktls runs real clients over TLS against real zkd processes and,
// with the same zoo.cfg and key stores, against ZooKeeper 3.8: secure and
// unified client ports, PEM, PKCS12 and JKS stores, x509 identities and
// ACLs, and the bad inputs (untrusted, expired or missing certificates,
// plaintext on a TLS port, a handshake that never completes) each of which
// must close only its own connection. Certificates are made at test time.
package zktls
