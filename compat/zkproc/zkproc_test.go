package zkproc

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestWriteConfig(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		members []member
		myid    int
		admin   bool
		want    []string // lines that must appear, in this order
		not     []string // lines that must not appear
		notWant []string
	}{
		{
			name: "defaults",
			want: []string{"tickTime=2000", "clientPort=2181", "clientPortAddress=127.0.0.1",
				"4lw.commands.whitelist=*", "admin.enableServer=false"},
			notWant: []string{"server.", "initLimit"},
		},
		{
			name:  "admin server and tick",
			opts:  Options{TickTime: 500},
			admin: true,
			want:  []string{"tickTime=500", "admin.enableServer=true", "admin.serverAddress=127.0.0.1", "admin.serverPort=8081"},
		},
		{
			name: "extra lines sorted and last",
			opts: Options{ExtraCfg: map[string]string{"maxSessionTimeout": "9000", "4lw.commands.whitelist": "ruok", "a.b": "c"}},
			want: []string{"4lw.commands.whitelist=*", "4lw.commands.whitelist=ruok", "a.b=c", "maxSessionTimeout=9000"},
		},
		{
			name:    "ensemble member",
			members: []member{{1, 2181, 3001, 4001, false}, {2, 2182, 3002, 4002, false}},
			myid:    2,
			want: []string{"initLimit=10", "syncLimit=5",
				"server.1=127.0.0.1:3001:4001;127.0.0.1:2181",
				"server.2=127.0.0.1:3002:4002;127.0.0.1:2182"},
		},
		{
			name:    "observer member",
			members: []member{{1, 2181, 3001, 4001, false}, {2, 2182, 3002, 4002, true}},
			myid:    2,
			want: []string{"initLimit=10", "syncLimit=5",
				"server.1=127.0.0.1:3001:4001;127.0.0.1:2181",
				"server.2=127.0.0.1:3002:4002:observer;127.0.0.1:2182", "peerType=observer"},
		},
		{
			name:    "voter beside an observer",
			members: []member{{1, 2181, 3001, 4001, false}, {2, 2182, 3002, 4002, true}},
			myid:    1,
			want: []string{"server.1=127.0.0.1:3001:4001;127.0.0.1:2181",
				"server.2=127.0.0.1:3002:4002:observer;127.0.0.1:2182"},
			not: []string{"peerType=observer"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := &Server{Kind: KindZkd, Port: 2181, Dir: dir, DataDir: filepath.Join(dir, "data"), CfgPath: filepath.Join(dir, "zoo.cfg")}
			if tt.admin {
				s.AdminAddr = "127.0.0.1:8081"
			}
			if err := writeConfig(s, tt.opts, tt.members, tt.myid); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(s.CfgPath)
			if err != nil {
				t.Fatal(err)
			}
			cfg := string(b)
			if !strings.Contains(cfg, "dataDir="+s.DataDir+"\n") {
				t.Errorf("no dataDir line in\n%s", cfg)
			}
			lines := strings.Split(cfg, "\n")
			for _, n := range tt.not {
				if slices.Contains(lines, n) {
					t.Errorf("line %q in\n%s", n, cfg)
				}
			}
			pos := 0
			for _, w := range tt.want {
				for pos < len(lines) && lines[pos] != w {
					pos++
				}
				if pos == len(lines) {
					t.Fatalf("line %q missing or out of order in\n%s", w, cfg)
				}
			}
			for _, nw := range tt.notWant {
				if strings.Contains(cfg, nw) {
					t.Errorf("unexpected %q in\n%s", nw, cfg)
				}
			}
			myid, err := os.ReadFile(filepath.Join(s.DataDir, "myid"))
			switch {
			case tt.myid == 0 && err == nil:
				t.Errorf("standalone server got a myid file")
			case tt.myid != 0 && strings.TrimSpace(string(myid)) != strconv.Itoa(tt.myid):
				t.Errorf("myid = %q, %v; want %d", myid, err, tt.myid)
			}
			if got := hasServerLines(s.CfgPath); got != (tt.myid != 0) {
				t.Errorf("hasServerLines = %v", got)
			}
		})
	}
}

func TestModFileIs(t *testing.T) {
	tests := []struct {
		gomod string
		want  bool
	}{
		{"module github.com/zkd/zkd\n\ngo 1.26\n", true},
		{"// x\nmodule \"github.com/zkd/zkd\"\n", true},
		{"module github.com/zkd/zkd/sub\n", false},
		{"module github.com/other/zkd\n", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := modFileIs([]byte(tt.gomod), modulePath); got != tt.want {
			t.Errorf("modFileIs(%q) = %v, want %v", tt.gomod, got, tt.want)
		}
	}
}

// fakeServer accepts one connection at a time and runs handle on it.
func fakeServer(t *testing.T, handle func(c net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			handle(c)
			c.Close()
		}
	}()
	return l.Addr().String()
}

func connectResponse(timeout int32, session int64) []byte {
	body := make([]byte, 4+4+8+4+16)
	binary.BigEndian.PutUint32(body[4:], uint32(timeout))
	binary.BigEndian.PutUint64(body[8:], uint64(session))
	binary.BigEndian.PutUint32(body[16:], 16)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestHandshake(t *testing.T) {
	tests := []struct {
		name    string
		reply   []byte
		wantErr string
	}{
		{"granted", connectResponse(4000, 0x1234), ""},
		{"refused", connectResponse(0, 0), "session refused"},
		{"closed", nil, "EOF"},
		{"short", []byte{0, 0, 0, 4, 0, 0, 0, 0}, "short ConnectResponse"},
		{"huge frame", []byte{0x7f, 0, 0, 0}, "bad frame length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotClose := make(chan bool, 1)
			addr := fakeServer(t, func(c net.Conn) {
				req, err := readFrame(c)
				if err != nil || len(req) != connectRequestLen {
					t.Errorf("connect request: %d bytes, %v", len(req), err)
					return
				}
				c.Write(tt.reply)
				if tt.wantErr != "" {
					return
				}
				hdr, err := readFrame(c)
				gotClose <- err == nil && len(hdr) == 8 && int32(binary.BigEndian.Uint32(hdr[4:])) == -11
			})
			err := Handshake(addr, 2*time.Second)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Handshake: %v", err)
				}
				if !<-gotClose {
					t.Errorf("handshake did not close its session")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Handshake error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestFourLetter(t *testing.T) {
	addr := fakeServer(t, func(c net.Conn) {
		cmd := make([]byte, 4)
		if _, err := io.ReadFull(c, cmd); err != nil {
			return
		}
		switch string(cmd) {
		case "ruok":
			c.Write([]byte("imok"))
		case "mntr":
			c.Write([]byte("zk_version\t3.8.0\nzk_znode_count\t5\n"))
		}
	})
	for cmd, want := range map[string]string{"ruok": "imok", "mntr": "zk_version\t3.8.0\nzk_znode_count\t5\n", "xxxx": ""} {
		got, err := FourLetter(addr, cmd, 2*time.Second)
		if err != nil || got != want {
			t.Errorf("FourLetter(%s) = %q, %v; want %q", cmd, got, err, want)
		}
	}
	if _, err := FourLetter("127.0.0.1:1", "ruok", time.Second); err == nil {
		t.Errorf("FourLetter to a closed port succeeded")
	}
}

func TestFreePort(t *testing.T) {
	p := FreePort(t)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("FreePort gave %d, which cannot be bound: %v", p, err)
	}
	l.Close()
}
