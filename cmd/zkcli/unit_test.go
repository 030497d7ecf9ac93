package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/jute"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"ls /", []string{"ls", "/"}},
		{"  get   -s  /a  ", []string{"get", "-s", "/a"}},
		{`create /a "hello world"`, []string{"create", "/a", "hello world"}},
		{`create /a 'it is' x`, []string{"create", "/a", "it is", "x"}},
		{`create /a ""`, []string{"create", "/a", ""}},
		{`set /a a"b`, []string{"set", "/a", `a"b`}},
		{"\tls\t/x", []string{"ls", "/x"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := tokenize(tt.line); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("tokenize(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

func TestParseOpts(t *testing.T) {
	tests := []struct {
		name     string
		words    []string
		spec     optSpec
		wantOpts map[string]string
		wantArgs []string
		wantErr  string
	}{
		{"flags", []string{"get", "-s", "-w", "/a"}, optSpec{flags: "sw"}, map[string]string{"s": "", "w": ""}, []string{"get", "/a"}, ""},
		{"bundled", []string{"ls", "-sR", "/a"}, optSpec{flags: "swR"}, map[string]string{"s": "", "R": ""}, []string{"ls", "/a"}, ""},
		{"value separate", []string{"set", "-v", "3", "/a", "d"}, optSpec{flags: "s", vals: "v"}, map[string]string{"v": "3"}, []string{"set", "/a", "d"}, ""},
		{"value attached", []string{"set", "-v3", "/a", "d"}, optSpec{vals: "v"}, map[string]string{"v": "3"}, []string{"set", "/a", "d"}, ""},
		{"options after args", []string{"removewatches", "/w", "-d", "-l"}, optSpec{flags: "cdal"}, map[string]string{"d": "", "l": ""}, []string{"removewatches", "/w"}, ""},
		{"word option", []string{"reconfig", "-add", "5=h:1:2;3", "-s"}, optSpec{flags: "s", vals: "v", words: []string{"add", "remove"}}, map[string]string{"add": "5=h:1:2;3", "s": ""}, []string{"reconfig"}, ""},
		{"double dash", []string{"set", "/a", "--", "-1"}, optSpec{vals: "v"}, map[string]string{}, []string{"set", "/a", "-1"}, ""},
		{"lone dash is an argument", []string{"set", "/a", "-"}, optSpec{}, map[string]string{}, []string{"set", "/a", "-"}, ""},
		{"unknown", []string{"get", "-x", "/a"}, optSpec{flags: "sw"}, nil, nil, "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -x"},
		{"unknown in bundle", []string{"get", "-sx", "/a"}, optSpec{flags: "sw"}, nil, nil, "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -x"},
		{"missing value", []string{"delete", "/a", "-v"}, optSpec{vals: "v"}, nil, nil, "org.apache.commons.cli.MissingArgumentException: Missing argument for option: v"},
		{"missing word value", []string{"reconfig", "-members"}, optSpec{words: []string{"members"}}, nil, nil, "org.apache.commons.cli.MissingArgumentException: Missing argument for option: members"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parseOpts(tt.words, tt.spec)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.opts, tt.wantOpts) || !reflect.DeepEqual(p.args, tt.wantArgs) {
				t.Fatalf("got opts %v args %q, want %v %q", p.opts, p.args, tt.wantOpts, tt.wantArgs)
			}
		})
	}
}

func TestParseACL(t *testing.T) {
	acl := func(perms int32, scheme, id string) jute.ACL {
		return jute.ACL{Perms: perms, Id: jute.Id{Scheme: scheme, Id: id}}
	}
	tests := []struct {
		in       string
		want     []jute.ACL
		warnings []string
	}{
		{"world:anyone:cdrwa", []jute.ACL{acl(jute.PermAll, "world", "anyone")}, nil},
		{"digest:user:hash:rw", []jute.ACL{acl(jute.PermRead|jute.PermWrite, "digest", "user:hash")}, nil},
		{"ip:10.0.0.0/8:r", []jute.ACL{acl(jute.PermRead, "ip", "10.0.0.0/8")}, nil},
		{"auth::cdrwa", []jute.ACL{acl(jute.PermAll, "auth", "")}, nil},
		{"world:anyone:r,ip:127.0.0.1:wa", []jute.ACL{acl(jute.PermRead, "world", "anyone"), acl(jute.PermWrite|jute.PermAdmin, "ip", "127.0.0.1")}, nil},
		{"world:anyone:", []jute.ACL{acl(0, "world", "anyone")}, nil},
		{"world:anyone:rz", []jute.ACL{acl(jute.PermRead, "world", "anyone")}, []string{"Unknown perm type: z"}},
		{"bogus:acl", nil, []string{"bogus:acl does not have the form scheme:id:perm"}},
		{"nocolon,world:anyone:a", []jute.ACL{acl(jute.PermAdmin, "world", "anyone")}, []string{"nocolon does not have the form scheme:id:perm"}},
	}
	for _, tt := range tests {
		got, warnings := parseACL(tt.in)
		if !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(warnings, tt.warnings) {
			t.Errorf("parseACL(%q) = %v %q, want %v %q", tt.in, got, warnings, tt.want, tt.warnings)
		}
	}
}

func TestPermString(t *testing.T) {
	tests := []struct {
		perms int32
		want  string
	}{
		{jute.PermAll, "cdrwa"},
		{jute.PermRead, "r"},
		{jute.PermRead | jute.PermWrite, "rw"},
		{jute.PermAdmin | jute.PermCreate, "ca"},
		{0, ""},
	}
	for _, tt := range tests {
		if got := permString(tt.perms); got != tt.want {
			t.Errorf("permString(%d) = %q, want %q", tt.perms, got, tt.want)
		}
		if back, _ := parsePerms(tt.want); back != tt.perms {
			t.Errorf("parsePerms(%q) = %d, want %d", tt.want, back, tt.perms)
		}
	}
}

func TestValidatePath(t *testing.T) {
	tests := []struct {
		path string
		seq  bool
		want string
	}{
		{"/", false, ""},
		{"/a/b", false, ""},
		{"/a/", true, ""},
		{"", false, "Path length must be > 0"},
		{"a", false, "Path must start with / character"},
		{"/a/", false, "Path must not end with / character"},
		{"/a//b", false, "empty node name specified @3"},
		{"/a/./b", false, "relative paths not allowed @3"},
		{"/a/../b", false, "relative paths not allowed @4"},
		{"/a/..b", false, ""},
		{"/a\x01", false, "invalid character @2"},
	}
	for _, tt := range tests {
		err := validatePath(tt.path, tt.seq)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("validatePath(%q, %v) = %q, want %q", tt.path, tt.seq, got, tt.want)
		}
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args    []string
		server  string
		timeout time.Duration
		cmd     []string
		wantErr bool
	}{
		{nil, "localhost:2181", 30 * time.Second, nil, false},
		{[]string{"-server", "h:1"}, "h:1", 30 * time.Second, nil, false},
		{[]string{"-server", "h:1", "-timeout", "5000", "get", "-s", "/x"}, "h:1", 5 * time.Second, []string{"get", "-s", "/x"}, false},
		{[]string{"-r", "ls", "/"}, "localhost:2181", 30 * time.Second, []string{"ls", "/"}, false},
		{[]string{"-client-configuration", "zk.props", "-server", "h:2", "ls"}, "h:2", 30 * time.Second, []string{"ls"}, false},
		{[]string{"-server"}, "", 0, nil, true},
		{[]string{"-timeout", "x"}, "", 0, nil, true},
	}
	for _, tt := range tests {
		o, err := parseArgs(tt.args)
		if tt.wantErr {
			if err == nil {
				t.Errorf("parseArgs(%q) succeeded", tt.args)
			}
			continue
		}
		if err != nil || o.server != tt.server || o.timeout != tt.timeout || !reflect.DeepEqual(o.cmd, tt.cmd) {
			t.Errorf("parseArgs(%q) = %+v, %v", tt.args, o, err)
		}
	}
}

func TestFormatEvent(t *testing.T) {
	tests := []struct {
		ev   jute.WatcherEvent
		want string
	}{
		{jute.WatcherEvent{Type: jute.EventNone, State: jute.StateSyncConnected}, "WatchedEvent state:SyncConnected type:None path:null"},
		{jute.WatcherEvent{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/x"}, "WatchedEvent state:SyncConnected type:NodeDataChanged path:/x"},
		{jute.WatcherEvent{Type: jute.EventPersistentWatchRemoved, State: jute.StateSyncConnected, Path: "/w"}, "WatchedEvent state:SyncConnected type:PersistentWatchRemoved path:/w"},
		{jute.WatcherEvent{Type: jute.EventNone, State: jute.StateClosed}, "WatchedEvent state:Closed type:None path:null"},
		{jute.WatcherEvent{Type: jute.EventNone, State: jute.StateExpired}, "WatchedEvent state:Expired type:None path:null"},
	}
	for _, tt := range tests {
		want := "\nWATCHER::\n\n" + tt.want + "\n"
		if got := formatEvent(tt.ev); got != want {
			t.Errorf("formatEvent(%+v) = %q, want %q", tt.ev, got, want)
		}
	}
}

func TestPrintStat(t *testing.T) {
	s := &jute.Stat{Czxid: 0x1a, Mzxid: 0x200000003, Ctime: 0, Mtime: 1700000000000, Version: 2, Cversion: 3,
		Aversion: -1, EphemeralOwner: -1, DataLength: 5, NumChildren: 1, Pzxid: 0xff}
	var b strings.Builder
	printStat(&b, s)
	want := "cZxid = 0x1a\n" +
		"ctime = " + time.UnixMilli(0).Format("Mon Jan 02 15:04:05 MST 2006") + "\n" +
		"mZxid = 0x200000003\n" +
		"mtime = " + time.UnixMilli(1700000000000).Format("Mon Jan 02 15:04:05 MST 2006") + "\n" +
		"pZxid = 0xff\ncversion = 3\ndataVersion = 2\naclVersion = -1\n" +
		"ephemeralOwner = 0xffffffffffffffff\ndataLength = 5\nnumChildren = 1\n"
	if b.String() != want {
		t.Errorf("printStat:\n%s\nwant:\n%s", b.String(), want)
	}
	if got := time.UnixMilli(0).UTC().Format("Mon Jan 02 15:04:05 MST 2006"); got != "Thu Jan 01 00:00:00 UTC 1970" {
		t.Errorf("date layout gives %q", got)
	}
}

func TestKeeperMessage(t *testing.T) {
	tests := []struct {
		code jute.Code
		path string
		want string
	}{
		{jute.CodeNoNode, "/x", "Node does not exist: /x"},
		{jute.CodeNodeExists, "/x", "Node already exists: /x"},
		{jute.CodeNoAuth, "/x", "Insufficient permission : /x"},
		{jute.CodeNotEmpty, "/x", "Node not empty: /x"},
		{jute.CodeBadVersion, "/x", "version No is not valid : /x"},
		{jute.CodeBadArguments, "/zookeeper", "Arguments are not valid : /zookeeper"},
		{jute.CodeNoChildrenForEphemerals, "/e/c", "Ephemerals cannot have children: /e/c"},
		{jute.CodeInvalidACL, "", "Acl is not valid : null"},
		{jute.CodeReconfigDisabled, "", "KeeperErrorCode = Reconfig is disabled"},
		{jute.CodeNoWatcher, "/w", "KeeperErrorCode = No such watcher for /w"},
		{jute.CodeUnimplemented, "/t", "KeeperErrorCode = Unimplemented for /t"},
		{jute.CodeAuthFailed, "/a", "KeeperErrorCode = AuthFailed for /a"},
	}
	for _, tt := range tests {
		if got := keeperMessage(tt.code, tt.path); got != tt.want {
			t.Errorf("keeperMessage(%d, %q) = %q, want %q", tt.code, tt.path, got, tt.want)
		}
	}
}

func TestClientConfig(t *testing.T) {
	tests := []struct {
		data, want string
	}{
		{"", " "},
		{"server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182\nserver.1=127.0.0.1:2888:3888:participant;2181\nversion=100000000",
			"100000000 0.0.0.0:2181,127.0.0.1:2182"},
	}
	for _, tt := range tests {
		if got := clientConfig(tt.data); got != tt.want {
			t.Errorf("clientConfig(%q) = %q, want %q", tt.data, got, tt.want)
		}
	}
}

func TestWatchSet(t *testing.T) {
	ev := func(typ int32, path string) jute.WatcherEvent {
		return jute.WatcherEvent{Type: typ, State: jute.StateSyncConnected, Path: path}
	}
	w := newWatchSet()
	w.add(watchData, "/a")
	w.add(watchChild, "/a")
	w.add(watchExist, "/b")
	w.add(watchRecursive, "/r")
	w.add(watchPersistent, "/p")

	steps := []struct {
		ev   jute.WatcherEvent
		want bool
	}{
		{ev(jute.EventNodeDataChanged, "/a"), true},      // consumes the data watch
		{ev(jute.EventNodeDataChanged, "/a"), false},     // gone
		{ev(jute.EventNodeChildrenChanged, "/a"), true},  // child watch
		{ev(jute.EventNodeCreated, "/b"), true},          // exist watch
		{ev(jute.EventNodeCreated, "/b"), false},         // consumed
		{ev(jute.EventNodeCreated, "/r/x/y"), true},      // recursive covers descendants
		{ev(jute.EventNodeChildrenChanged, "/r"), false}, // recursive never sends child events
		{ev(jute.EventNodeDataChanged, "/p"), true},      // persistent stays
		{ev(jute.EventNodeChildrenChanged, "/p"), true},
		{ev(jute.EventNodeDataChanged, "/p/c"), false}, // persistent is not recursive
		{ev(jute.EventNone, ""), true},
	}
	for i, s := range steps {
		if got := w.fire(s.ev); got != s.want {
			t.Errorf("step %d: fire(%+v) = %v, want %v", i, s.ev, got, s.want)
		}
	}

	w.add(watchData, "/d")
	w.add(watchChild, "/d")
	if got := w.remove("/d", jute.WatcherTypeData, true); !reflect.DeepEqual(got, []int32{jute.EventDataWatchRemoved}) {
		t.Errorf("dry remove data = %v", got)
	}
	if got := w.remove("/d", jute.WatcherTypeAny, false); !reflect.DeepEqual(got, []int32{jute.EventChildWatchRemoved, jute.EventDataWatchRemoved}) {
		t.Errorf("remove any = %v", got)
	}
	if got := w.remove("/d", jute.WatcherTypeAny, false); got != nil {
		t.Errorf("second remove = %v, want none", got)
	}
	if got := w.remove("/r", jute.WatcherTypeData, false); got != nil {
		t.Errorf("remove data of a recursive watch = %v, want none", got)
	}
	if got := w.remove("/r", jute.WatcherTypeAny, false); !reflect.DeepEqual(got, []int32{jute.EventPersistentWatchRemoved}) {
		t.Errorf("remove any of a recursive watch = %v", got)
	}

	sw := w.setWatches(42)
	if sw == nil || sw.RelativeZxid != 42 || !reflect.DeepEqual(sw.PersistentWatches, []string{"/p"}) || len(sw.DataWatches) != 0 {
		t.Errorf("setWatches = %+v", sw)
	}
	if newWatchSet().setWatches(1) != nil {
		t.Error("setWatches of an empty set is not nil")
	}
}

func TestChroot(t *testing.T) {
	split := []struct {
		in, servers, root string
		wantErr           bool
	}{
		{"h:1", "h:1", "", false},
		{"h:1,g:2/app", "h:1,g:2", "/app", false},
		{"h:1/", "h:1", "", false},
		{"h:1/app/", "", "", true},
	}
	for _, tt := range split {
		servers, root, err := splitChroot(tt.in)
		if (err != nil) != tt.wantErr || servers != tt.servers || root != tt.root {
			t.Errorf("splitChroot(%q) = %q, %q, %v", tt.in, servers, root, err)
		}
	}
	c := chroot("/app")
	paths := []struct{ client, server string }{
		{"/", "/app"},
		{"/x", "/app/x"},
		{"/x/y", "/app/x/y"},
	}
	for _, p := range paths {
		if got := c.toServer(p.client); got != p.server {
			t.Errorf("toServer(%q) = %q, want %q", p.client, got, p.server)
		}
		if got := c.toClient(p.server); got != p.client {
			t.Errorf("toClient(%q) = %q, want %q", p.server, got, p.client)
		}
	}
	if got := c.toClient("/application"); got != "/application" {
		t.Errorf("toClient of a path outside the chroot = %q", got)
	}
	if got := chroot("").toServer("/x"); got != "/x" {
		t.Errorf("empty chroot maps /x to %q", got)
	}
	req := &jute.MultiRequest{Ops: []jute.MultiOp{{Type: jute.OpDelete, Req: &jute.DeleteRequest{Path: "/a"}}}}
	c.request(req)
	if got := req.Ops[0].Req.(*jute.DeleteRequest).Path; got != "/app/a" {
		t.Errorf("multi op path = %q", got)
	}
	resp := &jute.GetEphemeralsResponse{Ephemerals: []string{"/app/e", "/app"}}
	c.response(resp)
	if !reflect.DeepEqual(resp.Ephemerals, []string{"/e", "/"}) {
		t.Errorf("ephemerals = %q", resp.Ephemerals)
	}
}

func TestJavaString(t *testing.T) {
	tests := []struct {
		in   []byte
		want string
	}{
		{[]byte("hello"), "hello"},
		{[]byte("héllo"), "héllo"},
		{[]byte{'a', 0xff, 'b'}, "a\uFFFDb"},
		{[]byte{0xff, 0xfe}, "\uFFFD\uFFFD"},
		{[]byte{}, ""},
	}
	for _, tt := range tests {
		if got := javaString(tt.in); got != tt.want {
			t.Errorf("javaString(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCompletion(t *testing.T) {
	tests := []struct {
		word       string
		candidates []string
		want       string
	}{
		{"getAc", []string{"getAcl", "getAllChildrenNumber", "get"}, "l "},
		{"getA", []string{"getAcl", "getAllChildrenNumber"}, ""},
		{"del", []string{"delete", "deleteall"}, "ete"},
		{"/zoo", []string{"/zookeeper", "/app"}, "keeper"},
		{"/a/b", []string{"/a/bc1", "/a/bc2"}, "c"},
		{"/x", []string{"/a"}, ""},
	}
	for _, tt := range tests {
		if got := completion(tt.word, tt.candidates); got != tt.want {
			t.Errorf("completion(%q, %q) = %q, want %q", tt.word, tt.candidates, got, tt.want)
		}
	}
}
