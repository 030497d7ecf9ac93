package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want [][2]string
	}{
		{"equals", "tickTime=2000\n", [][2]string{{"tickTime", "2000"}}},
		{"spaces around", "  dataDir = /tmp/x  \n", [][2]string{{"dataDir", "/tmp/x"}}},
		{"colon", "clientPort: 2181\n", [][2]string{{"clientPort", "2181"}}},
		{"space separated", "initLimit 10\n", [][2]string{{"initLimit", "10"}}},
		{"comments", "# c\n! d\n\nsyncLimit=5\n", [][2]string{{"syncLimit", "5"}}},
		{"server line keeps semicolon", "server.1=127.0.0.1:2888:3888;2181\n",
			[][2]string{{"server.1", "127.0.0.1:2888:3888;2181"}}},
		{"value with equals", "zookeeper.DigestAuthenticationProvider.superDigest=super:abc=\n",
			[][2]string{{"zookeeper.DigestAuthenticationProvider.superDigest", "super:abc="}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readProperties(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestParseZooCfg(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "myid"), []byte("3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "zoo.cfg")
	text := strings.Join([]string{
		"tickTime=200",
		"dataDir=" + dir,
		"clientPort=12181",
		"clientPortAddress=127.0.0.1",
		"maxSessionTimeout=9000",
		"4lw.commands.whitelist=ruok, srvr ,mntr",
		"admin.enableServer=false",
		"extendedTypesEnabled=true",
		"DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=",
		"jute.maxbuffer=4096",
		"server.1=127.0.0.1:2888:3888;2181",
		"zkd.lockDelayMs=1500",
		"zkd.bootstrap=false",
	}, "\n")
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"SERVER_JVMFLAGS=-Xmx1g -Dznode.container.checkIntervalMs=100", "JVMFLAGS=-Dreadonlymode.enabled=true"}
	c, err := parseZooCfg(cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.TickTime != 200*time.Millisecond || c.ClientPort != 12181 || c.ClientPortAddress != "127.0.0.1" {
		t.Errorf("tick/port/address = %v/%d/%q", c.TickTime, c.ClientPort, c.ClientPortAddress)
	}
	if c.LockDelay != 1500*time.Millisecond {
		t.Errorf("zkd.lockDelayMs = %v, want 1.5s", c.LockDelay)
	}
	if !c.NoBootstrap {
		t.Errorf("zkd.bootstrap=false did not set NoBootstrap")
	}
	if c.MaxSessionTimeout != 9*time.Second || c.MinSessionTimeout != 0 {
		t.Errorf("session timeouts = %v/%v", c.MinSessionTimeout, c.MaxSessionTimeout)
	}
	if strings.Join(c.FourLetterWords, ",") != "ruok,srvr,mntr" {
		t.Errorf("4lw = %q", c.FourLetterWords)
	}
	if c.AdminEnable || c.MyID != 3 || c.Servers[1] != "127.0.0.1:2888:3888;2181" {
		t.Errorf("admin=%v myid=%d servers=%v", c.AdminEnable, c.MyID, c.Servers)
	}
	if !c.propBool("zookeeper.extendedTypesEnabled") || !c.propBool("readonlymode.enabled") {
		t.Errorf("boolean properties not read: %v", c.Props)
	}
	if v, _ := c.prop("zookeeper.DigestAuthenticationProvider.superDigest"); v != "super:D/InIHSb7yEEbrWz8b9l71RjZJU=" {
		t.Errorf("superDigest = %q", v)
	}
	if n, err := c.propInt("jute.maxbuffer", 0xfffff); err != nil || n != 4096 {
		t.Errorf("jute.maxbuffer = %d, %v", n, err)
	}
	if n, err := c.propInt("znode.container.checkIntervalMs", 60000); err != nil || n != 100 {
		t.Errorf("checkIntervalMs from SERVER_JVMFLAGS = %d, %v", n, err)
	}
	// The zoo.cfg key form works too (it becomes zookeeper.<key>).
	c.Props = map[string]string{"zookeeper.znode.container.checkIntervalMs": "250"}
	if n, err := c.propInt("znode.container.checkIntervalMs", 60000); err != nil || n != 250 {
		t.Errorf("checkIntervalMs from zoo.cfg = %d, %v", n, err)
	}
}

func TestParseZooCfgErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, text, want string
	}{
		{"no dataDir", "tickTime=2000\n", "dataDir is not set"},
		{"bad number", "dataDir=/tmp\ntickTime=abc\n", "tickTime=abc"},
		{"bad bool", "dataDir=/tmp\nadmin.enableServer=maybe\n", "admin.enableServer"},
		{"bad server id", "dataDir=/tmp\nserver.x=a:1:2\n", "server.x"},
		{"bad bootstrap", "dataDir=/tmp\nzkd.bootstrap=maybe\n", "zkd.bootstrap"},
		{"negative lock delay", "dataDir=/tmp\nzkd.lockDelayMs=-1\n", "zkd.lockDelayMs=-1: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name+".cfg")
			if err := os.WriteFile(p, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := parseZooCfg(p, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}
