package datatree

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Quota bookkeeping as ZooKeeper 3.8's DataTree does it: a node named
// zookeeper_limits under /zookeeper/quota/<path> marks <path> as having a
// quota; creating /zookeeper/quota/<path>/zookeeper_stats fills it with the
// subtree's count and bytes, and every later create, delete and setData in
// the subtree updates those figures in place (the stats node's own Stat is
// not touched). Hard limits are enforced only with Config.EnforceQuota
// (zookeeper.enforceQuota, off by default), as checkQuota does. Malformed
// stats data, which makes ZooKeeper's apply fail, is left unchanged.
const (
	quotaRoot      = "/zookeeper/quota"
	quotaLimitNode = "zookeeper_limits"
	quotaStatNode  = "zookeeper_stats"
)

// quotaTarget returns the quota'd path a node under parentPath configures
// (trimQuotaPath), or "" when parentPath is not inside /zookeeper/quota.
func quotaTarget(parentPath string) string {
	if !strings.HasPrefix(parentPath, quotaRoot+"/") {
		return ""
	}
	return parentPath[len(quotaRoot):]
}

// quotaPrefix returns the longest quota'd prefix of path (the path itself
// included), or "" (getMaxPrefixWithQuota).
func (t *Tree) quotaPrefix(path string) string {
	if len(t.quotas) == 0 {
		return ""
	}
	for p := path; len(p) > 1; {
		if _, ok := t.quotas[p]; ok {
			return p
		}
		i := strings.LastIndexByte(p, '/')
		if i <= 0 {
			break
		}
		p = p[:i]
	}
	return ""
}

var statsSeparator = regexp.MustCompile("[,;]+")

// parseStatsTrack reads StatsTrack's "key=value" pairs; ok is false where
// ZooKeeper's parser would throw.
func parseStatsTrack(s string) (map[string]int64, bool) {
	m := map[string]int64{}
	if s == "" {
		return m, true
	}
	pairs := statsSeparator.Split(s, -1)
	for len(pairs) > 0 && pairs[len(pairs)-1] == "" {
		pairs = pairs[:len(pairs)-1]
	}
	for _, p := range pairs {
		kv := strings.Split(p, "=")
		for len(kv) > 0 && kv[len(kv)-1] == "" {
			kv = kv[:len(kv)-1]
		}
		if len(kv) < 2 {
			return nil, false
		}
		val := kv[1]
		if val == "" {
			val = "-1"
		}
		v, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return nil, false
		}
		m[kv[0]] = v
	}
	return m, true
}

func statsValue(m map[string]int64, k string) int64 {
	if v, ok := m[k]; ok {
		return v
	}
	return -1
}

// formatStatsTrack is StatsTrack.toString of 3.8.0, quirks included: count
// and bytes first, then, after a stray "=", the other keys sorted, each
// preceded by ";".
func formatStatsTrack(m map[string]int64) string {
	var b strings.Builder
	b.WriteString("count=")
	b.WriteString(strconv.FormatInt(statsValue(m, "count"), 10))
	b.WriteString(",bytes=")
	b.WriteString(strconv.FormatInt(statsValue(m, "bytes"), 10))
	var others []string
	for k := range m {
		if k != "count" && k != "bytes" {
			others = append(others, k)
		}
	}
	if len(others) > 0 {
		b.WriteByte('=')
		slices.Sort(others)
		for _, k := range others {
			b.WriteByte(';')
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(strconv.FormatInt(m[k], 10))
		}
	}
	return b.String()
}

// setDataInPlace replaces n's data without touching its Stat (undoable in
// a multi). Its nodes are quota statistics under /zookeeper/, outside the
// tree digest.
func (w *writer) setDataInPlace(n *node, data []byte) {
	t := w.t
	old, oldLen := n.nd, n.dataLen()
	n.setData(data)
	t.dataSize += int64(len(data) - oldLen)
	if w.multi {
		w.undo = append(w.undo, func() {
			t.dataSize -= int64(n.dataLen() - oldLen)
			n.nd = old
		})
	}
}

// quotaStat is updateQuotaStat: adjust prefix's stats node.
func (w *writer) quotaStat(prefix string, bytesDiff, countDiff int64) {
	n := w.t.lookup(quotaRoot + prefix + "/" + quotaStatNode)
	if n == nil {
		return
	}
	m, ok := parseStatsTrack(n.data())
	if !ok {
		return
	}
	m["count"] = statsValue(m, "count") + countDiff
	m["bytes"] = statsValue(m, "bytes") + bytesDiff
	w.setDataInPlace(n, []byte(formatStatsTrack(m)))
}

// quotaRecount is updateQuotaForPath: recount prefix's subtree into its
// stats node.
func (w *writer) quotaRecount(prefix string) {
	t := w.t
	sn := t.lookup(quotaRoot + prefix + "/" + quotaStatNode)
	if sn == nil {
		return
	}
	var count, bytes int64
	if root := t.lookup(prefix); root != nil {
		stack := []*node{root}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			count++
			bytes += int64(n.dataLen())
			for c := range n.kids.all() {
				stack = append(stack, c)
			}
		}
	}
	w.setDataInPlace(sn, []byte("count="+strconv.FormatInt(count, 10)+",bytes="+strconv.FormatInt(bytes, 10)))
}

// setQuota marks (on) or unmarks a quota'd path, undoably.
func (w *writer) setQuota(target string, on bool) {
	t := w.t
	if target == "" {
		return
	}
	_, had := t.quotas[target]
	if had == on {
		return
	}
	if on {
		if t.quotas == nil {
			t.quotas = make(map[string]struct{})
		}
		t.quotas[target] = struct{}{}
	} else {
		delete(t.quotas, target)
	}
	if w.multi {
		w.undo = append(w.undo, func() {
			if on {
				delete(t.quotas, target)
			} else {
				t.quotas[target] = struct{}{}
			}
		})
	}
}

// quotaOnCreate runs after a node is linked.
func (w *writer) quotaOnCreate(parentPath, name, path string, dataLen int) {
	if target := quotaTarget(parentPath); target != "" {
		switch name {
		case quotaLimitNode:
			w.setQuota(target, true)
		case quotaStatNode:
			w.quotaRecount(target)
		}
	}
	if prefix := w.t.quotaPrefix(path); prefix != "" {
		w.quotaStat(prefix, int64(dataLen), 1)
	}
}

// quotaOnDelete runs after a node is unlinked.
func (w *writer) quotaOnDelete(parentPath, name, path string, dataLen int) {
	if name == quotaLimitNode {
		w.setQuota(quotaTarget(parentPath), false)
	}
	if prefix := w.t.quotaPrefix(path); prefix != "" {
		w.quotaStat(prefix, -int64(dataLen), -1)
	}
}

// quotaOnSetData runs after a node's data changed by diff bytes.
func (w *writer) quotaOnSetData(path string, diff int) {
	if prefix := w.t.quotaPrefix(path); prefix != "" {
		w.quotaStat(prefix, int64(diff), 0)
	}
}

// scanQuotas lists the quota'd paths by their limit nodes. Callers hold mu.
func (t *Tree) scanQuotas() map[string]struct{} {
	out := map[string]struct{}{}
	qr := t.lookup(quotaRoot)
	if qr == nil {
		return out
	}
	type item struct {
		n    *node
		path string
	}
	stack := []item{{qr, quotaRoot}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for c := range it.n.kids.all() {
			name := c.name()
			if name == quotaLimitNode {
				if target := quotaTarget(it.path); target != "" {
					out[target] = struct{}{}
				}
			}
			stack = append(stack, item{c, it.path + "/" + name})
		}
	}
	return out
}

// checkQuota is ZooKeeperServer.checkQuota: with EnforceQuota, refuse a
// change of bytesDiff bytes and countDiff nodes under path's quota'd prefix
// that takes its stats past a hard limit. Soft limits only warn in
// ZooKeeper; zkd has nothing to log here.
func (t *Tree) checkQuota(path string, bytesDiff, countDiff int64) error {
	if !t.cfg.EnforceQuota {
		return nil
	}
	prefix := t.quotaPrefix(path)
	if prefix == "" {
		return nil
	}
	ln := t.lookup(quotaRoot + prefix + "/" + quotaLimitNode)
	if ln == nil {
		return nil
	}
	limits, ok := parseStatsTrack(ln.data())
	if !ok {
		return nil
	}
	hardCount, hardBytes := statsValue(limits, "countHardLimit"), statsValue(limits, "byteHardLimit")
	checkCount := countDiff != 0 && (statsValue(limits, "count") > -1 || hardCount > -1)
	checkBytes := bytesDiff != 0 && (statsValue(limits, "bytes") > -1 || hardBytes > -1)
	if !checkCount && !checkBytes {
		return nil
	}
	sn := t.lookup(quotaRoot + prefix + "/" + quotaStatNode)
	if sn == nil {
		return nil
	}
	cur, ok := parseStatsTrack(sn.data())
	if !ok {
		return nil
	}
	if checkCount && hardCount > -1 && statsValue(cur, "count")+countDiff > hardCount {
		return pathErr(ErrQuotaExceeded, prefix)
	}
	if checkBytes && hardBytes > -1 && statsValue(cur, "bytes")+bytesDiff > hardBytes {
		return pathErr(ErrQuotaExceeded, prefix)
	}
	return nil
}
