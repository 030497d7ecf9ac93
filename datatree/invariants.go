package datatree

import (
	"fmt"

	"github.com/zkd/zkd/jute"
)

// CheckInvariants verifies the tree's internal consistency and returns the
// first violation: parent links and child names, node and data-size
// counters, the ephemeral, container and TTL indexes, ACL reference counts,
// and the watch tables' counters. It walks everything and is meant for
// tests (zab's included).
func (t *Tree) CheckInvariants() error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	nodes := 0
	var size int64
	aclRefs := make(map[aclRef]int)
	eph := make(map[int64]int)
	conts, ttls := 0, 0
	var err error
	var walk func(n *node, path string)
	walk = func(n *node, path string) {
		if err != nil {
			return
		}
		nodes++
		p := path
		if p == "" {
			p = "/"
		}
		size += int64(len(p) + n.dataLen())
		aclRefs[n.acl]++
		if n.kids != nil && n.kids.size() == 0 {
			err = fmt.Errorf("datatree: %s: empty non-nil child set", p)
			return
		}
		switch t.ephemeralType(n.stat.ephemeralOwner) {
		case typeContainer:
			conts++
			if _, ok := t.containers[n]; !ok {
				err = fmt.Errorf("datatree: %s: container not indexed", p)
			}
		case typeTTL:
			ttls++
			if _, ok := t.ttls[n]; !ok {
				err = fmt.Errorf("datatree: %s: ttl node not indexed", p)
			}
		case typeNormal, typeInvalid:
			eph[n.stat.ephemeralOwner]++
			if _, ok := t.ephemerals[n.stat.ephemeralOwner][n]; !ok {
				err = fmt.Errorf("datatree: %s: ephemeral not indexed", p)
			}
			if n.kids.size() > 0 {
				err = fmt.Errorf("datatree: %s: ephemeral has children", p)
			}
		}
		if got := n.path(); got != p {
			err = fmt.Errorf("datatree: node path %q, walked as %q", got, p)
		}
		held := 0
		for c := range n.kids.all() {
			held++
			name := c.name()
			if c.parent != n || n.kids.get(name) != c {
				err = fmt.Errorf("datatree: %s: child %q badly linked", p, name)
				return
			}
			walk(c, path+"/"+name)
		}
		if held != n.kids.size() {
			err = fmt.Errorf("datatree: %s: child set counts %d, holds %d", p, n.kids.size(), held)
		}
	}
	walk(t.root, "")
	if err != nil {
		return err
	}
	if nodes != t.nodes {
		return fmt.Errorf("datatree: node count %d, walked %d", t.nodes, nodes)
	}
	if size != t.dataSize {
		return fmt.Errorf("datatree: data size %d, walked %d", t.dataSize, size)
	}
	if conts != len(t.containers) || ttls != len(t.ttls) {
		return fmt.Errorf("datatree: %d containers and %d ttls indexed, walked %d and %d", len(t.containers), len(t.ttls), conts, ttls)
	}
	for owner, set := range t.ephemerals {
		if len(set) == 0 || len(set) != eph[owner] {
			return fmt.Errorf("datatree: session %#x has %d indexed ephemerals, walked %d", owner, len(set), eph[owner])
		}
	}
	if len(t.ephemerals) != len(eph) {
		return fmt.Errorf("datatree: %d sessions indexed, walked %d", len(t.ephemerals), len(eph))
	}
	for ref, refs := range aclRefs {
		en := t.acls.get(ref)
		if en == nil {
			return fmt.Errorf("datatree: acl #%d used by %d nodes but free", ref, refs)
		}
		if en.refs != refs {
			return fmt.Errorf("datatree: acl %v has %d refs, used %d times", en.acls, en.refs, refs)
		}
		if r, ok := t.acls.byKey[en.key]; !ok || r != ref {
			return fmt.Errorf("datatree: acl %v not interned", en.acls)
		}
	}
	if len(t.acls.byKey) != len(aclRefs) {
		return fmt.Errorf("datatree: %d interned acls, %d used", len(t.acls.byKey), len(aclRefs))
	}
	if q := t.scanQuotas(); len(q) != len(t.quotas) {
		return fmt.Errorf("datatree: %d quota paths tracked, %d limit nodes", len(t.quotas), len(q))
	} else {
		for p := range q {
			if _, ok := t.quotas[p]; !ok {
				return fmt.Errorf("datatree: quota on %s not tracked", p)
			}
		}
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	for _, wt := range []*watchTable{&t.dataW, &t.childW} {
		count, rec, back := 0, 0, 0
		for p, ws := range wt.byPath {
			if ws.len() == 0 || (ws.more != nil && len(ws.more) == 0) {
				return fmt.Errorf("datatree: empty watch set for %s", p)
			}
			if _, dup := ws.more[ws.w]; dup {
				return fmt.Errorf("datatree: watcher twice in the set of %s", p)
			}
			var missing bool
			ws.each(func(w Watcher, mode int32) {
				count++
				if mode == jute.AddWatchModePersistentRecursive {
					rec++
				}
				if _, ok := wt.byWatcher[w][p]; !ok {
					missing = true
				}
			})
			if missing {
				return fmt.Errorf("datatree: watch on %s missing from watcher index", p)
			}
		}
		for _, ps := range wt.byWatcher {
			back += len(ps)
		}
		if count != wt.count || rec != wt.recursive || back != count {
			return fmt.Errorf("datatree: watch counters %d/%d, walked %d/%d (index %d)", wt.count, wt.recursive, count, rec, back)
		}
	}
	return nil
}
