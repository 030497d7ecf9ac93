package quorum

import (
	"strings"
	"testing"
	"time"
)

func TestParsePeer(t *testing.T) {
	tests := []struct {
		spec string
		want Peer
		err  string
	}{
		{spec: "127.0.0.1:2888:3888", want: Peer{ID: 1, Host: "127.0.0.1", QuorumPort: 2888, ElectionPort: 3888}},
		{spec: "zk1:2888:3888:participant", want: Peer{ID: 1, Host: "zk1", QuorumPort: 2888, ElectionPort: 3888}},
		{spec: "zk1:2888:3888:observer", want: Peer{ID: 1, Host: "zk1", QuorumPort: 2888, ElectionPort: 3888, Observer: true}},
		{spec: "zk1:2888:3888;2181", want: Peer{ID: 1, Host: "zk1", QuorumPort: 2888, ElectionPort: 3888, ClientAddr: "0.0.0.0:2181"}},
		{spec: "zk1:2888:3888:participant;127.0.0.1:2181", want: Peer{ID: 1, Host: "zk1", QuorumPort: 2888, ElectionPort: 3888, ClientAddr: "127.0.0.1:2181"}},
		{spec: "[::1]:2888:3888", want: Peer{ID: 1, Host: "::1", QuorumPort: 2888, ElectionPort: 3888}},
		{spec: "zk1:2888", err: "want host:quorumPort:electionPort"},
		{spec: "zk1", err: "want host:quorumPort:electionPort"},
		{spec: "zk1:x:3888", err: `port "x"`},
		{spec: "zk1:2888:70000", err: `port "70000"`},
		{spec: "zk1:2888:3888:leader", err: `role "leader"`},
		{spec: "zk1:2888:3888;abc", err: `client port "abc"`},
		{spec: ":2888:3888", err: "empty host"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := ParsePeer(1, tt.spec)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "server.1=") {
					t.Fatalf("err = %v, want one naming server.1 and containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPeerString(t *testing.T) {
	p := Peer{ID: 2, Host: "127.0.0.1", QuorumPort: 2888, ElectionPort: 3888, Observer: true, ClientAddr: "0.0.0.0:2181"}
	if got, want := p.String(), "server.2=127.0.0.1:2888:3888:observer;0.0.0.0:2181"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	back, err := ParsePeer(2, strings.TrimPrefix(p.String(), "server.2="))
	if err != nil || back != p {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

func TestConfigValidate(t *testing.T) {
	three := func() Config {
		c := DefaultConfig()
		c.Peers = []Peer{
			{ID: 1, Host: "h", QuorumPort: 1, ElectionPort: 2},
			{ID: 2, Host: "h", QuorumPort: 3, ElectionPort: 4},
			{ID: 3, Host: "h", QuorumPort: 5, ElectionPort: 6},
		}
		return c
	}
	tests := map[string]struct {
		mod func(*Config)
		err string
	}{
		"ok":             {mod: func(*Config) {}},
		"standalone":     {mod: func(c *Config) { c.Peers = nil; c.MyID = 9 }},
		"tick":           {mod: func(c *Config) { c.TickTime = 0 }, err: "tickTime"},
		"syncLimit":      {mod: func(c *Config) { c.SyncLimit = 0 }, err: "syncLimit"},
		"initLimit":      {mod: func(c *Config) { c.InitLimit = 0 }, err: "initLimit"},
		"no myid line":   {mod: func(c *Config) { c.MyID = 7 }, err: "myid 7"},
		"duplicate addr": {mod: func(c *Config) { c.Peers[2].QuorumPort = 1 }, err: "server.3="},
		"same ports":     {mod: func(c *Config) { c.Peers[1].ElectionPort = 3 }, err: "server.2="},
		"only observers": {mod: func(c *Config) { c.Peers[0].Observer, c.Peers[1].Observer, c.Peers[2].Observer = true, true, true }, err: "no participant"},
		"duplicate id":   {mod: func(c *Config) { c.Peers[2].ID = 2 }, err: "appears twice"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := three()
			tt.mod(&c)
			err := c.Validate()
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.err)
			}
		})
	}
}

func TestTiming(t *testing.T) {
	c := DefaultConfig()
	c.TickTime, c.SyncLimit, c.InitLimit = 200*time.Millisecond, 5, 10
	tm := c.Timing()
	if tm.ServingLease != time.Second || tm.HeartbeatTimeout != 200*time.Millisecond ||
		tm.LeaderLeaseTimeout > tm.HeartbeatTimeout || tm.TransportTimeout != 2*time.Second ||
		tm.TouchInterval != 100*time.Millisecond {
		t.Fatalf("timing for tick 200ms, syncLimit 5: %+v", tm)
	}
	c.TickTime = time.Millisecond
	if tm := c.Timing(); tm.HeartbeatTimeout < 20*time.Millisecond {
		t.Fatalf("heartbeat timeout %v below the floor", tm.HeartbeatTimeout)
	}
}
