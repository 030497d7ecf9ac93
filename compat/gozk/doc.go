// Package gozk holds integration tests that drive real zkd processes with
// go-zookeeper/zk (and, for the opcodes go-zk lacks, with compat/zkwire):
// every opcode and watch kind, the lock recipe under contention, and
// durability across kill -9. Most scenarios run against Debian's ZooKeeper
// 3.8 too, with the same assertions, so a behaviour zkd gets wrong shows
// up as a difference between the two runs.
package gozk
