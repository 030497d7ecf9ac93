package main

import (
	"fmt"
	"strings"

	"github.com/zkd/zkd/jute"
)

// openACL is ZooDefs.Ids.OPEN_ACL_UNSAFE, the ACL create uses when none is
// given: world:anyone with every permission.
var openACL = []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}

// parseACL parses zkCli's ACL argument: comma-separated scheme:id:perms
// entries, where the id runs from the first to the last colon (so
// digest:user:hash:rw has id user:hash and auth::cdrwa an empty id). Like
// zkCli's AclParser it skips malformed entries and unknown permission
// letters, returning the lines zkCli prints for them on stderr; the caller
// decides what an empty result means.
func parseACL(s string) ([]jute.ACL, []string) {
	var acls []jute.ACL
	var warnings []string
	for _, a := range strings.Split(s, ",") {
		first := strings.IndexByte(a, ':')
		last := strings.LastIndexByte(a, ':')
		if first == -1 || first == last {
			warnings = append(warnings, a+" does not have the form scheme:id:perm")
			continue
		}
		perms, w := parsePerms(a[last+1:])
		warnings = append(warnings, w...)
		acls = append(acls, jute.ACL{
			Perms: perms,
			Id:    jute.Id{Scheme: a[:first], Id: a[first+1 : last]},
		})
	}
	return acls, warnings
}

// parsePerms turns permission letters (r w c d a, in any order) into a
// permission mask; each unknown letter is skipped with a warning.
func parsePerms(s string) (int32, []string) {
	var perms int32
	var warnings []string
	for _, c := range s {
		switch c {
		case 'r':
			perms |= jute.PermRead
		case 'w':
			perms |= jute.PermWrite
		case 'c':
			perms |= jute.PermCreate
		case 'd':
			perms |= jute.PermDelete
		case 'a':
			perms |= jute.PermAdmin
		default:
			warnings = append(warnings, fmt.Sprintf("Unknown perm type: %c", c))
		}
	}
	return perms, warnings
}

// permString renders a permission mask as zkCli does, in the order c d r w a.
func permString(perms int32) string {
	var b strings.Builder
	for _, p := range []struct {
		bit int32
		c   byte
	}{{jute.PermCreate, 'c'}, {jute.PermDelete, 'd'}, {jute.PermRead, 'r'}, {jute.PermWrite, 'w'}, {jute.PermAdmin, 'a'}} {
		if perms&p.bit != 0 {
			b.WriteByte(p.c)
		}
	}
	return b.String()
}
