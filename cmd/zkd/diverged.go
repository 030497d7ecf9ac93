package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/zkd/zkd/zab"
)

// exitDiverged is zkd's exit status when its tree diverged from the
// ensemble's (a tree digest mismatch): EX_SOFTWARE of sysexits.h, distinct
// from a disk failure (74) and corrupt data found at start (65).
const exitDiverged = 70

// divergedMarker is the file in zkd's state directory (zab.Config.Dir)
// that keeps a diverged member from starting again on the same data: a
// supervisor restarting it would otherwise have it serve the diverged tree
// until the next write's check. It holds the line logged at the stop;
// moving the state directory aside to rebuild the member removes it.
const divergedMarker = "DIVERGED"

// divergedError is checkDiverged's refusal: its text is the line logged.
type divergedError struct{ msg string }

func (e *divergedError) Error() string { return e.msg }

// divergedAdvice is what to do, the end of every DIVERGED line.
func divergedAdvice(stateDir string, standalone bool) string {
	if standalone {
		return fmt.Sprintf("A standalone member has no peers to rebuild from: restore its data directory from a backup (%s holds zkd's state) and start zkd again; keep the diverged copy to find out what changed it (a disk flipping bits, an edit, a bug).", stateDir)
	}
	return fmt.Sprintf("Rebuild this member from its peers with `zkd rebuild %s` (it moves %s aside, keeping it; myid stays) and start zkd again; keep the moved copy to find out what changed it (a disk flipping bits, an edit, a bug).", cfgPathOr(flag.Arg(0)), stateDir)
}

// divergedMessage is the one line zkd logs when it stops on d. The
// leader's digest is the reference; should the leader be the member that
// diverged, every follower stops, and rebuilding them from it would spread
// its tree, so an ensemble member's line says how to tell.
func divergedMessage(stateDir string, standalone bool, d zab.Divergence) string {
	leader, caveat := "the leader's", ""
	if !standalone {
		if d.LeaderID != "" {
			leader = "the leader's (member " + d.LeaderID + ")"
		}
		caveat = " If the other followers stopped DIVERGED too, the leader is the one that diverged: stop it and rebuild it instead, not them."
	}
	return fmt.Sprintf("DIVERGED: this member's tree differs from the leader's at zxid 0x%x: its digest is %016x there, %s %016x "+
		"(as log index %d records it, counted in digest_mismatches_count); zkd stops and will not start on this data again. %s%s",
		d.Zxid, d.Mine, leader, d.Leader, d.Index, divergedAdvice(stateDir, standalone), caveat)
}

// divergence returns zab.Config.OnDivergence for the process: the first
// mismatch writes the marker, logs one line naming the zxid, both digests
// and what to do, and exits with exitDiverged.
func divergence(log *zap.Logger, stateDir string, standalone bool) func(zab.Divergence) {
	var once sync.Once
	return func(d zab.Divergence) {
		once.Do(func() {
			msg := divergedMessage(stateDir, standalone, d)
			if err := writeMarker(filepath.Join(stateDir, divergedMarker), msg); err != nil {
				log.Warn("cannot write the diverged marker; a restart would load the diverged tree again", zap.Error(err))
			}
			log.Error(msg, zap.String("zxid", fmt.Sprintf("0x%x", d.Zxid)), zap.String("digest", fmt.Sprintf("%016x", d.Mine)),
				zap.String("leader_digest", fmt.Sprintf("%016x", d.Leader)), zap.String("leader", d.LeaderID), zap.Int("exit", exitDiverged))
			_ = log.Sync()
			os.Exit(exitDiverged)
		})
		select {} // another goroutine is exiting the process
	}
}

// writeMarker writes msg to path and syncs it.
func writeMarker(path, msg string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.WriteString(msg + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkDiverged refuses a state directory holding the diverged marker.
func checkDiverged(stateDir string, standalone bool) error {
	b, err := os.ReadFile(filepath.Join(stateDir, divergedMarker))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("zkd: read %s: %w", filepath.Join(stateDir, divergedMarker), err)
	}
	return &divergedError{fmt.Sprintf("DIVERGED: %s says this member stopped because its tree differed from the ensemble's (%s); zkd refuses to start on it. %s",
		filepath.Join(stateDir, divergedMarker), firstSentence(string(b)), divergedAdvice(stateDir, standalone))}
}

// firstSentence is the marker's line up to its first "; ", the mismatch
// itself.
func firstSentence(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "DIVERGED: ")
	if i := strings.Index(s, "; "); i >= 0 {
		return s[:i]
	}
	return s
}
