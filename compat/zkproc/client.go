package zkproc

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

type testLogger struct{ t testing.TB }

func (l testLogger) Printf(format string, args ...any) { l.t.Logf("go-zk: "+format, args...) }

// Connect opens a go-zk session on addrs (10 s session timeout), waits up
// to 30 s until it is usable, and closes it when t ends. Events after the
// session is established are drained.
func Connect(t testing.TB, addrs ...string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect(addrs, 10*time.Second, zk.WithLogger(testLogger{t}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				go func() {
					for range events {
					}
				}()
				return c
			}
		case <-deadline:
			t.Fatalf("zkproc: no session on %v within 30s", addrs)
		}
	}
}
