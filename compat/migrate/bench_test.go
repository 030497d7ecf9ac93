package migrate

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/zab/zkformat"
)

// benchTree is a tree of n znodes, most of 32 bytes, 1000 to a parent, the last
// zxid in ZooKeeper epoch 1.
func benchTree(b *testing.B, n int) *datatree.Tree {
	b.Helper()
	open := datatree.OpenACLUnsafe
	ims := []datatree.NodeImage{{Path: "/", ACL: open}, {Path: "/bench", ACL: open},
		{Path: "/zookeeper", ACL: open}, {Path: "/zookeeper/config", ACL: datatree.ReadACLUnsafe, Aversion: -1}, {Path: "/zookeeper/quota", ACL: open}}
	data := make([]byte, 32)
	zxid := int64(1 << 32)
	for i := 0; len(ims) < n; i++ {
		dir := fmt.Sprintf("/bench/d%04d", i)
		zxid++
		ims = append(ims, datatree.NodeImage{Path: dir, ACL: open, Czxid: zxid, Mzxid: zxid, Pzxid: zxid})
		for j := 0; j < 1000 && len(ims) < n; j++ {
			zxid++
			ims = append(ims, datatree.NodeImage{Path: fmt.Sprintf("%s/n%06d", dir, j), Data: data, ACL: open, Czxid: zxid, Mzxid: zxid, Pzxid: zxid, Ctime: 1, Mtime: 1})
		}
	}
	tree, err := datatree.FromImages(datatree.DefaultConfig(), zxid, ims)
	if err != nil {
		b.Fatal(err)
	}
	return tree
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// rssBytes is a process's resident set size, from /proc/PID/status.
func rssBytes(b *testing.B, pid int) int64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

var snapLoaded = regexp.MustCompile(`Snapshot loaded in (\d+) ms`)

// BenchmarkIntegration_Migrate measures, for ZKD_MIGRATE_NODES znodes
// (default 100000): ZooKeeper 3.8's own load of the snapshot (its log's
// "Snapshot loaded in N ms"), `zkd import` of the snapshot ZooKeeper then
// wrote, zkd's first start and a restart on the imported data (exec to
// serving), and `zkd export` back; with the sizes on disk and the resident
// memory per znode (ZooKeeper's whole RSS after its load with -Xmx4g;
// zkd's RSS serving the tree less an empty zkd's). Each step runs once per
// b.N. zkd-RSS-B/znode is taken once the first start serves,
// zkd-restart-RSS-B/znode once the restart serves.
//
// ZKD_MIGRATE_ZK=off leaves ZooKeeper out (no zk-* figures; zkd imports
// the generated snapshot directly), for sizes ZooKeeper's 4 GB heap cannot
// load; make bench-10m runs it at 10M znodes.
//
//	ZKD_MIGRATE_NODES=1000000 go test -run '^$' -bench Migrate -benchtime 1x ./compat/migrate/
func BenchmarkIntegration_Migrate(b *testing.B) {
	withZK := os.Getenv("ZKD_MIGRATE_ZK") != "off"
	if withZK {
		zkproc.RequireZooKeeper(b)
	}
	n := 100000
	if v := os.Getenv("ZKD_MIGRATE_NODES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	bin := zkproc.BuildZkd(b)
	tree := benchTree(b, n)
	for i := 0; i < b.N; i++ {
		zkDir := b.TempDir()
		v2 := filepath.Join(zkDir, "data", "version-2")
		must(b, os.MkdirAll(v2, 0o755))
		f, err := os.Create(filepath.Join(v2, fmt.Sprintf("snapshot.%x", tree.LastZxid())))
		must(b, err)
		_, err = zkformat.WriteSnapshot(f, tree, nil, nil)
		must(b, err)
		must(b, f.Close())

		// Without ZooKeeper, zkd imports the snapshot as written.
		importFrom := filepath.Join(zkDir, "data")
		var zkRSS int64
		var zkMs int
		if withZK {
			zs := zkproc.StartZooKeeper(b, zkproc.Options{Dir: zkDir, StartTimeout: 10 * time.Minute,
				JVMFlags: []string{"-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Xmx4g"}})
			zkRSS = rssBytes(b, zs.PID())
			zs.Stop()
			m := snapLoaded.FindStringSubmatch(zs.Log())
			if m == nil {
				b.Fatalf("no 'Snapshot loaded in' line in %s", zs.LogPath)
			}
			zkMs, _ = strconv.Atoi(m[1])
			importFrom = zs.DataDir
		}
		// ZooKeeper snapshots at start, over the file it loaded (same
		// zxid); its log files are preallocated, 64 MB whatever they hold.
		var zkSize int64
		if info, err := os.Stat(filepath.Join(v2, fmt.Sprintf("snapshot.%x", tree.LastZxid()))); err == nil {
			zkSize = info.Size()
		}

		dir := b.TempDir()
		cfg := writeZooCfg(b, dir, zkproc.FreePort(b))
		start := time.Now()
		out, err := exec.Command(bin, "import", "-from", importFrom, cfg).CombinedOutput()
		if err != nil {
			b.Fatalf("import: %v\n%s", err, out)
		}
		importDur := time.Since(start)
		zkdSize := dirSize(filepath.Join(dir, "data"))

		// zkd serving the imported tree: time from exec to serving, and
		// its resident memory once serving, against an empty zkd's.
		empty := zkproc.StartZkd(b, zkproc.Options{Binary: bin})
		emptyRSS := rssBytes(b, empty.PID())
		empty.Stop()
		start = time.Now()
		zd := zkproc.StartZkd(b, zkproc.Options{Binary: bin, Dir: dir, StartTimeout: 10 * time.Minute})
		zkdStart := time.Since(start)
		zkdRSS := rssBytes(b, zd.PID())
		zd.Stop()
		start = time.Now()
		zd.Restart(b)
		zkdRestart := time.Since(start)
		zkdRestartRSS := rssBytes(b, zd.PID())
		zd.Stop()

		exp := filepath.Join(b.TempDir(), "data")
		start = time.Now()
		if out, err := exec.Command(bin, "export", "-to", exp, cfg).CombinedOutput(); err != nil {
			b.Fatalf("export: %v\n%s", err, out)
		}
		exportDur := time.Since(start)
		expSize := dirSize(exp)

		b.ReportMetric(importDur.Seconds(), "import-s")
		b.ReportMetric(exportDur.Seconds(), "export-s")
		b.ReportMetric(float64(n)/importDur.Seconds(), "import-znodes/s")
		b.ReportMetric(float64(zkSize)/1e6, "zk-snapshot-MB")
		b.ReportMetric(float64(zkdSize)/1e6, "zkd-MB")
		b.ReportMetric(float64(expSize)/1e6, "export-MB")
		b.ReportMetric(zkdStart.Seconds(), "zkd-first-start-s")
		b.ReportMetric(zkdRestart.Seconds(), "zkd-restart-s")
		b.ReportMetric(float64(zkdRSS-emptyRSS)/float64(n), "zkd-RSS-B/znode")
		b.ReportMetric(float64(zkdRestartRSS-emptyRSS)/float64(n), "zkd-restart-RSS-B/znode")
		if withZK {
			b.ReportMetric(float64(zkMs)/1000, "zk-load-s")
			b.ReportMetric(float64(zkRSS)/float64(n), "zk-RSS-B/znode")
		}
	}
}
