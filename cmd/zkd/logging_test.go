package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestLogSettings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("dataDir="+dir+"\nclientPort=2181\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name                string
		cfg                 string
		env                 []string
		level, format       string
		levelSet, formatSet bool
		wantLevel, wantFmt  string
	}{
		{"defaults", "", nil, "info", "console", false, false, "info", "console"},
		{"zoo.cfg keys", "zkd.log.level=debug\nzkd.log.format=json\n", nil, "info", "console", false, false, "debug", "json"},
		{"flags win", "zkd.log.level=debug\nzkd.log.format=json\n", nil, "warn", "console", true, true, "warn", "console"},
		{"one flag", "zkd.log.level=error\nzkd.log.format=json\n", nil, "warn", "console", false, true, "error", "console"},
		{"jvm flag", "", []string{"SERVER_JVMFLAGS=-Dzookeeper.zkd.log.level=warn"}, "info", "console", false, false, "warn", "console"},
	}
	for i, tc := range tests {
		c, err := parseZooCfg(write("zoo"+string(rune('a'+i))+".cfg", tc.cfg), tc.env)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		l, f := logSettings(c, tc.level, tc.format, tc.levelSet, tc.formatSet)
		if l != tc.wantLevel || f != tc.wantFmt {
			t.Errorf("%s: logSettings = %q, %q; want %q, %q", tc.name, l, f, tc.wantLevel, tc.wantFmt)
		}
		if _, err := newLogger(l, f); err != nil {
			t.Errorf("%s: newLogger: %v", tc.name, err)
		}
	}
	if _, err := newLogger("loud", "console"); err == nil {
		t.Error("newLogger accepted level loud")
	}
	if _, err := newLogger("info", "xml"); err == nil {
		t.Error("newLogger accepted format xml")
	}
}

func TestSlowRequestKey(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		line string
		want time.Duration
	}{{"", time.Second}, {"zkd.slowRequestMs=250\n", 250 * time.Millisecond}, {"zkd.slowRequestMs=0\n", 0}} {
		p := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(p, []byte("dataDir="+dir+"\nclientPort=2181\n"+tc.line), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := parseZooCfg(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _, sc, err := configs(c, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		if sc.SlowRequestThreshold != tc.want {
			t.Errorf("%q: SlowRequestThreshold = %v, want %v", tc.line, sc.SlowRequestThreshold, tc.want)
		}
	}
}
