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
package tlsconf
