package datatree

import (
	"crypto/sha1"
	"encoding/base64"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/zkd/zkd/jute"
)

// Well-known ACL lists (ZooDefs.Ids).
var (
	// OpenACLUnsafe gives everyone every permission.
	OpenACLUnsafe = []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}
	// ReadACLUnsafe lets everyone read.
	ReadACLUnsafe = []jute.ACL{{Perms: jute.PermRead, Id: jute.Id{Scheme: "world", Id: "anyone"}}}
	// CreatorAllACL gives every permission to the creator's authenticated
	// identities (the "auth" scheme is expanded at create/setACL time).
	CreatorAllACL = []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "auth", Id: ""}}}
)

// SuperID is the identity that passes every ACL check; the server adds it to
// a connection's auth once it authenticated with the configured super digest.
var SuperID = jute.Id{Scheme: "super", Id: ""}

// DigestID returns the digest-scheme id for user and password as ZooKeeper's
// DigestAuthenticationProvider computes it: user:base64(sha1("user:password")).
// The server uses it for addauth digest; ACLs hold the same form.
func DigestID(user, password string) string {
	sum := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// aclEntry is one interned ACL list, shared by every node that uses it, as
// in ZooKeeper's ReferenceCountedACLCache.
type aclEntry struct {
	acls []jute.ACL
	key  string
	refs int
}

// aclRef numbers an interned list in its cache: a node holds 4 bytes where
// a pointer would take 8 (ZooKeeper's nodes likewise hold a long index).
type aclRef uint32

// noACL is no entry.
const noACL = ^aclRef(0)

// aclCache interns ACL lists by their encoding.
type aclCache struct {
	byKey   map[string]aclRef
	entries []*aclEntry // by ref; nil where free
	free    []aclRef    // refs of nil entries, for reuse
	last    aclRef      // fast path: the most recently interned list, or noACL
}

func newACLCache() aclCache { return aclCache{byKey: make(map[string]aclRef), last: noACL} }

func aclsEqual(a, b []jute.ACL) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func aclKey(acls []jute.ACL) string {
	e := jute.NewEncoder(make([]byte, 0, 64))
	e.WriteACLs(acls)
	return string(e.Bytes())
}

// get returns the entry numbered ref, which must be interned.
func (c *aclCache) get(ref aclRef) *aclEntry { return c.entries[ref] }

// intern returns the shared entry for acls with one more reference. acls is
// copied if a new entry is made.
func (c *aclCache) intern(acls []jute.ACL) aclRef {
	if c.last != noACL {
		if l := c.entries[c.last]; l.refs > 0 && aclsEqual(l.acls, acls) {
			l.refs++
			return c.last
		}
	}
	key := aclKey(acls)
	ref, ok := c.byKey[key]
	if !ok {
		en := &aclEntry{acls: append([]jute.ACL(nil), acls...), key: key}
		if n := len(c.free); n > 0 {
			ref = c.free[n-1]
			c.free = c.free[:n-1]
			c.entries[ref] = en
		} else {
			ref = aclRef(len(c.entries))
			c.entries = append(c.entries, en)
		}
		c.byKey[key] = ref
	}
	c.entries[ref].refs++
	c.last = ref
	return ref
}

// retain adds a reference to an interned entry.
func (c *aclCache) retain(ref aclRef) { c.entries[ref].refs++ }

// release drops one reference and forgets the entry at zero.
func (c *aclCache) release(ref aclRef) {
	en := c.entries[ref]
	en.refs--
	if en.refs <= 0 {
		delete(c.byKey, en.key)
		c.entries[ref] = nil
		c.free = append(c.free, ref)
		if c.last == ref {
			c.last = noACL
		}
	}
}

// aclOf returns n's ACL list, shared: callers must not change it.
// Permits reports whether auth holds perm on the znode at path, as the
// write that follows would check it; false when there is no such znode.
// Reconfig asks it of /zookeeper/config before deciding further.
func (t *Tree) Permits(path string, perm int32, auth []jute.Id) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.lookup(path)
	return n != nil && checkACL(t.aclOf(n), perm, auth)
}

func (t *Tree) aclOf(n *node) []jute.ACL { return t.acls.entries[n.acl].acls }

// fixupACL validates acls and expands the "auth" scheme into the caller's
// authenticated identities, as PrepRequestProcessor.fixupACL does:
// duplicates are removed first, an empty list is invalid, world must be
// "anyone", auth needs at least one authenticated id (digest or an extra
// scheme), digest ids must be "user:hash", ip ids an address with optional
// /bits, and unknown schemes are invalid.
func (t *Tree) fixupACL(acls []jute.ACL, auth []jute.Id) ([]jute.ACL, bool) {
	if t.plainACL(acls) {
		return acls, true
	}
	uniq := make([]jute.ACL, 0, len(acls))
	for _, a := range acls {
		dup := false
		for _, u := range uniq {
			if u == a {
				dup = true
				break
			}
		}
		if !dup {
			uniq = append(uniq, a)
		}
	}
	if len(uniq) == 0 {
		return nil, false
	}
	rv := uniq[:0:0]
	for _, a := range uniq {
		switch {
		case a.Id.Scheme == "world" && a.Id.Id == "anyone":
			rv = append(rv, a)
		case a.Id.Scheme == "auth":
			valid := false
			for _, id := range auth {
				if t.authenticatedScheme(id.Scheme) {
					valid = true
					rv = append(rv, jute.ACL{Perms: a.Perms, Id: id})
				}
			}
			if !valid {
				return nil, false
			}
		default:
			if !t.validID(a.Id) {
				return nil, false
			}
			rv = append(rv, a)
		}
	}
	return rv, true
}

// plainACL reports whether acls is already valid and needs no rewriting (no
// duplicates, no auth scheme), the common case that needs no allocation.
func (t *Tree) plainACL(acls []jute.ACL) bool {
	if len(acls) == 0 || len(acls) > 8 {
		return false
	}
	for i, a := range acls {
		if a.Id.Scheme == "auth" {
			return false
		}
		if !(a.Id.Scheme == "world" && a.Id.Id == "anyone") && !t.validID(a.Id) {
			return false
		}
		for _, b := range acls[:i] {
			if a == b {
				return false
			}
		}
	}
	return true
}

// authenticatedScheme reports whether ids of scheme count as authenticated
// identities for the "auth" ACL scheme (ServerAuthenticationProvider
// isAuthenticated): digest and the configured extra schemes, not ip.
func (t *Tree) authenticatedScheme(scheme string) bool {
	if scheme == "digest" {
		return true
	}
	for _, s := range t.cfg.ExtraAuthSchemes {
		if s == scheme {
			return true
		}
	}
	return false
}

// validID is the providers' isValid.
func (t *Tree) validID(id jute.Id) bool {
	switch id.Scheme {
	case "digest":
		// Java's id.split(":").length == 2: exactly one ':' and a non-empty
		// part after it (a trailing empty part is dropped by split).
		i := strings.IndexByte(id.Id, ':')
		return i >= 0 && i < len(id.Id)-1 && strings.IndexByte(id.Id[i+1:], ':') < 0
	case "ip":
		_, _, ok := parseIPACL(id.Id)
		return ok
	}
	for _, s := range t.cfg.ExtraAuthSchemes {
		if s == id.Scheme {
			return true
		}
	}
	return false
}

// parseIPACL parses "addr[/bits]" as IPAuthenticationProvider does.
func parseIPACL(expr string) (netip.Addr, int, bool) {
	addrPart, bitsPart, hasBits := strings.Cut(expr, "/")
	addr, ok := parseIPv4(addrPart)
	if !ok {
		return netip.Addr{}, 0, false
	}
	bits := addr.BitLen()
	if hasBits {
		b, err := strconv.Atoi(bitsPart)
		if err != nil || b < 0 || b > addr.BitLen() {
			return netip.Addr{}, 0, false
		}
		bits = b
	}
	return addr, bits, true
}

// parseIPv4 parses a dotted quad the way ZooKeeper 3.8's v4addr2Bytes does:
// four decimal parts 0..255 (Integer.parseInt, so leading zeros and a '+'
// sign are accepted).
func parseIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > 255 || p == "" {
			return netip.Addr{}, false
		}
		b[i] = byte(v)
	}
	return netip.AddrFrom4(b), true
}

// matchID is the providers' matches(id, aclExpr) for an id of the same scheme.
func matchID(scheme, id, expr string) bool {
	if scheme == "sasl" && id == "super" {
		// SASLAuthenticationProvider.matches: the SASL user "super"
		// matches every sasl ACL entry (checked against ZooKeeper 3.8).
		return true
	}
	if scheme != "ip" {
		return id == expr
	}
	aclAddr, bits, ok := parseIPACL(expr)
	if !ok {
		return false
	}
	remote, ok := parseIPv4(id)
	if !ok {
		return false
	}
	p1, err1 := aclAddr.Prefix(bits)
	p2, err2 := remote.Prefix(bits)
	return err1 == nil && err2 == nil && p1 == p2
}

// checkACL is ZooKeeperServer.checkACL: an empty list or a super identity
// passes; otherwise some entry granting one of perm's bits must be
// world:anyone or match one of auth's ids of the same scheme.
func checkACL(acls []jute.ACL, perm int32, auth []jute.Id) bool {
	if len(acls) == 0 {
		return true
	}
	for _, id := range auth {
		if id.Scheme == "super" {
			return true
		}
	}
	for _, a := range acls {
		if a.Perms&perm == 0 {
			continue
		}
		if a.Id.Scheme == "world" && a.Id.Id == "anyone" {
			return true
		}
		for _, id := range auth {
			if id.Scheme == a.Id.Scheme && matchID(id.Scheme, id.Id, a.Id.Id) {
				return true
			}
		}
	}
	return false
}

var digestRedact = regexp.MustCompile(":.*")

// redactDigests hides the hash part of digest ids (getACL without ADMIN),
// as FinalRequestProcessor does with replaceAll(":.*", ":x").
func redactDigests(acls []jute.ACL) []jute.ACL {
	out := make([]jute.ACL, len(acls))
	for i, a := range acls {
		if a.Id.Scheme == "digest" {
			a.Id.Id = digestRedact.ReplaceAllString(a.Id.Id, ":x")
		}
		out[i] = a
	}
	return out
}
