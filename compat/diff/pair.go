package diff

import (
	"slices"
	"sync"
	"time"
)

// Pair is the two servers a differential run compares: A is the server
// under test (zkd), B the reference (ZooKeeper 3.8).
type Pair struct {
	A, B *Target
}

// Check runs s on both servers at once and returns the first difference,
// or nil when they agree. An error means a run could not be carried out.
func (p *Pair) Check(s Script) (*Difference, error) {
	var ta, tb *Trace
	var ea, eb error
	var wg sync.WaitGroup
	wg.Go(func() { ta, ea = p.A.Run(s) })
	wg.Go(func() { tb, eb = p.B.Run(s) })
	wg.Wait()
	if ea != nil {
		return nil, ea
	}
	if eb != nil {
		return nil, eb
	}
	return Compare(s, ta, tb), nil
}

// Minimize shrinks s, which shows difference d, to a shorter script that
// still shows a difference of the same Signature, re-running both servers
// on each candidate within budget. It returns the script and its
// difference.
func (p *Pair) Minimize(s Script, d *Difference, budget time.Duration) (Script, *Difference) {
	sig := d.Signature()
	last := d
	min := Shrink(s, func(c Script) bool {
		cd, err := p.Check(c)
		if err != nil || cd == nil || cd.Signature() != sig {
			return false
		}
		last = cd
		return true
	}, budget)
	// Then drop sub-operations of multis one at a time.
	deadline := time.Now().Add(budget)
	for i := 0; i < len(min.Ops) && time.Now().Before(deadline); i++ {
		for j := 0; j < len(min.Ops[i].Sub) && len(min.Ops[i].Sub) > 1 && time.Now().Before(deadline); {
			cand := min
			cand.Ops = slices.Clone(min.Ops)
			cand.Ops[i].Sub = slices.Delete(slices.Clone(min.Ops[i].Sub), j, j+1)
			cd, err := p.Check(cand)
			if err == nil && cd != nil && cd.Signature() == sig {
				min, last = cand, cd
				continue
			}
			j++
		}
	}
	if last == d {
		return s, d
	}
	// last is the difference of the last accepted candidate, which is min.
	return min, last
}
