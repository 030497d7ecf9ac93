package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

func TestLogFileSettings(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		cfg     string
		env     map[string]string
		want    logFile
		ok      bool
		wantErr bool
	}{
		{name: "none"},
		{name: "ZOO_LOG_DIR", env: map[string]string{"ZOO_LOG_DIR": "/var/log/zk"},
			want: logFile{"/var/log/zk/zkd.log", 10 << 20, 10}, ok: true},
		{name: "ZOO_LOG_FILE", env: map[string]string{"ZOO_LOG_DIR": "/l", "ZOO_LOG_FILE": "zookeeper.log"},
			want: logFile{"/l/zookeeper.log", 10 << 20, 10}, ok: true},
		{name: "zoo.cfg wins", cfg: "zkd.log.dir=/cfg\nzkd.log.maxFileSize=2\nzkd.log.maxBackupIndex=3\n",
			env: map[string]string{"ZOO_LOG_DIR": "/env"}, want: logFile{"/cfg/zkd.log", 2 << 20, 3}, ok: true},
		{name: "no backups", cfg: "zkd.log.dir=/cfg\nzkd.log.maxBackupIndex=0\n", want: logFile{"/cfg/zkd.log", 10 << 20, 0}, ok: true},
		{name: "bad size", cfg: "zkd.log.dir=/cfg\nzkd.log.maxFileSize=0\n", wantErr: true},
		{name: "bad number", cfg: "zkd.log.dir=/cfg\nzkd.log.maxBackupIndex=x\n", wantErr: true},
	}
	for i, tc := range tests {
		p := filepath.Join(dir, "zoo"+string(rune('a'+i))+".cfg")
		if err := os.WriteFile(p, []byte("dataDir="+dir+"\n"+tc.cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := parseZooCfg(p, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		lf, ok, err := logFileSettings(c, func(k string) string { return tc.env[k] })
		if (err != nil) != tc.wantErr || ok != tc.ok || lf != tc.want {
			t.Errorf("%s: %+v %v %v, want %+v %v (error %v)", tc.name, lf, ok, err, tc.want, tc.ok, tc.wantErr)
		}
	}
}

func TestRotatingWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "zkd.log")
	w, err := openRotating(logFile{Path: path, MaxSize: 100, MaxBackups: 2})
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", 39) + "\n" // 40 bytes: two fit in a file
	for i := range 7 {
		if _, err := w.Write([]byte(string(rune('a'+i)) + line[1:])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	// a b | c d | e f | g: the oldest (a b) dropped past two backups.
	for name, want := range map[string]string{"zkd.log": "g", "zkd.log.1": "ef", "zkd.log.2": "cd"} {
		b, err := os.ReadFile(filepath.Join(dir, "sub", name))
		if err != nil {
			t.Fatal(err)
		}
		var first []byte
		for l := range strings.Lines(string(b)) {
			first = append(first, l[0])
		}
		if string(first) != want {
			t.Errorf("%s holds lines %q, want %q", name, first, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "zkd.log.3")); !os.IsNotExist(err) {
		t.Errorf("zkd.log.3 exists (%v): only two backups are kept", err)
	}
	// Reopening appends to the current file and counts its size.
	w2, err := openRotating(logFile{Path: path, MaxSize: 100, MaxBackups: 2})
	if err != nil {
		t.Fatal(err)
	}
	if w2.n != 40 {
		t.Errorf("reopened size %d, want 40", w2.n)
	}
}

// TestIntegration_LogDir: with ZOO_LOG_DIR set, as zkServer.sh sets it,
// zkd writes its log, readiness line included, to ZOO_LOG_DIR/zkd.log and
// nothing to stderr.
func TestIntegration_LogDir(t *testing.T) {
	logDir := filepath.Join(t.TempDir(), "logs")
	s := zkproc.StartZkd(t, zkproc.Options{Env: []string{"ZOO_LOG_DIR=" + logDir}})
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(logDir, "zkd.log"))
		if strings.Contains(string(b), "\t"+readyMessage+"\t") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no readiness line in %s/zkd.log:\n%s", logDir, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, _ := os.ReadFile(s.LogPath); strings.Contains(string(out), readyMessage) {
		t.Errorf("zkd logged to stderr too:\n%s", out)
	}
}
