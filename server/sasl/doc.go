// Package sasl is the server side of ZooKeeper's SASL authentication
// (opcode sasl, 102): the DIGEST-MD5 mechanism of RFC 2831 as Java's
// DigestMD5Server runs it for ZooKeeper's SaslServer, the users of a JAAS
// login configuration's DigestLoginModule, and a DIGEST-MD5 client for
// zkd's own tools and tests.
//
// ZooKeeper fixes the mechanism's parameters: protocol "zookeeper", server
// name and realm "zk-sasl-md5", quality of protection "auth" only (no
// integrity or confidentiality layer), algorithm md5-sess, charset utf-8.
// An exchange is two round trips:
//
//	client: (empty token)
//	server: realm="zk-sasl-md5",nonce="…",charset=utf-8,algorithm=md5-sess
//	client: username="bob",realm=…,nonce=…,cnonce=…,nc=00000001,qop=auth,
//	        digest-uri="zookeeper/zk-sasl-md5",response=<hex>
//	server: rspauth=<hex>      (the server is done: bob is authenticated)
//
// Every failure is an error whose text names the reason, prefixed
// "DIGEST-MD5:" as Java's are; the caller (server) answers it the way
// ZooKeeper does (AuthFailed, then the connection closes).
//
// GSSAPI (Kerberos V5, RFC 4752) is GSSAPIServer: a JAAS section with
// Krb5LoginModule (ServerLogin) names the service principal
// service/host@REALM and its keytab (Kerberos). The client's AP-REQ is
// verified against the keytab, an AP-REP answers when the client asks for
// mutual authentication, then the server offers in an RFC 4121 wrap token
// no security layer (auth only, as ZooKeeper's SaslServer), and the
// client's wrapped answer must choose it:
//
//	client: GSS initial context token (AP-REQ)
//	server: AP-REP                     (if mutual authentication was asked)
//	client: (empty token)              (only after an AP-REP)
//	server: wrap([01 00 00 00])        (no security layer, max size 0)
//	client: wrap([01 xx xx xx] authzid)
//	server: (done: the principal, mapped by Kerberos.MapName)
//
// GSSAPIClient is the client side, for zkd's tools (zkcli): it sends the
// AP-REQ without asking for mutual authentication (the server's offer,
// checked under the session key, proves the server holds the service's
// keys), so its exchange is the path without AP-REP above, then waits for
// the server's empty last reply. The RFC 4121 wrap and unwrap are shared
// by both sides.
//
// Quorum SASL between members (ZooKeeper's quorum.auth.* keys) uses the
// same exchanges: NewQuorumClient and NewQuorumServer for DIGEST-MD5
// (digest-uri zookeeper-quorum/zk-quorum-sasl-md5), and for Kerberos
// NewQuorumGSSAPIClient (the ticket for the quorum service principal, see
// QuorumServicePrincipal) and NewQuorumGSSAPIServer, whose authorization
// is ZooKeeper's SaslQuorumServerCallbackHandler's: the learner as its own
// principal, whose host part a server.N line must name.
//
// The Kerberos messages, keytab and crypto are github.com/jcmturner/gokrb5.
// Encryption types of RFC 1964 tokens (DES, RC4) are refused.
package sasl
