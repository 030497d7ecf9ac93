// Package rejoin holds real-process tests of a member of a zkd ensemble
// whose data went back and rejoins: one restored from an old backup of its
// data directory, and one rebuilt from its peers with `zkd rebuild`
// (docs/disk-faults.md). Each runs three zkd members (built from
// ./cmd/zkd, or ZKD_BIN), drives them with a go-zk client, and checks
// that no acknowledged write is lost, that the member does not help elect
// a leader before it has caught up, and that it votes again after.
package rejoin
