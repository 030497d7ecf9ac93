package jute

// Every record of zookeeper.jute that zkd uses, except the handshake's two
// in proto.go, is generated into records_gen.go by internal/jutegen from
// zookeeper.jute (ZooKeeper 3.8's, unchanged) and records.txt (which records,
// their doc comments, and the fields that hold a Code).

//go:generate go run ./internal/jutegen -jute zookeeper.jute -spec records.txt -out records_gen.go

// StatSize is the encoded size of a Stat.
const StatSize = 68
