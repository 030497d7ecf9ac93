package zkformat

import (
	"bytes"
	"encoding/binary"
	"hash/adler32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/zkd/zkd/datatree"
)

// testdata/zk38 is the version-2 folder of a real ZooKeeper 3.8.0
// (Debian) after compat/migrate's populate and three ephemeral-sequential
// lock holders, with -Dzookeeper.snapCount=40 (eight snapshots, eight
// logs), stopped with SIGTERM while the lock holders were connected. The
// logs' preallocated zero tails are cut off.
const zk38 = "testdata/zk38/version-2"

const (
	zk38LastZxid = 0xd6
	zk38Nodes    = 126 // the tree's nodes, root included
)

// copyDir copies zk38 into a temporary folder, keeping the files keep
// accepts.
func copyDir(t *testing.T, keep func(name string) bool) string {
	t.Helper()
	dir := t.TempDir()
	ents, err := os.ReadDir(zk38)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if keep != nil && !keep(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(zk38, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mutate(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, f(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRestoreZooKeeper38(t *testing.T) {
	res, err := Restore("testdata/zk38", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Tree
	if filepath.Base(res.Snapshot) != "snapshot.cb" || tr.LastZxid != zk38LastZxid || tr.Len() != zk38Nodes || len(tr.Sessions) != 3 {
		t.Fatalf("restored %s: zxid 0x%x, %d nodes, %d sessions", res.Snapshot, tr.LastZxid, tr.Len(), len(tr.Sessions))
	}
	if res.DigestChecked == 0 || len(res.Notes) != 0 {
		t.Errorf("digests checked %d, notes %q", res.DigestChecked, res.Notes)
	}
	// ZooKeeper's own digest of this tree (checked against its log
	// above) is the one zkd's tree keeps, loaded and from scratch.
	dt, err := datatree.FromImages(datatree.Config{ExtendedTypes: true}, tr.LastZxid, tr.Images())
	if err != nil {
		t.Fatal(err)
	}
	if dt.TreeDigest() != tr.Digest() || dt.ComputeTreeDigest() != tr.Digest() {
		t.Errorf("zkd's tree digest %016x (from scratch %016x), ZooKeeper's %016x", dt.TreeDigest(), dt.ComputeTreeDigest(), tr.Digest())
	}
	locks := 0
	for _, im := range tr.Images() {
		if strings.HasPrefix(im.Path, "/locks/lock-") {
			locks++
			if _, ok := tr.Sessions[im.EphemeralOwner]; !ok {
				t.Errorf("%s: owner 0x%x has no session", im.Path, im.EphemeralOwner)
			}
		}
	}
	if locks != 3 {
		t.Errorf("%d lock nodes, want 3", locks)
	}
	if n := tr.Node("/locks"); n == nil || n.EphemeralOwner != containerOwner {
		t.Errorf("/locks is not a container: %+v", n)
	}
	if n := tr.Node("/ttl"); n == nil || n.EphemeralOwner != ttlMarker|3600000 {
		t.Errorf("/ttl is not a 1h TTL node: %+v", n)
	}
}

// Every snapshot, with the logs after it, gives the same tree: the replay
// over each fuzzy window converges.
func TestRestoreFromEverySnapshot(t *testing.T) {
	full, err := Restore(zk38, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	snaps, _ := listFiles(zk38, "snapshot")
	for _, s := range snaps {
		t.Run(filepath.Base(s.path), func(t *testing.T) {
			dir := copyDir(t, func(name string) bool {
				hex, ok := strings.CutPrefix(name, "snapshot.")
				if !ok {
					return true
				}
				z, err := strconv.ParseInt(hex, 16, 64)
				return err == nil && z <= s.zxid
			})
			res, err := Restore(dir, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.SnapshotZxid != s.zxid {
				t.Fatalf("started from %s", res.Snapshot)
			}
			if res.Tree.Digest() != full.Tree.Digest() || res.Tree.LastZxid != full.Tree.LastZxid || res.Tree.Len() != full.Tree.Len() {
				t.Errorf("digest %016x zxid 0x%x nodes %d, want %016x 0x%x %d", res.Tree.Digest(), res.Tree.LastZxid, res.Tree.Len(), full.Tree.Digest(), full.Tree.LastZxid, full.Tree.Len())
			}
			if res.DigestChecked == 0 {
				t.Error("no digest checked")
			}
		})
	}
}

func TestRestoreDamage(t *testing.T) {
	full, err := Restore(zk38, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(off int) func([]byte) []byte {
		return func(b []byte) []byte {
			if off < 0 {
				off += len(b)
			}
			b[off] ^= 0x5a
			return b
		}
	}
	cut := func(n int) func([]byte) []byte { return func(b []byte) []byte { return b[:len(b)-n] } }
	for _, tc := range []struct {
		name   string
		file   string
		damage func([]byte) []byte
		// wantErr is part of the error; "" means the restore succeeds.
		wantErr string
		// wantNote is part of a note; wantZxid the last zxid then.
		wantNote string
		wantZxid int64
	}{
		{"newest snapshot flipped", "snapshot.cb", flip(200), "", "skipped", zk38LastZxid},
		{"newest snapshot truncated", "snapshot.cb", cut(100), "", "truncated", zk38LastZxid},
		{"newest snapshot seal flipped", "snapshot.cb", flip(-8), "", "checksum", zk38LastZxid},
		{"log record flipped", "log.b3", flip(300), "log.b3: offset", "", 0},
		{"last log cut mid-record", "log.cd", cut(30), "", "dropped", zk38LastZxid - 1},
		{"middle log cut", "log.b3", cut(30), "log.cd: offset", "", 0},
		{"log header", "log.cd", flip(1), "not a ZooKeeper transaction log", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, nil)
			mutate(t, filepath.Join(dir, tc.file), tc.damage)
			res, err := Restore(dir, "", nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(res.Notes, "\n"), tc.wantNote) || !strings.Contains(strings.Join(res.Notes, "\n"), tc.file) {
				t.Errorf("notes %q, want one naming %s with %q", res.Notes, tc.file, tc.wantNote)
			}
			if res.Tree.LastZxid != tc.wantZxid {
				t.Errorf("last zxid 0x%x, want 0x%x", res.Tree.LastZxid, tc.wantZxid)
			}
			if tc.wantZxid == zk38LastZxid && res.Tree.Digest() != full.Tree.Digest() {
				t.Errorf("digest %016x, want %016x", res.Tree.Digest(), full.Tree.Digest())
			}
		})
	}
}

func TestRestoreRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keep    func(string) bool
		damage  func(dir string)
		wantErr string
	}{
		{"empty", func(string) bool { return false }, nil, "no ZooKeeper snapshot"},
		{"logs without snapshot", func(n string) bool { return strings.HasPrefix(n, "log.") }, nil, "no snapshot"},
		{"a log missing", func(n string) bool {
			// From snapshot.7d on, log.99 is needed.
			return n != "log.99" && n != "snapshot.97" && n != "snapshot.b1" && n != "snapshot.cb"
		}, nil, "log.b3: offset 16: zxid 0xb3 does not follow 0x98"},
		{"every snapshot damaged", nil, func(dir string) {
			snaps, _ := filepath.Glob(filepath.Join(dir, "snapshot.*"))
			for _, s := range snaps {
				mutate(t, s, func(b []byte) []byte { return b[:len(b)/2] })
			}
		}, "no snapshot in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, tc.keep)
			if tc.damage != nil {
				tc.damage(dir)
			}
			_, err := Restore(dir, "", nil)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// A tree written by WriteSnapshot reads back with the same nodes, stats,
// sessions and digest.
func TestWriteSnapshotRoundTrip(t *testing.T) {
	res, err := Restore(zk38, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := datatree.FromImages(datatree.Config{ExtendedTypes: true}, res.Tree.LastZxid, res.Tree.Images())
	if err != nil {
		t.Fatal(err)
	}
	ids := []int64{}
	timeouts := []int32{}
	for id, to := range res.Tree.Sessions {
		ids = append(ids, id)
		timeouts = append(timeouts, to)
	}
	var buf bytes.Buffer
	digest, err := WriteSnapshot(&buf, tree, ids, timeouts)
	if err != nil {
		t.Fatal(err)
	}
	if digest != res.Tree.Digest() {
		t.Errorf("written digest %016x, the restored tree's %016x", digest, res.Tree.Digest())
	}
	back, err := ReadSnapshot("written", buf.Bytes(), res.Tree.LastZxid)
	if err != nil {
		t.Fatal(err)
	}
	if back.Digest == nil || back.Digest.Digest != digest || back.Digest.Zxid != res.Tree.LastZxid {
		t.Errorf("zxid digest read back %+v, want %016x at 0x%x", back.Digest, digest, res.Tree.LastZxid)
	}
	if back.Tree.Digest() != res.Tree.Digest() || back.Tree.Len() != res.Tree.Len() || len(back.Tree.Sessions) != len(res.Tree.Sessions) {
		t.Fatalf("read back %d nodes digest %016x, want %d %016x", back.Tree.Len(), back.Tree.Digest(), res.Tree.Len(), res.Tree.Digest())
	}
	a, b := res.Tree.Images(), back.Tree.Images()
	for i := range a {
		if a[i].Path != b[i].Path || !bytes.Equal(a[i].Data, b[i].Data) || aclKey(a[i].ACL) != aclKey(b[i].ACL) {
			t.Fatalf("node %d: %+v, want %+v", i, b[i], a[i])
		}
	}
	for id, to := range res.Tree.Sessions {
		if back.Tree.Sessions[id] != to {
			t.Errorf("session 0x%x: timeout %d, want %d", id, back.Tree.Sessions[id], to)
		}
	}
}

// Ephemerals of a session missing from the table go, as ZooKeeper's
// loadData kills such sessions.
func TestRestoreDropsOrphanEphemerals(t *testing.T) {
	res, err := Restore(zk38, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Tree
	var victim int64
	for id := range tr.Sessions {
		victim = id
		break
	}
	delete(tr.Sessions, victim)
	dir := t.TempDir()
	var buf bytes.Buffer
	tree, err := datatree.FromImages(datatree.Config{ExtendedTypes: true}, tr.LastZxid, tr.Images())
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	var tos []int32
	for id, to := range tr.Sessions {
		ids, tos = append(ids, id), append(tos, to)
	}
	if _, err := WriteSnapshot(&buf, tree, ids, tos); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "snapshot."+strconv.FormatInt(tr.LastZxid, 16)), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Restore(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "deleted 1 ephemeral(s) of session") {
		t.Errorf("notes %q", got.Notes)
	}
	for _, im := range got.Tree.Images() {
		if im.EphemeralOwner == victim {
			t.Errorf("%s still owned by the dead session", im.Path)
		}
	}
	if got.Tree.Len() != tr.Len()-1 {
		t.Errorf("%d nodes, want %d", got.Tree.Len(), tr.Len()-1)
	}
}

// The blocks that may follow a snapshot's tree: none (before 3.6 or with
// digests off), the zxid digest, and 3.9's last processed zxid after it
// or alone; each sealed. Anything else is refused.
func TestReadSnapshotTrailers(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(zk38, "snapshot.cb"))
	if err != nil {
		t.Fatal(err)
	}
	// The 3.8 file ends with the digest block (20 bytes + 13 of seal).
	tree := base[:len(base)-33]
	withSeal := func(b []byte, block []byte) []byte {
		out := append(append([]byte(nil), b...), block...)
		sum := adler32.Checksum(out)
		out = binary.BigEndian.AppendUint64(out, uint64(sum))
		return append(out, 0, 0, 0, 1, '/')
	}
	lastZxid := binary.BigEndian.AppendUint64(nil, 0xcb)
	for _, tc := range []struct {
		name       string
		data       []byte
		wantDigest bool
		wantErr    string
	}{
		{"3.8 as written", base, true, ""},
		{"no trailer", tree, false, ""},
		{"3.9 digest and last zxid", withSeal(base, lastZxid), true, ""},
		{"3.9 last zxid alone", withSeal(tree, lastZxid), false, ""},
		{"bad seal on last zxid", append(withSeal(base, lastZxid)[:len(base)+8], 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, '/'), false, "checksum"},
		{"stray bytes", append(append([]byte(nil), base...), 1, 2, 3), false, "unexpected bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ReadSnapshot("snap", tc.data, 0xcb)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (s.Digest != nil) != tc.wantDigest {
				t.Errorf("digest %+v, want one: %v", s.Digest, tc.wantDigest)
			}
		})
	}
}

// A snapshot whose tree does not match its digest (a fuzzy one: ZooKeeper
// applied later transactions while writing it, and took the digest after)
// is accepted once the replayed tree matches a later transaction's digest,
// with a note; without a later digested transaction it is refused. The
// digest may be at the snapshot's own zxid or at a later one (CI met a
// real 3.8 snapshot.cb whose digest was at 0xcc).
func TestRestoreFuzzySnapshot(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(zk38, "snapshot.cb"))
	if err != nil {
		t.Fatal(err)
	}
	// The digest block is zxid (8), version (4), digest (8), then the
	// 13-byte seal; change the digest (and maybe its zxid) and seal again.
	fuzzyAt := func(zxid uint64) []byte {
		body := append([]byte(nil), base[:len(base)-13]...)
		body[len(body)-1] ^= 0xff
		if zxid != 0 {
			binary.BigEndian.PutUint64(body[len(body)-20:], zxid)
		}
		sum := adler32.Checksum(body)
		return append(binary.BigEndian.AppendUint64(body, uint64(sum)), 0, 0, 0, 1, '/')
	}
	for _, tc := range []struct {
		name     string
		snapshot []byte
		logs     []string
		wantErr  string
		wantNote string
	}{
		{"later transactions decide", fuzzyAt(0), []string{"log.b3", "log.cd"}, "", "from zxid 0xcc on"},
		{"digest at a later zxid", fuzzyAt(0xcc), []string{"log.b3", "log.cd"}, "", "at zxid 0xcc); the replayed tree matches the log's digest from zxid 0xcd on"},
		{"nothing after the snapshot", fuzzyAt(0), nil, "no later transaction carries a digest", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, func(name string) bool { return slices.Contains(tc.logs, name) })
			if err := os.WriteFile(filepath.Join(dir, "snapshot.cb"), tc.snapshot, 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := Restore(dir, "", nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "is fuzzy") || !strings.Contains(res.Notes[0], tc.wantNote) {
				t.Errorf("notes %q, want one saying the snapshot is fuzzy, %q", res.Notes, tc.wantNote)
			}
		})
	}
}
