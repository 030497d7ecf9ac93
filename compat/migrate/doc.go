// Package migrate tests `zkd import` and `zkd export` against the real
// ZooKeeper 3.8: a tree written with go-zk into ZooKeeper, ZooKeeper
// stopped, its dataDir imported and zkd started on the same port, and the
// other way round; clients keep their sessions, ephemeral lock nodes and
// sequence numbers across the move. The package has only tests.
package migrate
