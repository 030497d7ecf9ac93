package zkformat

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/zkd/zkd/jute"
)

// maxSnapshotsTried is how many snapshots, newest first, Restore tries
// before giving up (FileSnap tries up to 100).
const maxSnapshotsTried = 100

// Result is a restored ZooKeeper database.
type Result struct {
	Tree *Tree
	// Snapshot is the file the tree started from and SnapshotZxid its
	// zxid; Logs are the log files replayed, Txns the transactions applied
	// from them.
	Snapshot     string
	SnapshotZxid int64
	Logs         []string
	Txns         int
	// Notes say what was skipped or dropped and why, one line each:
	// snapshots that did not read, partly written log records.
	Notes []string
	// DigestChecked is how many digests (snapshot and transactions) were
	// recomputed and matched.
	DigestChecked int
}

// Progress receives a line now and then during a long restore.
type Progress func(format string, args ...any)

type file struct {
	path string
	zxid int64
}

// listFiles returns dir's files named prefix.<hex zxid>[.suffix], by zxid.
func listFiles(dir, prefix string) ([]file, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []file
	for _, e := range ents {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, prefix+".")
		if !ok || e.IsDir() {
			continue
		}
		hex, _, _ := strings.Cut(rest, ".")
		z, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			continue
		}
		out = append(out, file{filepath.Join(dir, name), int64(z)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].zxid < out[j].zxid })
	return out, nil
}

// VersionDir returns dir/version-2 when it exists, else dir itself: the
// files' folder may be given directly.
func VersionDir(dir string) string {
	v := filepath.Join(dir, "version-2")
	if st, err := os.Stat(v); err == nil && st.IsDir() {
		return v
	}
	return dir
}

// readSnapshotFile reads and decodes one snapshot file, gunzipping a .gz
// one.
func readSnapshotFile(f file) (*Snapshot, error) {
	raw, err := os.ReadFile(f.path)
	if err != nil {
		return nil, err
	}
	switch {
	case strings.HasSuffix(f.path, ".gz"):
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, &FormatError{File: f.path, Msg: "gzip: " + err.Error()}
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return nil, &FormatError{File: f.path, Msg: "gzip: " + err.Error()}
		}
	case strings.HasSuffix(f.path, ".snappy"):
		return nil, &FormatError{File: f.path, Msg: "snappy-compressed snapshots are not supported; restart ZooKeeper with zookeeper.snapshot.compression.method=none (or gz) to write a readable one"}
	}
	return ReadSnapshot(f.path, raw, f.zxid)
}

// Restore rebuilds the database in snapDir (and logDir, "" for the same)
// as ZooKeeper's FileTxnSnapLog.restore does, checking every checksum and
// digest on the way. Both may be a dataDir or its version-2 folder.
func Restore(snapDir, logDir string, progress Progress) (*Result, error) {
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if logDir == "" {
		logDir = snapDir
	}
	snapDir, logDir = VersionDir(snapDir), VersionDir(logDir)
	snaps, err := listFiles(snapDir, "snapshot")
	if err != nil {
		return nil, fmt.Errorf("zkformat: %w", err)
	}
	logs, err := listFiles(logDir, "log")
	if err != nil {
		return nil, fmt.Errorf("zkformat: %w", err)
	}
	if len(snaps) == 0 {
		if len(logs) > 0 {
			return nil, fmt.Errorf("zkformat: %s has transaction logs but no snapshot; ZooKeeper refuses this too (zookeeper.snapshot.trust.empty)", logDir)
		}
		return nil, fmt.Errorf("zkformat: no ZooKeeper snapshot.* files in %s", snapDir)
	}
	res := &Result{}
	var snap *Snapshot
	tried := 0
	for i := len(snaps) - 1; i >= 0 && tried < maxSnapshotsTried; i-- {
		tried++
		f := snaps[i]
		progress("reading %s", f.path)
		s, err := readSnapshotFile(f)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("skipped %s: %v", f.path, err))
			continue
		}
		snap, res.Snapshot, res.SnapshotZxid = s, f.path, f.zxid
		break
	}
	if snap == nil {
		return nil, fmt.Errorf("zkformat: no snapshot in %s reads intact:\n  %s", snapDir, strings.Join(res.Notes, "\n  "))
	}
	t := snap.Tree
	res.Tree = t
	progress("%s: %d znodes, %d sessions", res.Snapshot, t.Len(), len(t.Sessions))

	// The snapshot digest is checked once the replay reaches its zxid; at
	// once if that is the snapshot's own.
	pending := snap.Digest
	if pending != nil && pending.Version != digestVersion {
		pending = nil
	}
	// A snapshot whose tree does not match its own digest is fuzzy:
	// ZooKeeper applied later transactions while it wrote the tree, and
	// took the digest (of the last transaction whose digest it had
	// recorded, at or after the snapshot's zxid) once the tree was
	// written, so the tree may hold changes the digest's zxid does not
	// yet account for. ZooKeeper itself only logs such a mismatch. The
	// replayed tree is exact again once the replay passes the end of that
	// window: while fuzzy is set, a transaction digest that differs is
	// the window still open, the first one that matches closes it, and
	// from then on every digest must match. The last transaction's digest
	// always must.
	var fuzzy error
	if pending != nil && pending.Zxid == res.SnapshotZxid {
		if t.digest != pending.Digest {
			fuzzy = fmt.Errorf("zkformat: %s: tree digest %016x, the snapshot says %016x at zxid 0x%x", res.Snapshot, t.digest, pending.Digest, pending.Zxid)
		} else {
			res.DigestChecked++
		}
		pending = nil
	}
	// Without a snapshot digest, the end of the fuzzy window is unknown,
	// so transaction digests cannot be compared.
	checkTxnDigests := snap.Digest != nil && snap.Digest.Version == digestVersion
	closeFuzzy := func(at int64) {
		res.Notes = append(res.Notes, fmt.Sprintf("%s is fuzzy (its tree does not match its digest at zxid 0x%x); the replayed tree matches the log's digest from zxid 0x%x on", res.Snapshot, snap.Digest.Zxid, at))
		fuzzy = nil
	}

	// The log that starts at or just before the snapshot, and every later
	// one (FileTxnLog.getLogFiles).
	start := 0
	for i, f := range logs {
		if f.zxid <= res.SnapshotZxid {
			start = i
		}
	}
	var lastFile string
	var lastTxn *Txn
	var lastTxnFile string
	for i := start; i < len(logs); i++ {
		f := logs[i]
		data, err := os.ReadFile(f.path)
		if err != nil {
			return nil, fmt.Errorf("zkformat: %w", err)
		}
		lf, err := ReadLog(f.path, data)
		if err != nil {
			return nil, fmt.Errorf("zkformat: %w", err)
		}
		used := false
		for k := range lf.Txns {
			tx := &lf.Txns[k]
			if tx.Zxid <= t.LastZxid {
				continue
			}
			if !follows(t.LastZxid, tx.Zxid) {
				where := "the snapshot " + res.Snapshot
				if lastFile != "" {
					where = lastFile
				}
				return nil, fmt.Errorf("zkformat: %s: offset %d: zxid 0x%x does not follow 0x%x (from %s): transactions are missing", f.path, tx.Offset, tx.Zxid, t.LastZxid, where)
			}
			t.Apply(tx)
			lastTxn, lastTxnFile = tx, f.path
			res.Txns++
			used = true
			lastFile = f.path
			if pending != nil && tx.Zxid >= pending.Zxid {
				if tx.Zxid == pending.Zxid && t.digest != pending.Digest {
					fuzzy = fmt.Errorf("zkformat: %s: offset %d: tree digest %016x after zxid 0x%x, the snapshot %s says %016x", f.path, tx.Offset, t.digest, tx.Zxid, res.Snapshot, pending.Digest)
				} else if tx.Zxid == pending.Zxid {
					res.DigestChecked++
				}
				pending = nil
				continue
			}
			if pending == nil && checkTxnDigests && tx.Digest != nil && tx.Digest.Version == digestVersion {
				switch {
				case t.digest == tx.Digest.Digest:
					res.DigestChecked++
					lastTxn = nil
					if fuzzy != nil {
						closeFuzzy(tx.Zxid)
					}
				case fuzzy == nil:
					return nil, fmt.Errorf("zkformat: %s: offset %d: tree digest %016x after zxid 0x%x (type %d), the log says %016x", f.path, tx.Offset, t.digest, tx.Zxid, tx.Type, tx.Digest.Digest)
				}
			}
			if res.Txns%100000 == 0 {
				progress("%d transactions applied, zxid 0x%x", res.Txns, tx.Zxid)
			}
		}
		if used {
			res.Logs = append(res.Logs, f.path)
		}
		if lf.Partial >= 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("dropped %s from offset %d (%d bytes): a partly written record, never acknowledged; ZooKeeper drops it too", f.path, lf.Partial, int64(len(data))-lf.Partial))
		}
	}
	// Once every transaction is in, the tree is exact whatever the
	// snapshot's fuzzy window was, so the last digest always compares.
	if lastTxn != nil && lastTxn.Digest != nil && lastTxn.Digest.Version == digestVersion {
		if t.digest != lastTxn.Digest.Digest {
			err := fmt.Errorf("zkformat: %s: offset %d: tree digest %016x after the last zxid 0x%x, the log says %016x", lastTxnFile, lastTxn.Offset, t.digest, lastTxn.Zxid, lastTxn.Digest.Digest)
			if fuzzy != nil {
				err = fmt.Errorf("%w (first: %v)", err, fuzzy)
			}
			return nil, err
		}
		res.DigestChecked++
		if fuzzy != nil {
			closeFuzzy(lastTxn.Zxid)
		}
	}
	if fuzzy != nil {
		return nil, fmt.Errorf("%w, and no later transaction carries a digest to check the replayed tree against", fuzzy)
	}
	// As ZooKeeperServer.loadData: ephemerals of a session the table no
	// longer holds are deleted, at the last zxid.
	var dead []int64
	for owner := range t.ephemerals {
		if _, ok := t.Sessions[owner]; !ok {
			dead = append(dead, owner)
		}
	}
	sort.Slice(dead, func(i, j int) bool { return dead[i] < dead[j] })
	for _, id := range dead {
		res.Notes = append(res.Notes, fmt.Sprintf("deleted %d ephemeral(s) of session 0x%x, which is not in the session table (ZooKeeper deletes them when it loads)", len(t.ephemerals[id]), id))
		t.killSession(id, t.LastZxid, nil)
	}
	if pending != nil {
		return nil, fmt.Errorf("zkformat: the logs end at zxid 0x%x, before 0x%x, which the snapshot %s was taken up to: transactions are missing", t.LastZxid, pending.Zxid, res.Snapshot)
	}
	return res, nil
}

// follows reports whether zxid b may come right after a: the next counter
// in the same epoch, or the first of a later epoch.
func follows(a, b int64) bool {
	if b == a+1 {
		return true
	}
	return b>>32 > a>>32 && uint32(b) == 1
}

// Apply applies one logged transaction as ZooKeeper's
// FileTxnSnapLog.processTransaction and DataTree.processTxn do.
func (t *Tree) Apply(tx *Txn) {
	switch tx.Type {
	case jute.OpCreateSession:
		t.Sessions[tx.ClientID] = tx.Timeout
	case jute.OpCloseSession:
		delete(t.Sessions, tx.ClientID)
		t.killSession(tx.ClientID, tx.Zxid, tx.Paths)
	case jute.OpMulti:
		// A multi with an error in it applied nothing.
		for i := range tx.Sub {
			if tx.Sub[i].Type == jute.OpError {
				t.LastZxid = tx.Zxid
				return
			}
		}
		for i := range tx.Sub {
			t.applyOne(&tx.Sub[i])
		}
	default:
		t.applyOne(tx)
	}
	t.LastZxid = tx.Zxid
}

func (t *Tree) applyOne(tx *Txn) {
	switch tx.Type {
	case jute.OpCreate, jute.OpCreate2:
		owner := int64(0)
		if tx.Ephemeral {
			owner = tx.ClientID
		}
		t.createNode(tx.Path, tx.Data, tx.ACL, owner, tx.ParentCVersion, tx.Zxid, tx.Time)
	case jute.OpCreateContainer:
		t.createNode(tx.Path, tx.Data, tx.ACL, containerOwner, tx.ParentCVersion, tx.Zxid, tx.Time)
	case jute.OpCreateTTL:
		t.createNode(tx.Path, tx.Data, tx.ACL, ttlMarker|tx.TTL, tx.ParentCVersion, tx.Zxid, tx.Time)
	case jute.OpDelete, jute.OpDeleteContainer:
		t.deleteNode(tx.Path, tx.Zxid)
	case jute.OpSetData, jute.OpReconfig:
		t.setData(tx.Path, tx.Data, tx.Version, tx.Zxid, tx.Time)
	case jute.OpSetACL:
		t.setACL(tx.Path, tx.ACL, tx.Version)
	}
}
