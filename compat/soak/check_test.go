package soak

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
)

// checkHolds returns the pairs of lock holds that overlapped in real time.
// Holds sorted by token (their lock nodes' creation order): hold j could
// only see its node lowest once every lower node was deleted, and a
// holder whose session lives deletes its node only after it stopped
// holding; so j must have acquired after every earlier hold was released.
// Holds whose session expired are left out: the server may delete their
// node before the holder learns of it (that is what the counter's fencing
// is for).
func checkHolds(holds []hold, expired map[int64]bool) []string {
	sorted := slices.Clone(holds)
	slices.SortFunc(sorted, func(a, b hold) int { return int(a.token - b.token) })
	var out []string
	var last *hold // the live hold released last, among those before j
	for j := range sorted {
		h := &sorted[j]
		if last != nil && h.acquired < last.released {
			out = append(out, fmt.Sprintf("lock held twice: client %d (token %d) acquired at %v, before client %d (token %d, acquired at %v) released at %v",
				h.client, h.token, time.Duration(h.acquired), last.client, last.token, time.Duration(last.acquired), time.Duration(last.released)))
		}
		if !expired[h.session] && (last == nil || h.released > last.released) {
			last = h
		}
	}
	return out
}

// checkFenced returns what is wrong with the acknowledged counter bumps:
// each version written once, with the value it counts (a multi applies
// whole), and tokens never decreasing along the versions (a holder never
// writes after a later holder did).
func checkFenced(fenced []fencedWrite) []string {
	sorted := slices.Clone(fenced)
	slices.SortFunc(sorted, func(a, b fencedWrite) int { return int(a.version - b.version) })
	var out []string
	for i, f := range sorted {
		if f.value != int64(f.version) {
			out = append(out, fmt.Sprintf("counter version %d holds %d, want %d (a multi applied in part?)", f.version, f.value, f.version))
		}
		if i == 0 {
			continue
		}
		p := sorted[i-1]
		if f.version == p.version {
			out = append(out, fmt.Sprintf("counter version %d acknowledged twice (clients %d and %d)", f.version, p.client, f.client))
		}
		if f.token < p.token {
			out = append(out, fmt.Sprintf("fencing: client %d with token %d wrote counter version %d after client %d with token %d wrote version %d",
				f.client, f.token, f.version, p.client, p.token, p.version))
		}
	}
	return out
}

// regResult is porcupine's verdict on the register history.
type regResult struct {
	ops, unknown int
	result       porcupine.CheckResult
	took         time.Duration
	info         porcupine.LinearizationInfo // for a visualization
}

// checkRegisters checks the register history for linearizability.
func checkRegisters(history []porcupine.Operation, timeout time.Duration) regResult {
	start := time.Now()
	r := regResult{ops: len(history)}
	for _, op := range history {
		if op.Return == math.MaxInt64 {
			r.unknown++
		}
	}
	r.result, r.info = porcupine.CheckOperationsVerbose(registerModel, history, timeout)
	r.took = time.Since(start)
	return r
}

// visualize writes porcupine's view of an illegal history to an HTML file
// in dir and returns its path, or why it could not.
func visualize(r regResult, dir string) string {
	path := filepath.Join(dir, "registers.html")
	if err := porcupine.VisualizePath(registerModel, r.info, path); err != nil {
		return fmt.Sprintf("(no visualization: %v)", err)
	}
	return path
}

// memberView is what one member serves of the znodes the run wrote.
type memberView struct {
	children map[string][]string // epoch directory → its children, sorted
	values   map[string]string   // register and counter → data
	// counterVersion is the counter's data version.
	counterVersion int32
}

// viewOf reads, through c (a session on one member only), every epoch
// directory up to last and the data of the registers and the counter,
// after a sync.
func viewOf(c *zk.Conn, last int64) (memberView, error) {
	v := memberView{children: map[string][]string{}, values: map[string]string{}}
	if _, err := c.Sync(rootPath); err != nil {
		return v, fmt.Errorf("sync: %w", err)
	}
	for e := int64(0); e <= last; e++ {
		d := epochDir(e)
		ch, _, err := c.Children(d)
		if errors.Is(err, zk.ErrNoNode) {
			continue // created after the workloads stopped, or never
		}
		if err != nil {
			return v, fmt.Errorf("children of %s: %w", d, err)
		}
		slices.Sort(ch)
		v.children[d] = ch
		for k := range registers {
			p := regPath(e, k)
			if slices.Contains(ch, p[len(d)+1:]) {
				data, _, err := c.Get(p)
				if err != nil {
					return v, fmt.Errorf("get %s: %w", p, err)
				}
				v.values[p] = string(data)
			}
		}
	}
	data, st, err := c.Get(counterPath)
	if err != nil {
		return v, fmt.Errorf("get %s: %w", counterPath, err)
	}
	v.values[counterPath] = fmt.Sprintf("%s (version %d)", data, st.Version)
	v.counterVersion = st.Version
	return v, nil
}

// lostAcked returns the acknowledged creates missing from v.
func lostAcked(v memberView, acked []string) []string {
	var lost []string
	for _, p := range acked {
		i := strings.LastIndexByte(p, '/')
		if _, ok := slices.BinarySearch(v.children[p[:i]], p[i+1:]); !ok {
			lost = append(lost, p)
		}
	}
	return lost
}

// diffViews returns the first differences between two members' views.
func diffViews(a, b memberView) []string {
	var out []string
	for d, ch := range a.children {
		if !slices.Equal(ch, b.children[d]) {
			out = append(out, fmt.Sprintf("%s: %d children vs %d", d, len(ch), len(b.children[d])))
		}
	}
	for d := range b.children {
		if _, ok := a.children[d]; !ok {
			out = append(out, fmt.Sprintf("%s: missing vs present", d))
		}
	}
	for p, x := range a.values {
		if b.values[p] != x {
			out = append(out, fmt.Sprintf("%s: %q vs %q", p, x, b.values[p]))
		}
	}
	slices.Sort(out)
	return out
}
