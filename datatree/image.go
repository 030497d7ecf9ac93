package datatree

import (
	"fmt"

	"github.com/zkd/zkd/jute"
)

// NodeImage is one znode with everything a snapshot keeps of it: what
// other formats (ZooKeeper's own snapshots) are converted from and to.
type NodeImage struct {
	Path           string // "/" for the root
	Data           []byte
	ACL            []jute.ACL
	Czxid, Mzxid   int64
	Pzxid          int64
	Ctime, Mtime   int64
	EphemeralOwner int64
	Version        int32
	Cversion       int32
	Aversion       int32
}

// FromImages builds a tree holding exactly the given nodes, with LastZxid
// lastZxid and no watches. The root ("/") comes first and every node after
// its parent; a node without its parent, a repeated path or an invalid
// path is an error naming the path. Stats are taken as given, not
// recomputed, so the tree is byte for byte what the images describe.
func FromImages(cfg Config, lastZxid int64, nodes []NodeImage) (*Tree, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(nodes) == 0 || nodes[0].Path != "/" {
		return nil, fmt.Errorf("datatree: images: the root \"/\" must come first")
	}
	t := newEmpty(cfg)
	t.lastZxid.Store(lastZxid)
	byPath := make(map[string]*node, len(nodes))
	mk := func(im *NodeImage, parent *node, name string) *node {
		n := &node{parent: parent, nd: makeNameData(name, im.Data), acl: t.acls.intern(im.ACL)}
		n.stat = persisted{
			czxid: im.Czxid, mzxid: im.Mzxid, pzxid: im.Pzxid,
			ctime: im.Ctime, mtime: im.Mtime, ephemeralOwner: im.EphemeralOwner,
			version: im.Version, cversion: im.Cversion,
		}
		n.aversion = im.Aversion
		return n
	}
	t.root = mk(&nodes[0], nil, "")
	if im := &nodes[0]; im.Data == nil {
		t.root.setData([]byte{})
	}
	t.nodes = 1
	t.dataSize = int64(1 + t.root.dataLen())
	byPath["/"] = t.root
	for i := 1; i < len(nodes); i++ {
		im := &nodes[i]
		parentPath, name, ok := parentOf(im.Path)
		if !ok || !ValidatePath(im.Path) {
			return nil, fmt.Errorf("datatree: images: invalid path %q", im.Path)
		}
		if parentPath == "" {
			parentPath = "/"
		}
		if _, dup := byPath[im.Path]; dup {
			return nil, fmt.Errorf("datatree: images: %s appears twice", im.Path)
		}
		parent := byPath[parentPath]
		if parent == nil {
			return nil, fmt.Errorf("datatree: images: %s comes before its parent %s", im.Path, parentPath)
		}
		n := mk(im, parent, name)
		t.link(n, len(im.Path))
		byPath[im.Path] = n
	}
	if q := t.scanQuotas(); len(q) > 0 {
		t.quotas = q
	}
	t.digest = t.computeDigest()
	return t, nil
}

// Images calls visit for every node, parents before children and children
// in name order, stopping at the first error visit returns. It holds the
// read lock meanwhile, so writes wait. ACL and Data are the tree's own:
// visit must not change them.
func (t *Tree) Images(visit func(im *NodeImage) error) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var err error
	t.forEachSorted(func(n *node) {
		if err != nil {
			return
		}
		im := NodeImage{
			Path: n.path(), Data: n.bytes(), ACL: t.aclOf(n),
			Czxid: n.stat.czxid, Mzxid: n.stat.mzxid, Pzxid: n.stat.pzxid,
			Ctime: n.stat.ctime, Mtime: n.stat.mtime, EphemeralOwner: n.stat.ephemeralOwner,
			Version: n.stat.version, Cversion: n.stat.cversion, Aversion: n.aversion,
		}
		err = visit(&im)
	})
	return err
}

// RecountQuotas recounts every quota'd subtree into its zookeeper_stats
// node, as ZooKeeper's setupQuota does whenever it loads a database.
// Importers call it once the tree is complete.
func (t *Tree) RecountQuotas() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.quotas = nil
	if q := t.scanQuotas(); len(q) > 0 {
		t.quotas = q
	}
	w := &writer{t: t, tx: &Txn{}}
	for target := range t.quotas {
		w.quotaRecount(target)
	}
}
