package diff

import (
	"flag"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

var (
	flagSeeds   = flag.Int("seeds", 0, "run this many random seeds (from -seed0) instead of the fixed CI set")
	flagSeed0   = flag.Uint64("seed0", 1000, "first seed of a -seeds run")
	flagSteps   = flag.Int("steps", 80, "steps per script")
	flagShrink  = flag.Duration("shrink", 15*time.Second, "time budget for shrinking each difference")
	flagShrinkT = flag.Duration("shrinktotal", 40*time.Second, "time budget for shrinking in the whole run; later differences are reported unshrunk")
	flagShow    = flag.Bool("show", false, "log every script with its trace on both servers")
	flagExclude = flag.String("exclude", "", "regexp: leave the steps and multi sub-operations whose rendering matches out of every script (e.g. '^checkWatches'), to look past a known difference")
)

func exclude(t *testing.T) *regexp.Regexp {
	if *flagExclude == "" {
		return nil
	}
	re, err := regexp.Compile(*flagExclude)
	if err != nil {
		t.Fatalf("diff: -exclude: %v", err)
	}
	return re
}

// ciSeeds is the fixed set of seeds every `go test` runs.
var ciSeeds = []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
	21, 22, 23, 24, 25, 26, 27, 28, 29, 30}

// startPair starts ZooKeeper 3.8 and zkd with the same settings: TTL nodes
// allowed, and container/TTL sweeps pushed out of any test's lifetime so
// that they never race a script.
func startPair(t *testing.T) *Pair {
	t.Helper()
	const interval = "-Dznode.container.checkIntervalMs=86400000"
	cfg := map[string]string{"extendedTypesEnabled": "true"}
	zk := zkproc.StartZooKeeper(t, zkproc.Options{ExtraCfg: cfg, JVMFlags: []string{interval}})
	zkd := zkproc.StartZkd(t, zkproc.Options{ExtraCfg: cfg, Env: []string{"SERVER_JVMFLAGS=" + interval}})
	return &Pair{A: &Target{Name: "zkd", Addr: zkd.Addr}, B: &Target{Name: "zookeeper", Addr: zk.Addr}}
}

// TestIntegration_Differential runs seeded random scripts against zkd and
// ZooKeeper 3.8 and fails with a shrunk script for every seed whose
// replies or watch events differ.
func TestIntegration_Differential(t *testing.T) {
	p := startPair(t)
	seeds := ciSeeds
	if *flagSeeds > 0 {
		seeds = nil
		for i := range *flagSeeds {
			seeds = append(seeds, *flagSeed0+uint64(i))
		}
	}
	passed, failed := 0, 0
	shrinkEnd := time.Now().Add(*flagShrinkT)
	for _, seed := range seeds {
		ran := false
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			ran = true
			s := Generate(seed, *flagSteps).Without(exclude(t))
			if *flagShow {
				ta, err := p.A.Run(s)
				if err != nil {
					t.Fatal(err)
				}
				tb, err := p.B.Run(s)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s\nzkd:\n%s\nzookeeper:\n%s", s, ta, tb)
			}
			d, err := p.Check(s)
			if err != nil {
				t.Fatal(err)
			}
			if d == nil {
				return
			}
			budget := min(*flagShrink, time.Until(shrinkEnd))
			if budget < 0 {
				budget = 0
			}
			min, md := p.Minimize(s, d, budget)
			t.Errorf("zkd and ZooKeeper 3.8 differ; minimal script (%d of %d steps):\n%s%s",
				len(min.Ops), len(s.Ops), min, md.Format("zkd", "zookeeper"))
		})
		if !ran {
			continue // filtered out by -run
		}
		if ok {
			passed++
		} else {
			failed++
		}
	}
	t.Logf("%d passed, %d failed", passed, failed)
}

// TestIntegration_DifferentialRepeatable runs the same scripts twice on each
// server and expects identical traces: the normalization must hide every
// absolute value (zxids, times, session ids, the run's root) and every
// ordering the servers do not promise, or the differential test would
// report noise.
func TestIntegration_DifferentialRepeatable(t *testing.T) {
	p := startPair(t)
	for _, tg := range []*Target{p.A, p.B} {
		for _, seed := range []uint64{101, 102, 103} {
			// Without writes to ZooKeeper's system nodes: should one
			// succeed, the second run would see its result.
			s := Generate(seed, 60).Without(regexp.MustCompile(`^(create|create2|createContainer|createTTL|delete|setData|setACL) "/zookeeper`))
			// One after the other: concurrent runs on one server would
			// interleave their zxids.
			t1, err := tg.Run(s)
			if err != nil {
				t.Fatal(err)
			}
			t2, err := tg.Run(s)
			if err != nil {
				t.Fatal(err)
			}
			d := Compare(s, t1, t2)
			if d != nil {
				t.Errorf("%s: seed %d differs from itself:\n%s%s", tg.Name, seed, s, d.Format("run 1", "run 2"))
			}
		}
	}
}
