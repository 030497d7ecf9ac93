package diff

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Difference is the first place where two traces of one script disagree.
type Difference struct {
	// Step is the index of the differing step, or -1 when the steps agree
	// and the watch events of Session differ.
	Step int
	// Session labels the session whose events differ (Step == -1).
	Session string
	// Op is the differing step (zero when Step == -1).
	Op Op
	// A and B are the two servers' renderings of the step or of the
	// session's event list.
	A, B string
}

// Signature identifies the kind of a difference, so that shrinking keeps
// looking at the same problem: the differing step's kind (the opcode for
// creates) and the error code each server answered, or "events".
func (d *Difference) Signature() string {
	if d.Step < 0 {
		return "events"
	}
	kind := string(d.Op.Kind)
	if d.Op.Kind != KMulti && d.Op.Kind != KMultiRead {
		kind += ":" + word(d.Op.body(), 0)
	}
	return kind + " " + word(d.A, 1) + " " + word(d.B, 1)
}

// word returns the i-th space-separated word of s, or "".
func word(s string, i int) string {
	f := strings.Fields(s)
	if i < len(f) {
		return f[i]
	}
	return ""
}

// Compare returns the first difference between the traces a and b of
// script s, or nil when they agree.
func Compare(s Script, a, b *Trace) *Difference {
	for i := range max(len(a.Steps), len(b.Steps)) {
		as, bs := at(a.Steps, i), at(b.Steps, i)
		if as != bs {
			d := &Difference{Step: i, A: as, B: bs}
			if i < len(s.Ops) {
				d.Op = s.Ops[i]
			}
			return d
		}
	}
	labels := slices.Clone(a.Sessions)
	for _, l := range b.Sessions {
		if !slices.Contains(labels, l) {
			labels = append(labels, l)
		}
	}
	for _, l := range labels {
		ae, be := strings.Join(a.Events[l], "\n"), strings.Join(b.Events[l], "\n")
		if ae != be {
			return &Difference{Step: -1, Session: l, A: ae, B: be}
		}
	}
	return nil
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(missing)"
}

// Format renders the difference with the two servers' names.
func (d *Difference) Format(nameA, nameB string) string {
	var b strings.Builder
	if d.Step >= 0 {
		fmt.Fprintf(&b, "step %d: %s\n", d.Step, d.Op)
	} else {
		fmt.Fprintf(&b, "watch events of session %s:\n", d.Session)
	}
	fmt.Fprintf(&b, "  %-9s %s\n", nameA+":", indent(d.A))
	fmt.Fprintf(&b, "  %-9s %s\n", nameB+":", indent(d.B))
	return b.String()
}

func indent(s string) string {
	if s == "" {
		return "(none)"
	}
	return strings.ReplaceAll(s, "\n", "\n            ")
}

// Shrink returns a shortest-found sub-script of s (steps deleted, order
// kept) for which fails still reports true, by delta debugging: it tries
// removing chunks of halving size, then single steps, until no removal
// keeps the failure or the budget is spent. fails is not called on s
// itself, which is assumed to fail.
func Shrink(s Script, fails func(Script) bool, budget time.Duration) Script {
	deadline := time.Now().Add(budget)
	cur := s
	n := 2
	for len(cur.Ops) >= 2 && time.Now().Before(deadline) {
		chunk := (len(cur.Ops) + n - 1) / n
		reduced := false
		for start := 0; start < len(cur.Ops) && time.Now().Before(deadline); start += chunk {
			cand := cur
			cand.Ops = slices.Concat(cur.Ops[:start], cur.Ops[min(start+chunk, len(cur.Ops)):])
			if len(cand.Ops) > 0 && fails(cand) {
				cur = cand
				reduced = true
				break
			}
		}
		switch {
		case reduced:
			n = max(n-1, 2)
		case chunk == 1:
			return cur
		default:
			n = min(2*n, len(cur.Ops))
		}
	}
	return cur
}
