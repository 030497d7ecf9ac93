// Package corners pins the protocol corners where a client sends what
// ZooKeeper's own clients never send, each checked against a real
// ZooKeeper 3.8 and zkd side by side: a multiRead (opcode 22) holding write
// operations, a client's deleteContainer (opcode 20, server-internal),
// frames at and over jute.maxbuffer (requests and the connect request
// alike), and the order of the ACL entries an "auth" ACL expands to. The outcome of each case (reply error, body
// bytes, whether the reply consumed a zxid, how the connection ended) is
// compared between the two servers and with the outcome recorded from
// ZooKeeper 3.8, so that neither can drift unnoticed.
//
// The package holds tests only; `go test ./compat/corners` runs them (they
// need Debian's zookeeper package, as compat/zkproc explains).
package corners
