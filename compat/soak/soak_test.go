package soak

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

var (
	soakDuration = flag.Duration("soak.duration", 24*time.Second, "how long each nemesis injects faults, each of its faults at least once (make soak: SOAK_MINUTES)")
	soakNemeses  = flag.String("soak.nemeses", strings.Join(nemesisNames, ","), "the nemeses to run, in order: kill, pause, partition, disk, mixed (make soak: NEMESES)")
	soakSeed     = flag.Uint64("soak.seed", 0, "seed of the fault schedule; 0 draws one (the report prints it)")
	soakTick     = flag.Int("soak.tick", 500, "the members' tickTime in ms")
	soakPace     = flag.Duration("soak.pace", 10*time.Millisecond, "pause between two operations of one client")
	soakStall    = flag.Duration("soak.stall", 500*time.Millisecond, "the longest fsync delay of the fsync-slow faults, each drawn from a quarter of it to all of it (make soak: SOAK_STALL, 1s)")
	soakSnap     = flag.Int("soak.snapcount", 2000, "the members' snapCount: low, so that a full disk stops a member soon (it needs space for a snapshot)")
	soakReport   = flag.String("soak.report", "", "also append the report's lines to this file")
	soakOnFail   = flag.String("soak.onfail", "", "a shell command run, and waited for, when a fault fails, before the repair undoes it: to look at the members while they are stuck (make soak: SOAK_ONFAIL)")
)

// Workload and check settings.
const (
	registerClients = 3
	lockClients     = 3
	sessionTimeout  = 10 * time.Second
	epochEvery      = 2 * time.Second
)

// result is one nemesis's line of the report.
type result struct {
	nemesis    string
	took       time.Duration
	faults     map[string]int
	regOps     int
	unknown    int
	linear     string
	holds      int
	fenced     int
	acked      int
	violations []string
	lost       int
	expired    int64
	notes      []string
	// failures are the faults zkd did not survive as it must; the run
	// repairs the ensemble after each and goes on.
	failures []string
	// stopped says why the run ended early: the ensemble could not be
	// repaired after a failure.
	stopped error
}

// checked is the number of operations the checks covered.
func (r result) checked() int { return r.regOps + r.holds + r.fenced + r.acked }

func (r result) line() string {
	var faults []string
	total := 0
	for _, k := range slices.Sorted(maps.Keys(r.faults)) {
		faults = append(faults, fmt.Sprintf("%s×%d", k, r.faults[k]))
		total += r.faults[k]
	}
	line := fmt.Sprintf("soak %-9s %5.1f min  %3d faults  %7d ops checked (%d register ops, %d of unknown outcome, %s; %d lock holds; %d fenced writes; %d acknowledged creates)  violations %d  acknowledged writes lost %d  sessions expired %d  [%s]",
		r.nemesis, r.took.Minutes(), total, r.checked(), r.regOps, r.unknown, r.linear, r.holds, r.fenced, r.acked,
		len(r.violations), r.lost, r.expired, strings.Join(faults, " "))
	if len(r.failures) > 0 {
		first, _, _ := strings.Cut(r.failures[0], "; log tail:")
		line += fmt.Sprintf("  FAILED %d faults, first: %s", len(r.failures), strings.SplitN(first, "\n", 2)[0])
	}
	if r.stopped != nil {
		line += "  STOPPED: " + strings.SplitN(r.stopped.Error(), "\n", 2)[0]
	}
	return line
}

// TestIntegration_Soak runs each nemesis of -soak.nemeses for
// -soak.duration on a fresh 3-member ensemble under the register and lock
// workloads, then checks the histories (see the package comment) and
// reports one line per nemesis. Any violation, lost acknowledged write, or
// fault zkd did not survive as docs/disk-faults.md says fails the test.
func TestIntegration_Soak(t *testing.T) {
	seed := *soakSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	bin := zkproc.BuildZkd(t)
	var lines []string
	for _, name := range strings.Split(*soakNemeses, ",") {
		name = strings.TrimSpace(name)
		acts, random, err := actions(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			r := soak(t, bin, name, acts, random, seed)
			lines = append(lines, r.line())
			t.Log(r.line())
			for _, note := range r.notes {
				t.Logf("note: %s", note)
			}
			for _, v := range r.violations[:min(len(r.violations), 20)] {
				t.Errorf("violation: %s", v)
			}
			if len(r.violations) > 20 {
				t.Errorf("and %d violations more", len(r.violations)-20)
			}
			if r.lost > 0 {
				t.Errorf("%d acknowledged writes lost", r.lost)
			}
		})
	}
	t.Logf("soak report (seed %d, %v per nemesis):\n%s", seed, *soakDuration, strings.Join(lines, "\n"))
	if *soakReport != "" {
		f, err := os.OpenFile(*soakReport, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fmt.Fprintf(f, "# %s, seed %d, %v per nemesis\n%s\n", time.Now().UTC().Format(time.RFC3339), seed, *soakDuration, strings.Join(lines, "\n"))
	}
}

// reportDir is where a failed check leaves its files: beside -soak.report,
// or in a directory that outlives the test.
func reportDir(t *testing.T) string {
	if *soakReport != "" {
		return filepath.Dir(*soakReport)
	}
	dir, err := os.MkdirTemp("", "zkd-soak-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// soak runs one nemesis and checks what the workloads saw.
func soak(t *testing.T, bin, name string, acts []action, random bool, seed uint64) result {
	e := startEnsemble(t, bin, *soakTick, *soakSnap)
	w := newWorkload(t, zkproc.Addrs(e.servers), sessionTimeout, *soakPace)
	defer w.close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	coord := w.dial(t, 0)
	wg.Go(func() { w.epochs(ctx, coord, epochEvery) })
	for i := range registerClients {
		c := w.dial(t, i)
		wg.Go(func() { w.registerClient(ctx, c, i) })
	}
	for i := range lockClients {
		c := w.dial(t, i)
		wg.Go(func() { w.lockClient(ctx, c, registerClients+i) })
	}

	h := fnv.New64a()
	h.Write([]byte(name))
	n := &nemesis{t: t, e: e, w: w, rng: rand.New(rand.NewPCG(seed, h.Sum64())),
		hold: [2]time.Duration{time.Second, 4 * time.Second}, stall: *soakStall, counts: map[string]int{}}
	r := result{nemesis: name, faults: n.counts}
	start := time.Now()
	if r.stopped = n.healthy("before the first fault"); r.stopped == nil {
		// Every fault of the nemesis runs at least once, however short
		// the duration.
		for k := 0; time.Since(start) < *soakDuration || !random && k < len(acts); k++ {
			a := acts[k%len(acts)]
			if random {
				a = acts[n.rng.IntN(len(acts))]
			}
			n.counts[a.name]++
			n.logf("%s", a.name)
			began := time.Now()
			err := a.run(n)
			if err == nil {
				err = n.healthy("after " + a.name)
			}
			if err == nil {
				n.logf("%s over, all members serving, %v after it began", a.name, time.Since(began).Round(time.Millisecond))
				continue
			}
			// A failure is reported; the run repairs the ensemble and goes
			// on, so that a long run says how often it happens.
			r.failures = append(r.failures, fmt.Sprintf("%.1fs %s: %v", time.Since(w.start).Seconds(), a.name, err))
			n.logf("%s FAILED: %v", a.name, err)
			// What each member logged since the fault began, before the
			// repair buries it: the run keeps only the logs' ends.
			for i := range e.servers {
				lines := e.logSince(i, began.Add(-time.Second), 60)
				n.logf("member %d (running %v) logged %d lines since the fault began:\n%s", i+1, e.servers[i].Running(), len(lines), strings.Join(lines, "\n"))
			}
			// And where each client is: a client waiting on a member that
			// cannot answer explains a stall the members do not.
			for i, c := range w.conns {
				n.logf("client %d: session 0x%x, %v, server %s", i, c.SessionID(), c.State(), c.Server())
			}
			if *soakOnFail != "" {
				out, err := exec.Command("sh", "-c", *soakOnFail).CombinedOutput()
				n.logf("-soak.onfail (%v):\n%s", err, out)
			}
			if r.stopped = n.repair(); r.stopped != nil {
				break
			}
		}
	}
	r.took = time.Since(start)
	cancel()
	wg.Wait()
	for _, f := range r.failures[:min(len(r.failures), 20)] {
		t.Errorf("soak %s: %s", name, f)
	}
	if len(r.failures) > 20 {
		t.Errorf("soak %s: and %d failures more", name, len(r.failures)-20)
	}
	if r.stopped != nil {
		t.Errorf("soak %s: stopped: %v", name, r.stopped)
	}
	r.notes = n.notes
	if w.expiries.Load() > 0 {
		// Which member expired which session, and when, for the reader
		// to set against the faults' lines above.
		for i, s := range e.servers {
			var lines []string
			for l := range strings.Lines(s.Log()) {
				if strings.Contains(l, "session expired") {
					lines = append(lines, strings.TrimSpace(l))
				}
			}
			if len(lines) > 0 {
				t.Logf("member %d expired %d sessions; the first:\n%s", i+1, len(lines), strings.Join(lines[:min(len(lines), 5)], "\n"))
			}
		}
	}
	// The clients' sessions end first: nothing they sent may still be on
	// its way when the members are compared.
	w.close()
	check(t, e, w, &r)
	return r
}

// check runs every check of the package comment over what w recorded, on
// the healed ensemble e, into r.
func check(t *testing.T, e *ensemble, w *workload, r *result) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.expired = w.expiries.Load()
	r.holds, r.fenced, r.acked = len(w.mu.holds), len(w.mu.fenced), len(w.mu.acked)
	r.violations = append(r.violations, checkHolds(w.mu.holds, w.mu.expired)...)
	r.violations = append(r.violations, checkFenced(w.mu.fenced)...)
	for _, p := range w.mu.problems {
		if !w.mu.expired[p.session] {
			r.violations = append(r.violations, p.text)
		}
	}
	reg := checkRegisters(w.mu.reg, 10*time.Minute)
	r.regOps, r.unknown, r.linear = reg.ops, reg.unknown, fmt.Sprintf("porcupine %s in %v", reg.result, reg.took.Round(time.Millisecond))
	switch reg.result {
	case porcupine.Illegal:
		r.violations = append(r.violations, "the register history is not linearizable; porcupine's view of it: "+visualize(reg, reportDir(t)))
	case porcupine.Unknown:
		t.Errorf("porcupine did not finish checking %d register operations within 10 minutes", reg.ops)
	}

	// Every member, healed, has every acknowledged create, and the members
	// agree on all the run wrote.
	var maxVersion int32
	for _, f := range w.mu.fenced {
		maxVersion = max(maxVersion, f.version)
	}
	views, diffs := agreedViews(t, e, w.epoch.Load()+1)
	r.violations = append(r.violations, diffs...)
	for i, v := range views {
		lost := lostAcked(v, w.mu.acked)
		r.lost = max(r.lost, len(lost))
		for _, p := range lost[:min(len(lost), 5)] {
			t.Errorf("member %d lost acknowledged create %s", i+1, p)
		}
		if v.counterVersion < maxVersion {
			r.lost = max(r.lost, int(maxVersion-v.counterVersion))
			t.Errorf("member %d serves counter version %d, but version %d was acknowledged", i+1, v.counterVersion, maxVersion)
		}
	}
}

// agreedViews reads every member's view of the epochs up to last, and
// again while they differ, for up to availableWithin: a write whose reply
// was lost may still apply shortly after the clients stopped. It returns
// the views and the differences that remained.
func agreedViews(t *testing.T, e *ensemble, last int64) ([]memberView, []string) {
	deadline := time.Now().Add(availableWithin)
	for {
		var views []memberView
		for i := range e.servers {
			if err := e.waitServing(i, availableWithin); err != nil {
				t.Fatalf("soak: at the end: %v", err)
			}
			c, _, err := zk.Connect([]string{e.servers[i].Addr}, sessionTimeout, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
			if err != nil {
				t.Fatal(err)
			}
			v, err := viewOf(c, last)
			c.Close()
			if err != nil {
				t.Fatalf("soak: at the end, member %d: %v", i+1, err)
			}
			views = append(views, v)
		}
		var diffs []string
		for i := 1; i < len(views); i++ {
			diff := diffViews(views[0], views[i])
			for _, d := range diff[:min(5, len(diff))] {
				diffs = append(diffs, fmt.Sprintf("members 1 and %d differ: %s", i+1, d))
			}
		}
		if len(diffs) == 0 || time.Now().After(deadline) {
			return views, diffs
		}
		time.Sleep(100 * time.Millisecond)
	}
}
