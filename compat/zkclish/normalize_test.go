package zkclish

import (
	"slices"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name       string
		out        string
		sessions   []string
		wantLines  []string
		wantEvents []string
	}{
		{
			name: "jvm and logging noise is dropped",
			out: "SLF4J: Failed to load class \"org.slf4j.impl.StaticLoggerBinder\".\n" +
				"log4j:WARN No appenders could be found\n" +
				"2026-11-21 23:00:00,123 [myid:] - INFO  [main:Environment@98] - Client environment\n" +
				"OpenJDK 64-Bit Server VM warning: Options -Xverify:none deprecated\n" +
				"Picked up JAVA_TOOL_OPTIONS: -Dx=y\n" +
				"[0.001s][warning][perf,memops] Cannot use file /tmp/hsperfdata_root/1434 because it is locked\n" +
				"Created /a\n",
			wantLines: []string{"Created /a"},
		},
		{
			name:      "connect address is masked",
			out:       "Connecting to 127.0.0.1:40123\nWelcome to ZooKeeper!\n",
			wantLines: []string{"Connecting to <server>", "Welcome to ZooKeeper!"},
		},
		{
			name: "zxids are numbered by first appearance, equal stays equal",
			out: "cZxid = 0x200000003\nmZxid = 0x200000007\npZxid = 0x200000003\n" +
				"cZxid = 0x0\nmZxid = 0x0200000007\n",
			wantLines: []string{"cZxid = <zxid#1>", "mZxid = <zxid#2>", "pZxid = <zxid#1>",
				"cZxid = 0x0", "mZxid = <zxid#2>"},
		},
		{
			name:      "config member ports are masked",
			out:       "server.1=127.0.0.1:36481:40485:participant;127.0.0.1:35267\nversion=0\n",
			wantLines: []string{"server.1=127.0.0.1:<port>:<port>:participant;127.0.0.1:<port>", "version=0"},
		},
		{
			name:      "times are masked except the epoch",
			out:       "ctime = Sat Nov 21 23:00:00 UTC 2026\nmtime = Thu Jan 01 00:00:00 UTC 1970\n",
			wantLines: []string{"ctime = <time>", "mtime = Thu Jan 01 00:00:00 UTC 1970"},
		},
		{
			name: "own sessions and other sessions are told apart",
			out: "ephemeralOwner = 0x1a200566e340000\nephemeralOwner = 0x0\n" +
				"ephemeralOwner = 0x100004369b70009\nephemeralOwner = 0x1a200566e340001\n" +
				"ephemeralOwner = 0x100004369b70009\n",
			sessions: []string{"0x1a200566e340001", "0x01a200566e340000"},
			wantLines: []string{"ephemeralOwner = <self#2>", "ephemeralOwner = 0x0",
				"ephemeralOwner = <session#1>", "ephemeralOwner = <self#1>",
				"ephemeralOwner = <session#1>"},
		},
		{
			name: "watcher lines are pulled out of interleaved output",
			out: "\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n" +
				"hello\n\nWATCHER::\nCreated /q/c\n\n" +
				"WatchedEvent state:SyncConnected type:NodeChildrenChanged path:/q\n" +
				"\nWATCHER::\n\nWatchedEvent state:Closed type:None path:null\n",
			wantLines:  []string{"hello", "Created /q/c"},
			wantEvents: []string{"WatchedEvent state:SyncConnected type:NodeChildrenChanged path:/q"},
		},
		{
			name: "getEphemerals paths and whoami ids are sorted",
			out: "[/x/n-1, /x/e, /x/n-0]\n[n-1, e]\nAuth scheme: User\n" +
				"ip: 127.0.0.1\ndigest: bob\nsuper: \ndigest: alice\n[c, a]\n",
			wantLines: []string{"[/x/e, /x/n-0, /x/n-1]", "[n-1, e]", "Auth scheme: User",
				"digest: alice", "digest: bob", "ip: 127.0.0.1", "super: ", "[c, a]"},
		},
		{
			name:      "other lines are kept verbatim",
			out:       "'world,'anyone\n: cdrwa\nNode does not exist: /x\r\n[a, b]\n",
			wantLines: []string{"'world,'anyone", ": cdrwa", "Node does not exist: /x", "[a, b]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := normalize(tt.out, tt.sessions)
			if !slices.Equal(got.Lines, tt.wantLines) {
				t.Errorf("lines:\n got %q\nwant %q", got.Lines, tt.wantLines)
			}
			if !slices.Equal(got.Events, tt.wantEvents) {
				t.Errorf("events:\n got %q\nwant %q", got.Events, tt.wantEvents)
			}
		})
	}
}

func TestLineDiff(t *testing.T) {
	tests := []struct {
		name string
		a, b []string
		want string
	}{
		{"equal", []string{"x", "y"}, []string{"x", "y"}, ""},
		{"changed line", []string{"x", "y", "z"}, []string{"x", "Y", "z"}, "  x\n+ Y\n- y\n  z\n"},
		{"extra line", []string{"x"}, []string{"x", "y"}, "  x\n+ y\n"},
		{"missing line", []string{"x", "y"}, []string{"y"}, "- x\n  y\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lineDiff(tt.a, tt.b); got != tt.want {
				t.Errorf("lineDiff = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStatBlock(t *testing.T) {
	lines := strings.Split("hello\ncZxid = <zxid#1>\nctime = <time>\nmZxid = <zxid#1>\n"+
		"mtime = <time>\npZxid = <zxid#1>\ncversion = 0\ndataVersion = 0\naclVersion = 0\n"+
		"ephemeralOwner = <self#1>\ndataLength = 5\nnumChildren = 0\nnext", "\n")
	st := statBlock(lines, "hello")
	if st == nil || st["dataLength"] != "5" || st["ephemeralOwner"] != "<self#1>" || len(st) != 11 {
		t.Fatalf("statBlock = %v", st)
	}
	if st := statBlock(lines[:5], "hello"); st != nil {
		t.Fatalf("statBlock of a cut block = %v, want nil", st)
	}
	if st := statBlock(lines, "absent"); st != nil {
		t.Fatalf("statBlock after an absent line = %v, want nil", st)
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("x", clipWidth+5)
	tests := []struct{ in, want string }{
		{"short\nlines\n", "short\nlines\n"},
		{long + "\nnext", long[:clipWidth] + "… (305 bytes)\nnext"},
		{"a\n" + long, "a\n" + long[:clipWidth] + "… (305 bytes)"},
	}
	for _, tt := range tests {
		if got := clip(tt.in); got != tt.want {
			t.Errorf("clip(%.20q…) = %.60q…, want %.60q…", tt.in, got, tt.want)
		}
	}
}

func TestSortACLEntries(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"'digest,'zz:x\n: cdrwa\n'digest,'b:y\n: r\nrest\n", "'digest,'b:y\n: r\n'digest,'zz:x\n: cdrwa\nrest\n"},
		{"head\n'world,'anyone\n: cdrwa\n", "head\n'world,'anyone\n: cdrwa\n"},
		{"'digest,'q:1\n: a\nmid\n'digest,'c:2\n: b\n'digest,'a:3\n: c\n", "'digest,'q:1\n: a\nmid\n'digest,'a:3\n: c\n'digest,'c:2\n: b\n"},
	} {
		if got := sortACLEntries(tc.in); got != tc.want {
			t.Errorf("sortACLEntries(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
