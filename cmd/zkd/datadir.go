package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/zkd/zkd/quorum"
)

// checkMyID refuses an ensemble zoo.cfg (more than one server.N line)
// whose dataDir has no myid file, naming the file, as ZooKeeper 3.8 does
// ("myid file is missing"), rather than go on as member 0 and fail on a
// missing server.0 line.
func checkMyID(c *zooCfg, qc *quorum.Config) error {
	if qc.Standalone() || c.MyID != 0 {
		return nil
	}
	path := filepath.Join(c.DataDir, "myid")
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if _, err := os.Stat(path); err == nil {
		return nil // it says 0: Validate names the missing server.0 line
	}
	return fmt.Errorf("zkd: myid file is missing: %s must hold this member's id, the N of its server.N line (zoo.cfg has %d server lines), as ZooKeeper's dataDir/myid does", path, len(qc.Peers))
}

// refuseZooKeeperData returns an error when dataDir or dataLogDir holds
// ZooKeeper's own database (version-2/ with snapshot.* or log.* files)
// while zkd has none of its own yet in zkdDir: zkd does not read
// ZooKeeper's files in place, and would otherwise serve an empty tree
// beside them without a word. The error names `zkd import`.
func refuseZooKeeperData(dataDir, dataLogDir, zkdDir string) error {
	if entries, err := os.ReadDir(zkdDir); err == nil && len(entries) > 0 {
		return nil
	}
	count := func(dir string) (snaps, logs int) {
		v2 := filepath.Join(dir, "version-2")
		s, _ := filepath.Glob(filepath.Join(v2, "snapshot.*"))
		l, _ := filepath.Glob(filepath.Join(v2, "log.*"))
		return len(s), len(l)
	}
	snaps, logs := count(dataDir)
	fromLog := ""
	if dataLogDir != "" && dataLogDir != dataDir {
		_, l := count(dataLogDir)
		if l > 0 {
			logs += l
			fromLog = " -from-log " + dataLogDir
		}
	}
	if snaps+logs == 0 {
		return nil
	}
	return fmt.Errorf("zkd: %s holds a ZooKeeper database (%d snapshot and %d transaction log files) and zkd has no data of its own in %s: zkd does not read ZooKeeper's files in place and would start with an empty tree. Import it first: zkd import -from %s%s <zoo.cfg>",
		filepath.Join(dataDir, "version-2"), snaps, logs, zkdDir, dataDir, fromLog)
}
