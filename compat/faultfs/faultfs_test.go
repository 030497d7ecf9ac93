package faultfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mount mounts a fresh faultfs for the test and returns it with its
// backing directory.
func mount(t *testing.T) (*FS, string) {
	t.Helper()
	backing, mnt := t.TempDir(), t.TempDir()
	f, err := Mount(backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f, backing
}

// writeFile writes data to name on the mount; sync says whether to fsync
// the file before closing it.
func writeFile(t *testing.T, name string, data []byte, sync bool) {
	t.Helper()
	fh, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.Write(data); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	if sync {
		if err := fh.Sync(); err != nil {
			t.Fatalf("fsync %s: %v", name, err)
		}
	}
}

// syncDir fsyncs the directory dir.
func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatalf("fsync dir %s: %v", dir, err)
	}
}

func TestLoopback(t *testing.T) {
	f, backing := mount(t)
	p := filepath.Join(f.Dir(), "sub", "a")
	if err := os.Mkdir(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, []byte("hello"), true)
	if err := os.Rename(p, p+".renamed"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(backing, "sub", "a.renamed"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("backing file after rename = %q, %v; want hello", got, err)
	}
	if f.Injected() != 0 {
		t.Fatalf("Injected = %d with no fault set", f.Injected())
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name  string
		set   func(f *FS)
		check func(t *testing.T, fh *os.File)
	}{{
		name: "fsync EIO",
		set:  func(f *FS) { f.SetFsyncError(syscall.EIO) },
		check: func(t *testing.T, fh *os.File) {
			if _, err := fh.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			if err := fh.Sync(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("fsync = %v, want EIO", err)
			}
			if err := syscall.Fdatasync(int(fh.Fd())); !errors.Is(err, syscall.EIO) {
				t.Fatalf("fdatasync = %v, want EIO", err)
			}
		},
	}, {
		name: "write EIO",
		set:  func(f *FS) { f.SetWriteError(syscall.EIO) },
		check: func(t *testing.T, fh *os.File) {
			if _, err := fh.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.EIO) {
				t.Fatalf("write = %v, want EIO", err)
			}
			if err := fh.Sync(); err != nil {
				t.Fatalf("fsync = %v, want success (only writes fail)", err)
			}
		},
	}, {
		name: "ENOSPC after 10 bytes",
		set:  func(f *FS) { f.SetSpaceLeft(10) },
		check: func(t *testing.T, fh *os.File) {
			if _, err := fh.WriteAt(make([]byte, 8), 0); err != nil {
				t.Fatalf("first 8 bytes: %v", err)
			}
			if _, err := fh.WriteAt(make([]byte, 8), 8); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("8 more bytes = %v, want ENOSPC", err)
			}
			if _, err := fh.WriteAt([]byte("overwrite"), 0); err != nil {
				t.Fatalf("overwriting allocated bytes on a full disk: %v", err)
			}
			if err := fh.Truncate(100); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("growing truncate = %v, want ENOSPC", err)
			}
			if _, err := fh.WriteAt(make([]byte, 2), 8); err != nil {
				t.Fatalf("last 2 bytes: %v", err)
			}
			_, err := os.Create(filepath.Join(filepath.Dir(fh.Name()), "new"))
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("create on a full disk = %v, want ENOSPC", err)
			}
		},
	}, {
		name: "fsync delayed 300ms",
		set:  func(f *FS) { f.SetFsyncDelay(300 * time.Millisecond) },
		check: func(t *testing.T, fh *os.File) {
			start := time.Now()
			if err := fh.Sync(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d < 300*time.Millisecond {
				t.Fatalf("fsync took %v, want >= 300ms", d)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := mount(t)
			fh, err := os.OpenFile(filepath.Join(f.Dir(), "file"), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			tc.set(f)
			tc.check(t, fh)
			if f.Injected() == 0 {
				t.Fatal("Injected = 0 after a fault was answered")
			}
			f.Clear()
			if _, err := fh.WriteAt(make([]byte, 64), 0); err != nil {
				t.Fatalf("write after Clear: %v", err)
			}
			start := time.Now()
			if err := fh.Sync(); err != nil {
				t.Fatalf("fsync after Clear: %v", err)
			}
			if d := time.Since(start); d > 250*time.Millisecond {
				t.Fatalf("fsync after Clear took %v", d)
			}
		})
	}
}

func TestFilter(t *testing.T) {
	f, _ := mount(t)
	f.SetFilter(func(rel string) bool { return strings.HasSuffix(rel, ".wal") })
	f.SetFsyncError(syscall.EIO)
	writeFile(t, filepath.Join(f.Dir(), "other"), []byte("x"), true)
	fh, err := os.Create(filepath.Join(f.Dir(), "1.wal"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := fh.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync of a filtered file = %v, want EIO", err)
	}
}

func TestPowerCut(t *testing.T) {
	f, backing := mount(t)
	dir := f.Dir()
	read := func(name string) (string, bool) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			return "", false
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(b), true
	}
	// A file that existed before the mount: never tracked until written.
	if err := os.WriteFile(filepath.Join(backing, "old"), []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "synced"), []byte("hello"), true)
	writeFile(t, filepath.Join(dir, "never"), []byte("gone"), false)
	writeFile(t, filepath.Join(dir, "unfiltered"), []byte("kept"), false)
	f.SetFilter(func(rel string) bool { return rel != "unfiltered" })
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "d", "dirsynced"), []byte("data not synced"), false)
	syncDir(t, filepath.Join(dir, "d"))

	// Unsynced changes to synced files: overwrite, append, truncate.
	fh, err := os.OpenFile(filepath.Join(dir, "synced"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("HELLO, world"), 0); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	fh, err = os.OpenFile(filepath.Join(dir, "old"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("abcdefghijklmnop"), 2); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	// Overwritten through a write-only descriptor (as Java's
	// FileOutputStream opens files).
	writeFile(t, filepath.Join(dir, "wronly"), []byte("synced"), true)
	fh, err = os.OpenFile(filepath.Join(dir, "wronly"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write([]byte(" and appended")); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("SYNCED"), 0); err == nil {
		t.Log("pwrite with O_APPEND accepted")
	}
	fh.Close()
	// A synced rename of a synced file keeps its synced content.
	writeFile(t, filepath.Join(dir, "tmp"), []byte("renamed"), true)
	if err := os.Rename(filepath.Join(dir, "tmp"), filepath.Join(dir, "final")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "final"), []byte("R"), false)

	if got, _ := read("synced"); got != "HELLO, world" {
		t.Fatalf("before the cut synced = %q", got)
	}
	if err := f.PowerCut(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"synced":      "hello",
		"old":         "0123456789",
		"d/dirsynced": "",
		"final":       "renamed",
		"unfiltered":  "kept",
		"wronly":      "synced",
	}
	for name, w := range want {
		got, ok := read(name)
		if !ok || got != w {
			t.Errorf("after the cut %s = %q (exists %v), want %q", name, got, ok, w)
		}
	}
	if _, ok := read("never"); ok {
		t.Error("a file never fsynced, in a directory never fsynced, survived the cut")
	}
	// What was synced after the cut is kept by the next one.
	writeFile(t, filepath.Join(dir, "synced"), []byte("HELLO"), true)
	if err := f.PowerCut(); err != nil {
		t.Fatal(err)
	}
	if got, _ := read("synced"); !bytes.Equal([]byte(got), []byte("HELLO")) {
		t.Fatalf("after a synced rewrite and a second cut synced = %q, want HELLO", got)
	}
}
