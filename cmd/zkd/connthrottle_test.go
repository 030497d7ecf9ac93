package main

import (
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server"
)

// rawConnect sends a ConnectRequest for session id (0: a new one) with
// passwd and returns the connection and the server's answer, or the error
// that ended the handshake (io.EOF when the server closed it unanswered).
func rawConnect(addr string, id int64, passwd []byte) (net.Conn, jute.ConnectResponse, error) {
	var resp jute.ConnectResponse
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, resp, err
	}
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	req := jute.Encode(&jute.ConnectRequest{TimeOut: 10000, SessionId: id, Passwd: passwd})
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(req))), req...)); err != nil {
		nc.Close()
		return nil, resp, err
	}
	if err := readFrameInto(nc, &resp); err != nil {
		nc.Close()
		return nil, resp, err
	}
	if resp.SessionId == 0 {
		nc.Close()
		return nil, resp, errors.New("no session id")
	}
	return nc, resp, nil
}

// TestIntegration_ConnectionThrottle runs the same burst of connects
// against zkd and ZooKeeper 3.8 configured with a tiny connection throttle
// bucket that does not refill during the test, and checks that both let
// the same connects through, close the others unanswered, count them in
// mntr's zk_connection_rejected, and keep the admitted sessions. zkproc's
// readiness check opens one session first, which takes its tokens too.
func TestIntegration_ConnectionThrottle(t *testing.T) {
	const hour = "3600000"
	type step struct {
		name   string
		resume bool // resume the first admitted session instead of a new one
		ok     bool
	}
	tests := []struct {
		name  string
		cfg   map[string]string
		steps []step
	}{
		{"4 tokens, 1 each", map[string]string{"connection_throttle_tokens": "4", "connection_throttle_fill_time": hour},
			[]step{{"new", false, true}, {"new", false, true}, {"resume", true, true}, {"new", false, false},
				{"resume", true, false}, {"new", false, false}}},
		// 3 × 3 = 9 tokens: the readiness check takes 3, a new session 3,
		// a resume 2, leaving 1.
		{"weighted", map[string]string{"connection_throttle_tokens": "3", "connection_throttle_fill_time": hour,
			"connection_throttle_weight_enabled": "true"},
			[]step{{"new", false, true}, {"resume", true, true}, {"new", false, false}, {"resume", true, false}}},
	}
	for _, tt := range tests {
		for _, kind := range []zkproc.Kind{zkproc.KindZkd, zkproc.KindZooKeeper} {
			t.Run(tt.name+"/"+string(kind), func(t *testing.T) {
				var srv *zkproc.Server
				if kind == zkproc.KindZkd {
					srv = zkproc.StartZkd(t, zkproc.Options{ExtraCfg: tt.cfg})
				} else {
					srv = zkproc.StartZooKeeper(t, zkproc.Options{ExtraCfg: tt.cfg})
				}
				var (
					open    []net.Conn
					first   jute.ConnectResponse
					refused int64
				)
				defer func() {
					for _, nc := range open {
						nc.Close()
					}
				}()
				for i, st := range tt.steps {
					var id int64
					var pw []byte
					if st.resume {
						id, pw = first.SessionId, first.Passwd
					}
					nc, resp, err := rawConnect(srv.Addr, id, pw)
					if st.ok != (err == nil) {
						t.Fatalf("step %d (%s): err = %v, want admitted %v", i, st.name, err, st.ok)
					}
					if err != nil {
						refused++
						continue
					}
					if first.SessionId == 0 {
						first = resp
					}
					open = append(open, nc)
				}
				// The last connection holds the first session (resumed or
				// not); ping every connection still open.
				last := open[len(open)-1]
				if err := ping(last); err != nil {
					t.Fatalf("admitted session after the refusals: %v", err)
				}
				if got := awaitMntrInt(t, srv.Addr, "zk_connection_rejected", refused); got != refused {
					t.Errorf("mntr zk_connection_rejected = %d, want %d", got, refused)
				}
				mntr, err := zkproc.FourLetter(srv.Addr, "mntr", 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				// Connect requests past the throttle, the readiness check's
				// included; 4-letter words are not counted.
				if got, want := mntrInt(mntr, "zk_connection_request_count"), int64(len(tt.steps))-refused+1; got != want {
					t.Errorf("mntr zk_connection_request_count = %d, want %d", got, want)
				}
			})
		}
	}
}

func TestConnThrottleConfig(t *testing.T) {
	tests := []struct {
		name    string
		props   map[string]string
		want    server.ConnThrottleConfig
		wantErr string
	}{
		{"defaults", nil, server.DefaultConnThrottle(), ""},
		{"set", map[string]string{"zookeeper.connection_throttle_tokens": "10", "zookeeper.connection_throttle_fill_time": "50",
			"zookeeper.connection_throttle_fill_count": "2", "zookeeper.connection_throttle_freeze_time": "100",
			"zookeeper.connection_throttle_drop_increase": "0.1", "zookeeper.connection_throttle_drop_decrease": "0.01",
			"zookeeper.connection_throttle_decrease_ratio": "0.5", "zookeeper.connection_throttle_weight_enabled": "TRUE",
			"zookeeper.connection_throttle_global_session_weight": "4", "zookeeper.connection_throttle_renew_session_weight": "3"},
			server.ConnThrottleConfig{Tokens: 10, FillTime: 50 * time.Millisecond, FillCount: 2, FreezeTime: 100 * time.Millisecond,
				DropIncrease: 0.1, DropDecrease: 0.01, DecreaseRatio: 0.5, WeightEnabled: true, GlobalWeight: 4, RenewWeight: 3}, ""},
		{"negative tokens", map[string]string{"zookeeper.connection_throttle_tokens": "-1"}, server.ConnThrottleConfig{}, "tokens"},
		{"zero fill time", map[string]string{"zookeeper.connection_throttle_tokens": "1", "zookeeper.connection_throttle_fill_time": "0"},
			server.ConnThrottleConfig{}, "fill_time"},
		{"weight below local", map[string]string{"zookeeper.connection_throttle_local_session_weight": "5"}, server.ConnThrottleConfig{}, "local_session_weight"},
		{"freeze time below -1", map[string]string{"zookeeper.connection_throttle_freeze_time": "-2"}, server.ConnThrottleConfig{}, "freeze_time"},
		{"weight zero", map[string]string{"zookeeper.connection_throttle_renew_session_weight": "0"}, server.ConnThrottleConfig{}, "positive"},
		{"not a number", map[string]string{"zookeeper.connection_throttle_drop_increase": "lots"}, server.ConnThrottleConfig{}, "drop_increase"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultZooCfg()
			for k, v := range tt.props {
				c.Props[k] = v
			}
			got, err := connThrottleConfig(c)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
