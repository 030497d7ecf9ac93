package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestConfigsEnsemble(t *testing.T) {
	tests := []struct {
		name, text, myid string
		err              string
		check            func(t *testing.T, c *zooCfg)
	}{
		{
			name: "three members",
			text: "tickTime=200\ninitLimit=10\nsyncLimit=5\nclientPort=2181\n" +
				"server.1=127.0.0.1:2888:3888;127.0.0.1:12181\nserver.2=127.0.0.1:2889:3889;127.0.0.1:12182\n" +
				"server.3=127.0.0.1:2890:3890:observer;127.0.0.1:12183\n",
			myid: "2",
			check: func(t *testing.T, c *zooCfg) {
				qc, nc, sc, err := configs(c, zap.NewNop())
				if err != nil {
					t.Fatal(err)
				}
				if qc.MyID != 2 || nc.MyID != 2 || len(qc.Peers) != 3 || !qc.Peers[2].Observer || qc.Standalone() {
					t.Fatalf("quorum config %+v", qc)
				}
				if sc.ClientAddr != "127.0.0.1:12182" {
					t.Fatalf("client address %q, want the one of server.2's line", sc.ClientAddr)
				}
				if tm := qc.Timing(); tm.ServingLease != time.Second {
					t.Fatalf("timing %+v", tm)
				}
			},
		},
		{
			name: "standalone without lines",
			text: "clientPort=2181\n",
			check: func(t *testing.T, c *zooCfg) {
				qc, nc, _, err := configs(c, zap.NewNop())
				if err != nil || !qc.Standalone() || nc.MyID != 1 {
					t.Fatalf("standalone: %+v %v", qc, err)
				}
			},
		},
		{name: "bad line", text: "server.1=127.0.0.1:2888\nserver.2=127.0.0.1:2889:3889\n", myid: "1", err: "server.1="},
		{name: "myid without line", text: "server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\n", myid: "7", err: "myid 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.myid != "" {
				if err := os.WriteFile(filepath.Join(dir, "myid"), []byte(tt.myid+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := filepath.Join(dir, "zoo.cfg")
			if err := os.WriteFile(p, []byte("dataDir="+dir+"\n"+tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := parseZooCfg(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.err != "" {
				if _, _, _, err := configs(c, zap.NewNop()); err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			tt.check(t, c)
		})
	}
}
