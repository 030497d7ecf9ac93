package quorum_test

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// regInput is one register operation: a write of value, or a read
// (sync then getData).
type regInput struct {
	write bool
	value string
}

// registerModel is a single register; a read must return the last write.
var registerModel = porcupine.Model{
	Init: func() interface{} { return "" },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		in := input.(regInput)
		if in.write {
			return true, in.value
		}
		return output.(string) == state.(string), state
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(regInput)
		if in.write {
			return "write " + in.value
		}
		return fmt.Sprintf("read → %v", output)
	},
}

func TestRegisterModelRejectsStaleRead(t *testing.T) {
	ops := []porcupine.Operation{
		{ClientId: 0, Input: regInput{write: true, value: "a"}, Call: 0, Return: 10},
		{ClientId: 1, Input: regInput{}, Output: "", Call: 20, Return: 30},
	}
	if porcupine.CheckOperations(registerModel, ops) {
		t.Fatal("a read after a completed write returned the old value and passed")
	}
	ops[1].Output = "a"
	if !porcupine.CheckOperations(registerModel, ops) {
		t.Fatal("a correct history failed")
	}
}

// TestIntegration_RegisterLinearizable checks with porcupine that writes
// and sync+reads of one znode, sent to all three members, stay
// linearizable while the leader is SIGKILLed and later SIGSTOPped. A write
// whose outcome the client cannot know (ConnectionLoss) may take effect at
// any time after it was sent.
func TestIntegration_RegisterLinearizable(t *testing.T) {
	servers := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{TickTime: 200})
	addrs := zkproc.Addrs(servers)
	setup, _ := dial(t, 4*time.Second, addrs...)
	if _, err := setup.Create("/reg", []byte(""), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	var mu sync.Mutex
	var history []porcupine.Operation
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		order := append(append([]string{}, addrs[i:]...), addrs[:i]...)
		c, _ := dial(t, 4*time.Second, order...)
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				op := porcupine.Operation{ClientId: id, Call: now()}
				if k%2 == 0 {
					v := fmt.Sprintf("%d-%d", id, k)
					op.Input = regInput{write: true, value: v}
					_, err := c.Set("/reg", []byte(v), -1)
					op.Return = now()
					if err != nil {
						// Unknown outcome: it may apply at any later time.
						op.Return = math.MaxInt64
					}
				} else {
					op.Input = regInput{}
					_, err := c.Sync("/reg")
					var data []byte
					if err == nil {
						data, _, err = c.Get("/reg")
					}
					op.Return = now()
					if err != nil {
						time.Sleep(5 * time.Millisecond)
						continue // a failed read tells nothing
					}
					op.Output = string(data)
				}
				mu.Lock()
				history = append(history, op)
				mu.Unlock()
				if op.Return == math.MaxInt64 {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}(i)
	}
	time.Sleep(time.Second)
	l := zkproc.LeaderOf(t, servers, 5*time.Second)
	servers[l].Kill()
	time.Sleep(1500 * time.Millisecond)
	servers[l].Restart(t)
	zkproc.WaitServing(t, servers[l].Addr, 30*time.Second)
	l = zkproc.LeaderOf(t, servers, 10*time.Second)
	servers[l].Pause()
	time.Sleep(1500 * time.Millisecond)
	servers[l].Resume()
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	res := porcupine.CheckOperationsTimeout(registerModel, history, 60*time.Second)
	unknown := 0
	for _, op := range history {
		if op.Return == math.MaxInt64 {
			unknown++
		}
	}
	t.Logf("%d operations (%d writes of unknown outcome): %v", len(history), unknown, res)
	switch res {
	case porcupine.Illegal:
		t.Fatal("history is not linearizable")
	case porcupine.Unknown:
		t.Fatal("linearizability check did not finish within 60s")
	}
}
