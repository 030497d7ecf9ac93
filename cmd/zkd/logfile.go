package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logFile is where zkd writes its log when an operator asked for a file:
// zoo.cfg's zkd.log.dir (or -Dzookeeper.zkd.log.dir), else the ZOO_LOG_DIR
// environment variable that zkServer.sh and ZooKeeper's own scripts set.
// The file is ZOO_LOG_FILE (default zkd.log) in that directory, rotated as
// ZooKeeper's log4j setup rotates its file: at zkd.log.maxFileSize
// megabytes (default 10), keeping zkd.log.maxBackupIndex old files
// (default 10) as zkd.log.1 (newest) … zkd.log.N.
type logFile struct {
	Path       string
	MaxSize    int64 // bytes
	MaxBackups int
}

// logFileSettings reads the log file settings; ok is false when the log
// goes to stderr only.
func logFileSettings(c *zooCfg, env func(string) string) (lf logFile, ok bool, err error) {
	dir, set := c.prop("zkd.log.dir")
	if !set || dir == "" {
		dir = env("ZOO_LOG_DIR")
	}
	if dir == "" {
		return lf, false, nil
	}
	name := env("ZOO_LOG_FILE")
	if name == "" {
		name = "zkd.log"
	}
	mb, err := c.propInt("zkd.log.maxFileSize", 10)
	if err != nil {
		return lf, false, err
	}
	backups, err := c.propInt("zkd.log.maxBackupIndex", 10)
	if err != nil {
		return lf, false, err
	}
	if mb <= 0 || backups < 0 {
		return lf, false, fmt.Errorf("zkd: zkd.log.maxFileSize=%d and zkd.log.maxBackupIndex=%d: want a positive size and a count ≥ 0", mb, backups)
	}
	return logFile{Path: filepath.Join(dir, name), MaxSize: mb << 20, MaxBackups: int(backups)}, true, nil
}

// rotatingWriter appends to a log file and rotates it once a write would
// take it past MaxSize. It implements zapcore.WriteSyncer; writes are
// serialized.
type rotatingWriter struct {
	cfg logFile
	mu  sync.Mutex
	f   *os.File
	n   int64 // bytes in f
}

// openRotating opens (creating the directory and the file) lf for
// appending.
func openRotating(lf logFile) (*rotatingWriter, error) {
	if err := os.MkdirAll(filepath.Dir(lf.Path), 0o755); err != nil {
		return nil, fmt.Errorf("zkd: log directory: %w", err)
	}
	w := &rotatingWriter{cfg: lf}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *rotatingWriter) open() error {
	f, err := os.OpenFile(w.cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("zkd: log file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("zkd: log file: %w", err)
	}
	w.f, w.n = f, st.Size()
	return nil
}

// Write appends p, rotating first when p would not fit. A single write
// larger than MaxSize still goes whole into a fresh file.
func (w *rotatingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n > 0 && w.n+int64(len(p)) > w.cfg.MaxSize {
		if err := w.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := w.f.Write(p)
	w.n += int64(n)
	return n, err
}

// rotate shifts zkd.log.i to zkd.log.i+1 (dropping the oldest), moves the
// current file to zkd.log.1 and opens a new one.
func (w *rotatingWriter) rotate() error {
	w.f.Close()
	name := func(i int) string { return w.cfg.Path + "." + strconv.Itoa(i) }
	if w.cfg.MaxBackups == 0 {
		os.Remove(w.cfg.Path)
	} else {
		os.Remove(name(w.cfg.MaxBackups))
		for i := w.cfg.MaxBackups - 1; i >= 1; i-- {
			os.Rename(name(i), name(i+1)) // a missing backup is no error
		}
		if err := os.Rename(w.cfg.Path, name(1)); err != nil {
			return fmt.Errorf("zkd: rotate log file: %w", err)
		}
	}
	return w.open()
}

// Sync flushes the file to disk.
func (w *rotatingWriter) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Sync()
}

// toLogFile returns log writing to the log file instead of stderr when
// one is configured (see logFile), else log itself.
func toLogFile(log *zap.Logger, c *zooCfg, level, format string) (*zap.Logger, error) {
	lf, ok, err := logFileSettings(c, os.Getenv)
	if !ok || err != nil {
		return log, err
	}
	w, err := openRotating(lf)
	if err != nil {
		return nil, err
	}
	zc, err := zapConfig(level, format)
	if err != nil {
		return nil, err
	}
	enc := zapcore.NewConsoleEncoder(zc.EncoderConfig)
	if zc.Encoding == "json" {
		enc = zapcore.NewJSONEncoder(zc.EncoderConfig)
	}
	return log.WithOptions(zap.WrapCore(func(zapcore.Core) zapcore.Core {
		return zapcore.NewCore(enc, w, zc.Level)
	})), nil
}
