// Package zkclish drives Debian's zkCli.sh (ZooKeeper 3.8's command-line
// shell, org.apache.zookeeper.ZooKeeperMain) against real zkd processes and,
// side by side, against a real ZooKeeper 3.8, and compares what a user sees.
//
// Every scenario is a zkCli script (commands piped on stdin, as in
// `zkCli.sh -server host:port < script`) or a single command given on the
// command line. The same script runs against both servers; the combined
// stdout and stderr of each run is normalized and the two are compared line
// by line, together with the exit codes. The tests also assert the key facts
// directly on zkd's output (sequential names, Stat fields, the session that
// owns an ephemeral, ACLs, watch events), so a fact both servers got wrong
// the same way would still fail.
//
// Normalization (see normalize) masks only what legitimately differs
// between two servers or two runs:
//
//   - zxids (cZxid, mZxid, pZxid): each distinct value becomes <zxid#N>,
//     numbered by first appearance, so equal zxids stay equal and distinct
//     ones stay distinct;
//   - ctime and mtime: <time>, except the epoch (the zero time of
//     /zookeeper), which is kept;
//   - ephemeralOwner: the session of the script's own zkCli (read from the
//     server's `cons` 4-letter word) becomes <self#N>; any other non-zero
//     owner <session#N>; 0x0 is kept;
//   - the order of getEphemerals' paths and of whoami's ids, which
//     ZooKeeper takes from hash sets: both are sorted;
//   - the server address in "Connecting to host:port" and the ports of
//     config's server.N lines (every run picks free ports).
//
// Filtered, because they depend on thread scheduling or on the JVM's
// installation rather than on the server: SLF4J, log4j and JVM warning
// lines (including unified-logging lines such as "[0.001s][warning]…");
// the "WATCHER::" and "WatchedEvent …" lines of the watcher thread, which
// interleave with command output at arbitrary points (the WatchedEvent
// lines are extracted and compared separately, in their own order, which
// the single event thread keeps; connection-state events, type:None, are
// dropped because the final Closed event races System.exit); and blank
// lines, which the watcher thread prints with every event.
//
// Scripts may carry harness directives (lines starting with '#', never
// sent to zkCli; see runCli): #wait TEXT holds the script until zkCli has
// printed TEXT (so a watch event is in before the script goes on),
// #session reads the zkCli's session id from cons, and #signal/#await
// order two zkCli processes running at once.
//
// Left out on purpose, because zkCli 3.8 itself prints them at random
// against either server: the "Failed to delete some node(s)" message of a
// deleteall the server refuses (the client releases its wait before it
// records the failure), the order of the events of a removewatches -a that
// removes several kinds of watch at once, and a watch event printed around
// printwatches on.
//
// The tests are named TestIntegration_* so that `go test -skip Integration`
// leaves only the unit tests of the normalizer. Without Debian's zookeeper
// package they skip, or fail under CI=true, naming `apt-get install -y
// zookeeper`.
package zkclish
