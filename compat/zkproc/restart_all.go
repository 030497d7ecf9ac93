package zkproc

import (
	"sync"
	"testing"
)

// RestartAll starts every server again at once, on the same directories,
// configurations and ports, after stopping those still running, and waits
// until each serves clients. An ensemble's members need each other to
// serve, so Restart, which waits for one, cannot bring a whole stopped
// ensemble back.
func RestartAll(t testing.TB, servers []*Server) {
	t.Helper()
	for _, s := range servers {
		s.Stop()
		if err := s.start(); err != nil {
			t.Fatalf("zkproc: restart %s on %s: %v", s.Kind, s.Addr, err)
		}
	}
	waitAllReady(t, servers, "did not restart")
}

// waitAllReady waits for every server at once and fails t naming each
// one that does not serve.
func waitAllReady(t testing.TB, servers []*Server, what string) {
	t.Helper()
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { errs[i] = s.waitReady() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("zkproc: %s member %d on %s %s: %v\n%s",
				servers[i].Kind, i+1, servers[i].Addr, what, err, servers[i].logTail(8<<10))
		}
	}
}
