// Package diskfault holds real-process tests of zkd on a misbehaving disk:
// each test runs zkd members (built from ./cmd/zkd, or ZKD_BIN) with their
// data directory on a compat/faultfs mount served by the test process,
// drives them with a real go-zk client, flips a fault, and checks what
// docs/disk-faults.md says must happen: the member's one log line, its
// exit or its refusal, that every acknowledged write is there after a
// restart, and that the writing client's session outlived the fault.
// TestIntegration_ZooKeeperEnsembleFaults runs the 3-member faults on
// ZooKeeper 3.8 and pins what it does, for the document's comparison.
package diskfault
