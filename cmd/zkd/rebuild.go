package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/zab"
)

// rebuildMain runs `zkd rebuild zoo.cfg`: for a stopped member of an
// ensemble whose data is corrupt or lost, it moves the member's zkd data
// aside (kept, never deleted) and leaves the rebuild marker, so that the
// next start copies the state from the leader without voting until it has
// caught up (docs/disk-faults.md, "Rebuilding a member from its peers").
// It returns the exit code.
func rebuildMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("zkd rebuild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: zkd rebuild zoo.cfg\n\n"+
			"For a stopped member of an ensemble whose data is corrupt or lost: moves its zkd data\n"+
			"aside (kept) so that its next start copies the state from the ensemble's leader;\n"+
			"the member does not vote until it has caught up.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	c, err := parseZooCfg(fs.Arg(0), os.Environ())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	qc, nc, _, err := configs(c, zap.NewNop())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if qc.Standalone() {
		fmt.Fprintf(stderr, "zkd rebuild: %s describes a standalone server: there are no peers to rebuild it from; restore its data directory from a backup\n", fs.Arg(0))
		return 2
	}
	self, _ := qc.Self()
	if ln, err := net.Listen("tcp", self.QuorumAddr()); err != nil {
		fmt.Fprintf(stderr, "zkd rebuild: the quorum address %s of member %d is in use (%v): stop this member's zkd first\n", self.QuorumAddr(), qc.MyID, err)
		return 1
	} else {
		ln.Close()
	}
	moved, err := zab.PrepareRebuild(nc.Dir, time.Now())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if moved != "" {
		fmt.Fprintf(stdout, "zkd rebuild: moved member %d's data %s to %s (kept; delete it once the member is healthy)\n", qc.MyID, nc.Dir, moved)
	}
	fmt.Fprintf(stdout, "zkd rebuild: start zkd now (zkd %s): member %d copies the state from the ensemble's leader and does not vote until it has caught up; "+
		"its log says \"caught up with the leader\" when it votes again\n", fs.Arg(0), qc.MyID)
	return 0
}
