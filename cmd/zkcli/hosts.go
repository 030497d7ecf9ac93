package main

import (
	"context"
	"math/rand"
	"net"
	"sync"
	"time"
)

// namedHosts is go-zk's HostProvider without go-zk's DNS resolution: it
// hands the dialer each server as the connection string names it
// (host:port), so that the dialer resolves the name and knows it, as
// ZooKeeper's StaticHostProvider keeps unresolved addresses. GSSAPI
// needs the name: the server's principal is service/<host>.
type namedHosts struct {
	mu      sync.Mutex
	servers []string
	curr    int
	last    int
}

// Init takes the servers of the connection string, in a random order.
// As go-zk's DNSHostProvider, it fails when a server's name does not
// resolve, so that zkcli reports it at once rather than retrying.
func (h *namedHosts) Init(servers []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for _, s := range servers {
		host, _, err := net.SplitHostPort(s)
		if err != nil {
			return err
		}
		if _, err := net.DefaultResolver.LookupHost(ctx, host); err != nil {
			return err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = append([]string(nil), servers...)
	rand.Shuffle(len(h.servers), func(i, j int) { h.servers[i], h.servers[j] = h.servers[j], h.servers[i] })
	h.curr, h.last = -1, -1
	return nil
}

// Len returns the number of servers.
func (h *namedHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Next returns the next server; retryStart is true once every server has
// been tried since the last connection.
func (h *namedHosts) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart = h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

// Connected records a successful connection to the current server.
func (h *namedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}
