// Package layers writes down which of zkd's packages may import which, and
// its test fails when one imports a layer above it, so that the shape drawn
// in README.md and DESIGN.md cannot drift unnoticed.
//
// zkd's top-level directories are its layers. From the bottom:
//
//	jute                 the wire format; pure functions
//	datatree, session    the znode tree; sessions and their expiry
//	zab                  the raft log, FSM and stores (and leaves both
//	                     server and quorum use: zab/fencing, zab/tlsconf)
//	server, quorum       the client side; the ensemble (siblings)
//	compat               real clients and servers, the tests' tooling
//	cmd                  the binaries, which wire server and quorum
//
// so the dependencies run cmd → {server, quorum} → zab → {datatree,
// session} → jute. A package may import its own layer's packages (server
// imports server/sasl) and any layer below its own, never a layer above
// and never a sibling: server does not import quorum, nor quorum server.
// cmd hands server a Submit function that reaches quorum or zab.
//
// Test code — _test.go files and harness packages named *test, such as
// quorum/quorumtest — may also import compat, whose zkproc starts real
// zkd and ZooKeeper processes.
//
// The package has no code of its own: its test lists the module's packages
// with go list and reads their import lines with go/build.
package layers
