package soak

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Bounds of the waits of a fault: a deadline missed is a failure (the
// ensemble stopped serving with a majority healthy, or a member did not
// come back), never a reason to wait longer.
const (
	availableWithin = 30 * time.Second // a write or read succeeds after a fault began or ended
	exitWithin      = 30 * time.Second // a member stops after its fsync fails
	fullWithin      = 60 * time.Second // a member stops after its disk filled (needs a snapshot)
)

// action is one fault of a nemesis: it injects the fault, waits for the
// ensemble to serve under it, holds it, heals it and waits for the member
// to serve again. It returns an error when zkd did not do what it must.
type action struct {
	name string
	run  func(n *nemesis) error
}

// nemesis injects faults into an ensemble while a workload runs, one at a
// time, and counts them.
type nemesis struct {
	t      *testing.T
	e      *ensemble
	w      *workload
	rng    *rand.Rand
	hold   [2]time.Duration // how long a fault lasts: drawn between the two
	stall  time.Duration    // the longest fsync delay of fsync-slow-*
	counts map[string]int
	notes  []string // what zkd did that is allowed but worth saying
}

// nemeses are the schedules by name; mixed draws from all the others.
var nemeses = map[string][]action{
	"kill": {
		{"kill-leader", func(n *nemesis) error { return n.kill(n.leader()) }},
		{"kill-follower", func(n *nemesis) error { return n.kill(n.follower()) }},
	},
	"pause": {
		{"pause-leader", func(n *nemesis) error { return n.pause(n.leader()) }},
		{"pause-follower", func(n *nemesis) error { return n.pause(n.follower()) }},
	},
	"partition": {
		{"isolate-leader", func(n *nemesis) error { return n.partition(n.leader(), false) }},
		{"isolate-follower", func(n *nemesis) error { return n.partition(n.follower(), false) }},
		{"drop-leader", func(n *nemesis) error { return n.partition(n.leader(), true) }},
		{"drop-follower", func(n *nemesis) error { return n.partition(n.follower(), true) }},
	},
	"disk": {
		{"fsync-slow-leader", func(n *nemesis) error { return n.fsyncSlow(n.leader()) }},
		{"fsync-eio", func(n *nemesis) error { return n.fsyncEIO(n.any()) }},
		{"power-cut-one", func(n *nemesis) error { return n.powerCut(n.any()) }},
		{"disk-full", func(n *nemesis) error { return n.diskFull(n.any()) }},
		{"fsync-slow-follower", func(n *nemesis) error { return n.fsyncSlow(n.follower()) }},
		{"power-cut-all", func(n *nemesis) error { return n.powerCutAll() }},
	},
}

// nemesisNames are the nemeses in the order the soak runs them.
var nemesisNames = []string{"kill", "pause", "partition", "disk", "mixed"}

// actions returns the faults of the named nemesis, and whether they are
// drawn at random (mixed) rather than taken in turn.
func actions(name string) ([]action, bool, error) {
	if name == "mixed" {
		var all []action
		for _, k := range nemesisNames[:4] {
			all = append(all, nemeses[k]...)
		}
		return all, true, nil
	}
	if a, ok := nemeses[name]; ok {
		return a, false, nil
	}
	// One fault alone, to reproduce what a run found.
	var names []string
	for _, k := range nemesisNames[:4] {
		for _, a := range nemeses[k] {
			if a.name == name {
				return []action{a}, false, nil
			}
			names = append(names, a.name)
		}
	}
	return nil, false, fmt.Errorf("soak: no nemesis %q (have %s, or one fault of %s)", name, strings.Join(nemesisNames, ", "), strings.Join(names, ", "))
}

// leader is the index of the member that leads; -1 if none does within
// availableWithin (the fault then fails with that).
func (n *nemesis) leader() int { return n.e.leader(availableWithin) }

// follower is a member that does not lead, or -1 with no leader.
func (n *nemesis) follower() int {
	l := n.leader()
	if l < 0 {
		return -1
	}
	return (l + 1 + n.rng.IntN(members-1)) % members
}

// any is a member drawn at random.
func (n *nemesis) any() int { return n.rng.IntN(members) }

// logf logs a line about the fault in progress, with the run's clock.
func (n *nemesis) logf(format string, args ...any) {
	n.t.Logf("%8.1fs %s", time.Since(n.w.start).Seconds(), fmt.Sprintf(format, args...))
}

// errNoLeader is a fault's failure when no member led to aim it at.
var errNoLeader = fmt.Errorf("no member leads within %v", availableWithin)

// progressed waits until the workload has done at least k more successful
// operations than at the call, or fails after timeout.
func (n *nemesis) progressed(k int64, timeout time.Duration, during string) error {
	start := n.w.progress.Load()
	deadline := time.Now().Add(timeout)
	for n.w.progress.Load() < start+k {
		if time.Now().After(deadline) {
			return fmt.Errorf("no operation succeeded for %v %s", timeout, during)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// holdFault keeps a fault for a drawn time, and at least until the
// workload has done some operations under it: the majority must serve.
func (n *nemesis) holdFault(during string) error {
	d := n.hold[0] + time.Duration(n.rng.Int64N(int64(n.hold[1]-n.hold[0])+1))
	until := time.Now().Add(d)
	if err := n.progressed(20, availableWithin, during); err != nil {
		return err
	}
	time.Sleep(time.Until(until))
	return nil
}

// healthy waits until every member serves and the workload moves.
func (n *nemesis) healthy(after string) error {
	for i, s := range n.e.servers {
		if !s.Running() {
			return fmt.Errorf("member %d exited (%v) %s; log tail:\n%s", i+1, s.Cmd.ProcessState, after, tail(n.e.lastStartLog(i), 3000))
		}
		if err := n.e.waitServing(i, availableWithin); err != nil {
			return fmt.Errorf("%s: %w", after, err)
		}
	}
	return n.progressed(20, availableWithin, after)
}

// repair undoes every fault after a failed one: disks cleared, proxies
// healed, paused members continued, stopped members started again; then
// it waits until every member serves and the workload moves.
func (n *nemesis) repair() error {
	for i, s := range n.e.servers {
		n.e.clearDisk(i)
		n.e.heal(i, true)
		if s.Running() {
			s.Resume()
		} else if err := s.Start(); err != nil {
			return fmt.Errorf("repair: start member %d: %w", i+1, err)
		}
	}
	for i := range n.e.servers {
		if err := n.e.waitServing(i, 2*availableWithin); err != nil {
			return fmt.Errorf("repair: %w; log tail:\n%s", err, tail(n.e.lastStartLog(i), 3000))
		}
	}
	return n.healthy("after the repair")
}

// restart starts member i again, as a supervisor would, and waits until
// it serves.
func (n *nemesis) restart(i int) error {
	s := n.e.servers[i]
	s.Stop()
	if err := s.Start(); err != nil {
		return fmt.Errorf("restart member %d: %w", i+1, err)
	}
	if err := n.e.waitServing(i, 2*availableWithin); err != nil {
		return fmt.Errorf("restart: %w; log tail:\n%s", err, tail(n.e.lastStartLog(i), 3000))
	}
	return nil
}

func (n *nemesis) kill(i int) error {
	if i < 0 {
		return errNoLeader
	}
	n.e.servers[i].Kill()
	if err := n.holdFault(fmt.Sprintf("after member %d was killed", i+1)); err != nil {
		return err
	}
	return n.restart(i)
}

func (n *nemesis) pause(i int) error {
	if i < 0 {
		return errNoLeader
	}
	n.e.servers[i].Pause()
	paused := time.Now()
	err := n.holdFault(fmt.Sprintf("while member %d was paused", i+1))
	n.e.servers[i].Resume()
	n.logf("member %d continued after %v paused", i+1, time.Since(paused).Round(time.Millisecond))
	if err != nil {
		return err
	}
	return n.e.waitServing(i, availableWithin)
}

func (n *nemesis) partition(i int, drop bool) error {
	if i < 0 {
		return errNoLeader
	}
	n.e.isolate(i, drop)
	err := n.holdFault(fmt.Sprintf("while member %d was cut off", i+1))
	n.e.heal(i, drop)
	if err != nil {
		return err
	}
	return n.e.waitServing(i, availableWithin)
}

// fsyncSlow delays every fsync of member i's disk by a quarter of n.stall
// to n.stall: the member must keep running and the ensemble serving.
func (n *nemesis) fsyncSlow(i int) error {
	if i < 0 {
		return errNoLeader
	}
	f := n.e.fs[i]
	before := f.Injected()
	delay := n.stall/4 + time.Duration(n.rng.Int64N(int64(n.stall*3/4)+1))
	n.logf("member %d: every fsync %v slower", i+1, delay.Round(time.Millisecond))
	f.SetFsyncDelay(delay)
	err := n.holdFault(fmt.Sprintf("while member %d's fsyncs were slow", i+1))
	for deadline := time.Now().Add(availableWithin); err == nil && f.Injected() == before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			err = fmt.Errorf("member %d made no fsync in %v", i+1, availableWithin)
		}
	}
	n.e.clearDisk(i)
	if err != nil {
		return err
	}
	if !n.e.servers[i].Running() {
		return fmt.Errorf("member %d exited (%v) on a slow disk", i+1, n.e.servers[i].Cmd.ProcessState)
	}
	return nil
}

// stopped checks that member i exited with status 74 within timeout,
// logging a line with prefix since its last start.
func (n *nemesis) stopped(i int, timeout time.Duration, prefix string) error {
	code := n.e.waitExit(i, timeout)
	if code < 0 {
		return fmt.Errorf("member %d still runs %v after its disk failed", i+1, timeout)
	}
	log := n.e.lastStartLog(i)
	if code != 74 || !strings.Contains(log, prefix) {
		return fmt.Errorf("member %d exited with status %d, want 74 after logging %q; log tail:\n%s", i+1, code, prefix, tail(log, 3000))
	}
	return nil
}

// fsyncEIO fails every fsync of member i's disk: the member must stop with
// status 74; the harness clears the fault and starts it again.
func (n *nemesis) fsyncEIO(i int) error {
	n.e.fs[i].SetFsyncError(syscall.EIO)
	err := n.stopped(i, exitWithin, "DISK FAILURE: fsync of ")
	n.e.clearDisk(i)
	if err != nil {
		return err
	}
	if err := n.progressed(20, availableWithin, fmt.Sprintf("after member %d stopped on a failed fsync", i+1)); err != nil {
		return err
	}
	return n.restart(i)
}

// diskFull leaves no space on member i's disk. The member serves while its
// raft log has preallocated room and stops with status 74 when a snapshot
// or a Pebble commit needs space (snapCount is low in the soak); the
// harness then frees the space and starts it again. A member that needed
// no space within fullWithin is noted, not failed.
func (n *nemesis) diskFull(i int) error {
	n.e.fs[i].SetSpaceLeft(0)
	if n.e.waitExit(i, fullWithin) < 0 {
		n.e.clearDisk(i)
		n.notes = append(n.notes, fmt.Sprintf("member %d needed no new space in %v of a full disk and kept serving", i+1, fullWithin))
		return nil
	}
	err := n.stopped(i, 0, "DISK FULL: no space left")
	n.e.clearDisk(i)
	if err != nil {
		return err
	}
	return n.restart(i)
}

// powerCut kills member i and drops every write its disk had not synced.
func (n *nemesis) powerCut(i int) error {
	n.e.servers[i].Kill()
	err := n.e.fs[i].PowerCut()
	n.e.clearDisk(i)
	if err != nil {
		return err
	}
	if err := n.holdFault(fmt.Sprintf("after member %d lost power", i+1)); err != nil {
		return err
	}
	return n.restart(i)
}

// powerCutAll cuts the power of the whole ensemble at once and starts it
// again: nothing acknowledged may be lost, though nothing is served while
// it is down.
func (n *nemesis) powerCutAll() error {
	for _, s := range n.e.servers {
		s.Kill()
	}
	var errs []error
	for i, f := range n.e.fs {
		errs = append(errs, f.PowerCut())
		n.e.clearDisk(i)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, s := range n.e.servers {
		if err := s.Start(); err != nil {
			return fmt.Errorf("restart member %d: %w", i+1, err)
		}
	}
	for i := range n.e.servers {
		if err := n.e.waitServing(i, 2*availableWithin); err != nil {
			return fmt.Errorf("restart after the power cut: %w; log tail:\n%s", err, tail(n.e.lastStartLog(i), 3000))
		}
	}
	return nil
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
