package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// ErrCorrupt is matched (errors.Is) by every error of this package saying
// that data on disk is corrupt: a *CorruptError, and Pebble's own
// corruption errors (a bad sstable block, MANIFEST record or snapshot
// checksum) as Open and the store's reads return them.
var ErrCorrupt = errors.New("store: corrupt")

// CorruptError reports a damaged file of the Pebble database.
type CorruptError struct {
	// Path is the file.
	Path string
	// Offset is the byte offset of the damage in the file, or -1 when
	// unknown.
	Offset int64
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *CorruptError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("store: %s is corrupt: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("store: %s is corrupt at offset %d: %s", e.Path, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// corruptErr marks err, a corruption Pebble or the store found, as
// ErrCorrupt.
type corruptErr struct{ err error }

func (e *corruptErr) Error() string        { return e.err.Error() }
func (e *corruptErr) Unwrap() error        { return e.err }
func (e *corruptErr) Is(target error) bool { return target == ErrCorrupt }

// openError marks an error of pebble.Open as ErrCorrupt when Pebble found
// the files inconsistent: a corruption error, or its check that every
// table the MANIFEST lists is there with the size it records (whose
// error Pebble 1.1 builds as text, so it is matched by its words: "object
// size mismatch", "unknown to the objstorage provider" for a missing
// one). Other errors (the operating system's, a database of a newer
// Pebble) are returned as they are.
func openError(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "object size mismatch") || strings.Contains(msg, "unknown to the objstorage provider") {
		return &corruptErr{err}
	}
	return markCorrupt(err)
}

// markCorrupt returns err marked as ErrCorrupt if it says data on disk is
// corrupt (Pebble's corruption errors, a snapshot failing its checksum),
// else err.
func markCorrupt(err error) error {
	if err == nil || errors.Is(err, ErrCorrupt) {
		return err
	}
	if pebble.IsCorruptionError(err) || errors.Is(err, ErrSnapshotCorrupt) {
		return &corruptErr{err}
	}
	return err
}

// Pebble's write-ahead log and MANIFEST format (package pebble/record):
// 32 KiB blocks of chunks that never cross a block; a chunk is a masked CRC-32C (4
// bytes), a length (2), a type (1), for the recyclable types 5-8 the low
// 32 bits of the log number (4), then the payload. The CRC covers the
// type, log number and payload.
const (
	walBlockSize        = 32 << 10
	walLegacyHeader     = 7
	walRecyclableHeader = 11
	walSectorSize       = 512
)

var walCRCTable = crc32.MakeTable(crc32.Castagnoli)

// recordLog is the chunk format of one file: a WAL (recyclable chunks
// carrying the low 32 bits of its log number) or a MANIFEST (legacy
// chunks).
type recordLog struct {
	recyclable bool
	logNum     uint32
	// appendOnly: the file is only ever appended to, never preallocated
	// nor reused (the MANIFEST), so a crash cannot leave a whole chunk of
	// other bytes at its end: a bad last chunk that is all there, with
	// no zero sector, was changed too.
	appendOnly bool
}

// header is the size of a chunk header.
func (f recordLog) header() int {
	if f.recyclable {
		return walRecyclableHeader
	}
	return walLegacyHeader
}

// chunkOK reports whether a valid chunk of this file starts at off of b
// (whose block ends at blockEnd), and its total size.
func (f recordLog) chunkOK(b []byte, off, blockEnd int) (int, bool) {
	h := f.header()
	if off+h > blockEnd {
		return 0, false
	}
	typ := b[off+6]
	if f.recyclable && (typ < 5 || typ > 8 || binary.LittleEndian.Uint32(b[off+7:]) != f.logNum) {
		return 0, false
	}
	if !f.recyclable && (typ < 1 || typ > 4) {
		return 0, false
	}
	end := off + h + int(binary.LittleEndian.Uint16(b[off+4:]))
	if end > blockEnd {
		return 0, false
	}
	c := crc32.Update(0, walCRCTable, b[off+6:end])
	if binary.LittleEndian.Uint32(b[off:]) != (c>>15|c<<17)+0xa282ead8 {
		return 0, false
	}
	return end - off, true
}

// check refuses the file at path, holding b, when a chunk in it is bad and
// a valid chunk of the same file follows.
//
// Pebble stops replaying its newest WAL, and reading its MANIFEST, at the
// first bad chunk and takes the rest for a torn tail, silently: a byte
// flipped in a synced record would drop it and every record after it
// (raft's term and vote, snapshots; for the MANIFEST, the tables flushed
// since, whose WALs are gone). A torn tail is what the last unsynced
// writes left, and an unwritten sector reads as zeros (Pebble preallocates
// its WAL; an append not made is zeros or missing). A bad chunk followed
// by valid chunks of the same file, with no sector in it zero from the
// chunk on, was written whole and then changed: corruption. (In a
// recycled WAL an unwritten sector holds the old log's bytes instead; a
// crash that wrote a later block of the tail but not an earlier one is
// then refused too: the safe side.)
func (f recordLog) check(path string, b []byte) error {
	h := f.header()
	// Walk the chunks as Pebble's replay does, to the first that is not a
	// valid chunk of this file.
	off := 0
	for off < len(b) {
		blockEnd := min((off/walBlockSize+1)*walBlockSize, len(b))
		if off+walLegacyHeader > blockEnd || (off+h > blockEnd && isZeroBytes(b[off:blockEnd])) {
			off = blockEnd // padding at the end of a block
			continue
		}
		n, ok := f.chunkOK(b, off, blockEnd)
		if !ok {
			break
		}
		off += n
	}
	if off >= len(b) {
		return nil
	}
	bad := off
	// A valid chunk of this file after it: right after the bad chunk (if
	// its length is right), or at the start of any later block (every
	// block starts with a chunk).
	next := -1
	blockEnd := min((bad/walBlockSize+1)*walBlockSize, len(b))
	chunkEnd := blockEnd
	if bad+h <= blockEnd {
		chunkEnd = min(bad+h+int(binary.LittleEndian.Uint16(b[bad+4:])), blockEnd)
		if chunkEnd < blockEnd {
			if _, ok := f.chunkOK(b, chunkEnd, blockEnd); ok {
				next = chunkEnd
			}
		}
	}
	for blk := blockEnd; next < 0 && blk < len(b); blk += walBlockSize {
		if _, ok := f.chunkOK(b, blk, min(blk+walBlockSize, len(b))); ok {
			next = blk
		}
	}
	whole := bad+h <= blockEnd && bad+h+int(binary.LittleEndian.Uint16(b[bad+4:])) <= blockEnd
	if next < 0 && !(f.appendOnly && whole) {
		return nil // the end of the file, or a torn tail: Pebble's reading
	}
	// Torn: some sector the bad chunk covers is zero from the chunk on.
	for s := bad; s < chunkEnd; s = (s/walSectorSize + 1) * walSectorSize {
		e := min((s/walSectorSize+1)*walSectorSize, len(b))
		if isZeroBytes(b[s:e]) {
			return nil
		}
	}
	if next < 0 {
		return &CorruptError{Path: path, Offset: int64(bad), Reason: "its last chunk is there whole but fails its checksum, " +
			"which an append cut short by a crash does not leave: it was changed on disk (corruption, not a torn write), and Pebble would silently drop it"}
	}
	return &CorruptError{Path: path, Offset: int64(bad), Reason: fmt.Sprintf(
		"a bad chunk there, and a valid chunk of the same file follows at offset %d: "+
			"written records were changed on disk (corruption, not a torn write), and Pebble would silently drop them and every record after them", next)}
}

// readFile reads the file at path on fs.
func readFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	b, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", path, err)
	}
	return b, nil
}

// checkLogs checks, before Pebble opens the database in dir, the two
// files Pebble reads up to their first bad record without a word: the
// newest WAL and the MANIFEST that CURRENT names (see recordLog.check).
func checkLogs(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return nil // no directory yet: Pebble creates it
	}
	var (
		newest    uint64
		newestLog string
	)
	for _, n := range names {
		if num, ok := strings.CutSuffix(n, ".log"); ok {
			if v, err := strconv.ParseUint(num, 10, 64); err == nil && (newestLog == "" || v > newest) {
				newest, newestLog = v, n
			}
		}
	}
	if newestLog != "" {
		path := fs.PathJoin(dir, newestLog)
		b, err := readFile(fs, path)
		if err != nil {
			return err
		}
		if err := (recordLog{recyclable: true, logNum: uint32(newest)}).check(path, b); err != nil {
			return err
		}
	}
	current, err := readFile(fs, fs.PathJoin(dir, "CURRENT"))
	if err != nil {
		return nil // a new database, or Pebble's own error at open
	}
	manifest := strings.TrimSpace(string(current))
	if !strings.HasPrefix(manifest, "MANIFEST-") || strings.ContainsAny(manifest, "/\\") {
		return nil // Pebble refuses it at open
	}
	path := fs.PathJoin(dir, manifest)
	b, err := readFile(fs, path)
	if err != nil {
		return nil // Pebble's own error at open
	}
	return recordLog{appendOnly: true}.check(path, b)
}

// isZeroBytes reports whether b holds only zeros.
func isZeroBytes(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// repairOptions checks the newest OPTIONS file of the Pebble database in
// dir and rewrites it from popts if it does not parse or names another
// comparer or merger than Pebble's defaults (the only ones zkd uses).
// The file is derived: it records the options zkd passes at every open,
// and Pebble reads back only those names and whether older WALs must end
// cleanly (true for every database zkd creates), so rewriting it loses
// nothing. Without this, a changed byte there stops Pebble from opening.
func repairOptions(fs vfs.FS, dir string, popts *pebble.Options, log func(path string, err error)) error {
	names, err := fs.List(dir)
	if err != nil {
		return nil
	}
	newest := ""
	for _, n := range names {
		if strings.HasPrefix(n, "OPTIONS-") && n > newest {
			newest = n
		}
	}
	if newest == "" {
		return nil
	}
	path := fs.PathJoin(dir, newest)
	f, err := fs.Open(path)
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	b, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("store: read %s: %w", path, err)
	}
	var parsed pebble.Options
	perr := parsed.Parse(string(b), &pebble.ParseHooks{
		NewComparer: func(name string) (*pebble.Comparer, error) {
			if name != pebble.DefaultComparer.Name {
				return nil, fmt.Errorf("comparer %q is not Pebble's default %q", name, pebble.DefaultComparer.Name)
			}
			return pebble.DefaultComparer, nil
		},
		NewMerger: func(name string) (*pebble.Merger, error) {
			if name != pebble.DefaultMerger.Name {
				return nil, fmt.Errorf("merger %q is not Pebble's default %q", name, pebble.DefaultMerger.Name)
			}
			return pebble.DefaultMerger, nil
		},
		SkipUnknown: func(string, string) bool { return false },
	})
	if perr == nil {
		return nil
	}
	log(path, perr)
	o := popts.Clone().EnsureDefaults()
	tmp := path + ".tmp"
	w, err := fs.Create(tmp)
	if err != nil {
		return fmt.Errorf("store: rewrite %s: %w", path, err)
	}
	_, err = io.WriteString(w, o.String())
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, path)
	}
	if err == nil {
		var d vfs.File
		if d, err = fs.OpenDir(dir); err == nil {
			err = d.Sync()
			_ = d.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("store: rewrite %s: %w", path, err)
	}
	return nil
}

// checkTables reads every block of every live sstable of db (in dir on
// fs) and checks its checksum, so that a changed or cut table refuses the
// start naming the file, instead of failing a read later (or, for a block
// only an old snapshot uses, never). The cost is one sequential read of
// the database, which holds the retained snapshots: a few times what the
// restore of the newest reads anyway.
//
// Pebble is open meanwhile, and may compact: a table of the listing that
// is gone from the directory and no longer live was compacted away since
// (a member restarted after kill -9 replays its WAL and compacts at once),
// not lost, and is skipped. A table still live and gone is an error.
func checkTables(db *pebble.DB, fs vfs.FS, dir string) error {
	levels, err := db.SSTables()
	if err != nil {
		return fmt.Errorf("store: list the tables of %s: %w", dir, err)
	}
	return checkTableList(db, fs, dir, levels)
}

// checkTableList is checkTables over a listing of db's tables taken
// earlier.
func checkTableList(db *pebble.DB, fs vfs.FS, dir string, levels [][]pebble.SSTableInfo) error {
	for _, level := range levels {
		for _, t := range level {
			if t.Virtual {
				continue
			}
			path := fs.PathJoin(dir, fmt.Sprintf("%06d.sst", t.FileNum))
			err := checkTable(fs, path)
			if err != nil && errors.Is(err, os.ErrNotExist) {
				live, lerr := tableLive(db, t.FileNum)
				if lerr != nil {
					return fmt.Errorf("store: list the tables of %s: %w", dir, lerr)
				}
				if !live {
					continue // compacted away since the listing
				}
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// tableLive reports whether table n is in db's current version.
func tableLive(db *pebble.DB, n pebble.FileNum) (bool, error) {
	levels, err := db.SSTables()
	if err != nil {
		return false, err
	}
	for _, level := range levels {
		for _, t := range level {
			if t.FileNum == n {
				return true, nil
			}
		}
	}
	return false, nil
}

// checkTable checks the checksum of every block of the sstable at path.
func checkTable(fs vfs.FS, path string) error {
	f, err := fs.Open(path)
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	r, err := sstable.NewReader(readable, sstable.ReaderOptions{})
	if err != nil {
		_ = readable.Close()
		return tableError(path, err)
	}
	err = r.ValidateBlockChecksums()
	_ = r.Close()
	return tableError(path, err)
}

// tableError names path in err, a *CorruptError if Pebble found the table
// corrupt.
func tableError(path string, err error) error {
	switch {
	case err == nil:
		return nil
	case pebble.IsCorruptionError(err):
		return &CorruptError{Path: path, Offset: -1, Reason: err.Error()}
	default:
		return fmt.Errorf("store: read %s: %w", path, err)
	}
}
