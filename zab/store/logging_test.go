package store

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestHCLoggerLevels(t *testing.T) {
	tests := []struct {
		name     string
		zapLevel zapcore.Level
		setLevel hclog.Level
		log      func(hclog.Logger)
		want     zapcore.Level
		written  bool
	}{
		{"trace maps to debug", zap.DebugLevel, hclog.NoLevel, func(l hclog.Logger) { l.Trace("m") }, zap.DebugLevel, true},
		{"debug", zap.DebugLevel, hclog.NoLevel, func(l hclog.Logger) { l.Debug("m") }, zap.DebugLevel, true},
		{"info", zap.DebugLevel, hclog.NoLevel, func(l hclog.Logger) { l.Info("m") }, zap.InfoLevel, true},
		{"warn", zap.DebugLevel, hclog.NoLevel, func(l hclog.Logger) { l.Warn("m") }, zap.WarnLevel, true},
		{"error", zap.DebugLevel, hclog.NoLevel, func(l hclog.Logger) { l.Error("m") }, zap.ErrorLevel, true},
		{"Log at warn", zap.DebugLevel, hclog.NoLevel, func(l hclog.Logger) { l.Log(hclog.Warn, "m") }, zap.WarnLevel, true},
		{"zap level filters debug", zap.InfoLevel, hclog.NoLevel, func(l hclog.Logger) { l.Debug("m") }, 0, false},
		{"SetLevel filters info", zap.DebugLevel, hclog.Warn, func(l hclog.Logger) { l.Info("m") }, 0, false},
		{"SetLevel passes error", zap.DebugLevel, hclog.Warn, func(l hclog.Logger) { l.Error("m") }, zap.ErrorLevel, true},
		{"SetLevel Off", zap.DebugLevel, hclog.Off, func(l hclog.Logger) { l.Error("m") }, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(tc.zapLevel)
			l := NewHCLogger(zap.New(core))
			l.SetLevel(tc.setLevel)
			tc.log(l)
			entries := logs.All()
			if !tc.written {
				if len(entries) != 0 {
					t.Fatalf("logged %+v", entries)
				}
				return
			}
			if len(entries) != 1 || entries[0].Level != tc.want || entries[0].Message != "m" {
				t.Fatalf("entries = %+v, want one at %v", entries, tc.want)
			}
		})
	}
}

func TestHCLoggerIsLevel(t *testing.T) {
	core, _ := observer.New(zap.InfoLevel)
	l := NewHCLogger(zap.New(core))
	if l.IsDebug() || l.IsTrace() || !l.IsInfo() || !l.IsWarn() || !l.IsError() {
		t.Fatal("Is* disagree with zap's info level")
	}
	if l.GetLevel() != hclog.Info {
		t.Fatalf("GetLevel = %v", l.GetLevel())
	}
	child := l.Named("raft").With("k", 1)
	l.SetLevel(hclog.Error)
	if child.IsWarn() || !child.IsError() || child.GetLevel() != hclog.Error {
		t.Fatal("SetLevel on the parent did not reach a derived logger")
	}
}

func TestHCLoggerFieldsAndNames(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	l := NewHCLogger(zap.New(core)).Named("raft").With("node", "1")
	l = l.Named("snapshot")
	l.Info("done", "index", uint64(7), "took", "3ms", "odd")
	if l.Name() != "raft.snapshot" {
		t.Fatalf("Name = %q", l.Name())
	}
	if got := l.ImpliedArgs(); len(got) != 2 || got[0] != "node" || got[1] != "1" {
		t.Fatalf("ImpliedArgs = %v", got)
	}
	e := logs.All()
	if len(e) != 1 {
		t.Fatalf("entries = %+v", e)
	}
	if e[0].LoggerName != "raft.snapshot" {
		t.Fatalf("zap logger name = %q", e[0].LoggerName)
	}
	ctx := e[0].ContextMap()
	want := map[string]interface{}{"node": "1", "index": uint64(7), "took": "3ms", hclog.MissingKey: "odd"}
	for k, v := range want {
		if ctx[k] != v {
			t.Fatalf("field %s = %v (%T), want %v; all %v", k, ctx[k], ctx[k], v, ctx)
		}
	}
	if r := l.ResetNamed("other"); r.Name() != "other" {
		t.Fatalf("ResetNamed name = %q", r.Name())
	}
}

func TestHCLoggerStandardWriter(t *testing.T) {
	tests := []struct {
		line string
		opts hclog.StandardLoggerOptions
		lv   zapcore.Level
		msg  string
	}{
		{"plain line", hclog.StandardLoggerOptions{}, zap.InfoLevel, "plain line"},
		{"[WARN] raft: slow", hclog.StandardLoggerOptions{InferLevels: true}, zap.WarnLevel, "raft: slow"},
		{"[ERR] bad", hclog.StandardLoggerOptions{InferLevels: true}, zap.ErrorLevel, "bad"},
		{"2026/11/21 [DEBUG] x", hclog.StandardLoggerOptions{InferLevelsWithTimestamp: true}, zap.DebugLevel, "x"},
		{"[WARN] forced", hclog.StandardLoggerOptions{ForceLevel: hclog.Error}, zap.ErrorLevel, "[WARN] forced"},
	}
	for _, tc := range tests {
		core, logs := observer.New(zap.DebugLevel)
		std := NewHCLogger(zap.New(core)).StandardLogger(&tc.opts)
		std.Println(tc.line)
		e := logs.All()
		if len(e) != 1 || e[0].Level != tc.lv || e[0].Message != tc.msg {
			t.Errorf("%q: entries %+v, want %v %q", tc.line, e, tc.lv, tc.msg)
		}
	}
}

func TestPebbleLogger(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	pl := PebbleLogger(zap.New(core))
	pl.Infof("flushed %d tables", 3)
	func() {
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(r.(string), "disk on fire 9") {
				t.Fatalf("Fatalf did not panic with its message: %v", r)
			}
		}()
		pl.Fatalf("disk on fire %d", 9)
	}()
	e := logs.All()
	if len(e) != 2 || e[0].Level != zap.InfoLevel || e[0].Message != "flushed 3 tables" ||
		e[1].Level != zap.ErrorLevel || e[1].Message != "disk on fire 9" {
		t.Fatalf("entries = %+v", e)
	}
}

// TestHCLogFmtArgument: hclog.Fmt values (raft's "initial configuration"
// line) are formatted, not printed as their raw format and arguments.
func TestHCLogFmtArgument(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	NewHCLogger(zap.New(core)).Info("initial configuration", "servers", hclog.Fmt("%+v", []int{1, 2}))
	all := logs.All()
	if len(all) != 1 {
		t.Fatalf("%d entries", len(all))
	}
	if got := all[0].ContextMap()["servers"]; got != "[1 2]" {
		t.Fatalf("servers = %#v, want \"[1 2]\"", got)
	}
}

func TestQuietHCLogger(t *testing.T) {
	for _, tc := range []struct {
		name  string
		zap   zapcore.Level
		msg   string
		level hclog.Level
		want  int // entries written
		at    zapcore.Level
	}{
		{"quiet warn at info", zap.InfoLevel, "election won", hclog.Warn, 0, 0},
		{"quiet warn at debug", zap.DebugLevel, "election won", hclog.Warn, 1, zap.DebugLevel},
		{"quiet trace stays", zap.DebugLevel, "election won", hclog.Trace, 1, zap.DebugLevel},
		{"other warn", zap.InfoLevel, "failed to contact", hclog.Warn, 1, zap.WarnLevel},
	} {
		core, logs := observer.New(tc.zap)
		h := NewQuietHCLogger(zap.New(core), "election won").Named("raft").With("k", "v")
		h.Log(tc.level, tc.msg)
		if logs.Len() != tc.want {
			t.Errorf("%s: %d entries, want %d", tc.name, logs.Len(), tc.want)
			continue
		}
		if tc.want > 0 && logs.All()[0].Level != tc.at {
			t.Errorf("%s: logged at %v, want %v", tc.name, logs.All()[0].Level, tc.at)
		}
	}
}
