package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble"
	"github.com/hashicorp/go-hclog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// PebbleLogger returns a pebble.Logger writing to l. Infof logs at info
// level. Fatalf logs at error level and then panics with the message:
// Pebble calls it only when it cannot continue and expects it not to
// return, and a panic (unlike os.Exit) lets tests and deferred cleanup see
// what happened.
func PebbleLogger(l *zap.Logger) pebble.Logger {
	return pebbleLogger{s: l.WithOptions(zap.AddCallerSkip(1)).Sugar()}
}

// pebbleLogger is a pebble.Logger on zap; fatal, when set, is called
// (with dir, the database's directory) instead of panicking.
type pebbleLogger struct {
	s     *zap.SugaredLogger
	dir   string
	fatal func(file string, err error)
}

func (p pebbleLogger) Infof(format string, args ...interface{}) { p.s.Infof(format, args...) }

func (p pebbleLogger) Fatalf(format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	if p.fatal != nil {
		p.fatal(p.dir, errors.New(msg))
	}
	p.s.Error(msg)
	panic("store: pebble fatal: " + msg)
}

// NewHCLogger returns an hclog.Logger (what hashicorp/raft logs through)
// writing to l. Levels map Trace→Debug, Debug→Debug, Info→Info, Warn→Warn,
// Error→Error; the key/value args become zap fields; Named appends to the
// zap logger name with a dot, as hclog does; SetLevel filters on top of l's
// own level and is shared with every logger derived through With/Named.
func NewHCLogger(l *zap.Logger) hclog.Logger {
	lv := new(atomic.Int32)
	lv.Store(int32(hclog.NoLevel))
	return &hcLogger{z: l.WithOptions(zap.AddCallerSkip(2)), level: lv}
}

// NewQuietHCLogger is NewHCLogger with the messages in quiet logged at
// Debug whatever their level: a standalone member's raft elects its only
// voter on every start, and "heartbeat timeout reached, starting election"
// at WARN reads as trouble to an operator when it is routine.
func NewQuietHCLogger(l *zap.Logger, quiet ...string) hclog.Logger {
	h := NewHCLogger(l).(*hcLogger)
	h.quiet = make(map[string]bool, len(quiet))
	for _, m := range quiet {
		h.quiet[m] = true
	}
	return h
}

type hcLogger struct {
	z       *zap.Logger
	name    string
	implied []interface{}
	level   *atomic.Int32   // hclog.Level; NoLevel defers to z
	quiet   map[string]bool // messages logged at Debug; read-only
}

var _ hclog.Logger = (*hcLogger)(nil)

func zapLevel(l hclog.Level) zapcore.Level {
	switch l {
	case hclog.Trace, hclog.Debug:
		return zapcore.DebugLevel
	case hclog.Warn:
		return zapcore.WarnLevel
	case hclog.Error:
		return zapcore.ErrorLevel
	default:
		return zapcore.InfoLevel
	}
}

// enabled reports whether a message at level would be written.
func (h *hcLogger) enabled(level hclog.Level) bool {
	set := hclog.Level(h.level.Load())
	if set == hclog.Off {
		return false
	}
	if set != hclog.NoLevel && level < set {
		return false
	}
	return h.z.Core().Enabled(zapLevel(level))
}

// fields turns hclog's alternating key/value args into zap fields, as hclog
// does: a trailing lone value is keyed EXTRA_VALUE_AT_END.
func fields(args []interface{}) []zap.Field {
	fs := make([]zap.Field, 0, (len(args)+1)/2)
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			fs = append(fs, zap.Any(hclog.MissingKey, args[i]))
			break
		}
		key, ok := args[i].(string)
		if !ok {
			key = fmt.Sprint(args[i])
		}
		v := args[i+1]
		if f, ok := v.(hclog.Format); ok && len(f) > 0 {
			// hclog.Fmt("%+v", x): format it as hclog would.
			if format, ok := f[0].(string); ok {
				v = fmt.Sprintf(format, f[1:]...)
			}
		}
		fs = append(fs, zap.Any(key, v))
	}
	return fs
}

func (h *hcLogger) Log(level hclog.Level, msg string, args ...interface{}) {
	if h.quiet[msg] && level > hclog.Debug {
		level = hclog.Debug
	}
	if !h.enabled(level) {
		return
	}
	if ce := h.z.Check(zapLevel(level), msg); ce != nil {
		ce.Write(fields(args)...)
	}
}

func (h *hcLogger) Trace(msg string, args ...interface{}) { h.Log(hclog.Trace, msg, args...) }
func (h *hcLogger) Debug(msg string, args ...interface{}) { h.Log(hclog.Debug, msg, args...) }
func (h *hcLogger) Info(msg string, args ...interface{})  { h.Log(hclog.Info, msg, args...) }
func (h *hcLogger) Warn(msg string, args ...interface{})  { h.Log(hclog.Warn, msg, args...) }
func (h *hcLogger) Error(msg string, args ...interface{}) { h.Log(hclog.Error, msg, args...) }

func (h *hcLogger) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hcLogger) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hcLogger) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hcLogger) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hcLogger) IsError() bool { return h.enabled(hclog.Error) }

func (h *hcLogger) ImpliedArgs() []interface{} { return h.implied }

func (h *hcLogger) With(args ...interface{}) hclog.Logger {
	c := *h
	c.implied = append(append([]interface{}(nil), h.implied...), args...)
	c.z = h.z.With(fields(args)...)
	return &c
}

func (h *hcLogger) Name() string { return h.name }

func (h *hcLogger) Named(name string) hclog.Logger {
	c := *h
	if h.name != "" {
		c.name = h.name + "." + name
	} else {
		c.name = name
	}
	c.z = h.z.Named(name)
	return &c
}

// ResetNamed replaces the name. zap can only append to a name, so the
// underlying zap logger keeps its original name and gains the new one.
func (h *hcLogger) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	c.z = h.z.Named(name)
	return &c
}

func (h *hcLogger) SetLevel(level hclog.Level) { h.level.Store(int32(level)) }

// GetLevel returns the level set with SetLevel or, if none, the hclog level
// matching the zap logger's.
func (h *hcLogger) GetLevel() hclog.Level {
	if set := hclog.Level(h.level.Load()); set != hclog.NoLevel {
		return set
	}
	switch zapcore.LevelOf(h.z.Core()) {
	case zapcore.DebugLevel:
		return hclog.Debug
	case zapcore.InfoLevel:
		return hclog.Info
	case zapcore.WarnLevel:
		return hclog.Warn
	case zapcore.InvalidLevel:
		return hclog.Off
	default:
		return hclog.Error
	}
}

func (h *hcLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hcLogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	if opts == nil {
		opts = &hclog.StandardLoggerOptions{}
	}
	return &stdWriter{h: h, opts: *opts}
}

// stdWriter turns standard-library log lines into hclog calls, reading a
// "[LEVEL]" prefix when InferLevels is set.
type stdWriter struct {
	h    *hcLogger
	opts hclog.StandardLoggerOptions
}

func (w *stdWriter) Write(p []byte) (int, error) {
	msg := string(bytes.TrimRight(p, " \t\n"))
	level := hclog.Info
	if w.opts.ForceLevel != hclog.NoLevel {
		level = w.opts.ForceLevel
	} else if w.opts.InferLevels || w.opts.InferLevelsWithTimestamp {
		if w.opts.InferLevelsWithTimestamp {
			if i := strings.Index(msg, "["); i > 0 {
				msg = msg[i:]
			}
		}
		for _, c := range []struct {
			tag string
			lv  hclog.Level
		}{{"[TRACE]", hclog.Trace}, {"[DEBUG]", hclog.Debug}, {"[INFO]", hclog.Info},
			{"[WARN]", hclog.Warn}, {"[ERROR]", hclog.Error}, {"[ERR]", hclog.Error}} {
			if strings.HasPrefix(msg, c.tag) {
				level = c.lv
				msg = strings.TrimSpace(msg[len(c.tag):])
				break
			}
		}
	}
	w.h.Log(level, msg)
	return len(p), nil
}
