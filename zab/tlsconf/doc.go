// Package tlsconf turns ZooKeeper 3.8's ssl.* settings into Go TLS
// configurations, so that a zoo.cfg and keystores that secure a ZooKeeper
// server secure zkd unchanged.
//
// It reads key and trust material in ZooKeeper's three store types (PEM,
// PKCS12 and JKS, chosen by ssl.keyStore.type or the file's extension as
// ZooKeeper does), maps ssl.clientAuth, ssl.protocol, ssl.enabledProtocols
// and ssl.ciphersuites onto a tls.Config, and reloads the stores when their
// files change so that new handshakes use the new certificates while
// established connections carry on. It also provides the listeners zkd's
// client port needs: TLS only (secureClientPort) or TLS and plaintext on one
// port told apart by the first byte (client.portUnification; Sniff, which
// the members' ports also use for the quorum portUnification), and the
// RFC 2253 subject name ZooKeeper's X509AuthenticationProvider uses as the
// x509 identity.
//
// Settings zkd does not implement (CRL and OCSP checking, a custom
// SSLContext supplier) are refused by FromProps with an error naming the
// property, never ignored.
//
// # Why under zab
//
// server (the client port, x509 authentication), quorum (the members'
// ports), cmd/zkcli and cmd/zkbench all need it, and server and quorum are
// siblings that may not import each other, so it must live in a layer
// below both. It imports no zkd package. zab is the lowest layer that does
// I/O (jute is pure; datatree and session touch no files or sockets),
// and zab/fencing already sits there for the same reason; tlsconf does not
// import zab, nor zab it.
package tlsconf
