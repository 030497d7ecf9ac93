package corners

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zkd/zkd/compat/zkproc"
	"github.com/zkd/zkd/compat/zkwire"
	"github.com/zkd/zkd/jute"
)

// TestIntegration_AuthACLOrder pins the order of the ACL entries an "auth"
// ACL expands to, and of whoAmI's answer, when the server receives the
// digest auth packets in a known order. ZooKeeper 3.8's order is
// deterministic for a given arrival order: the connection's authInfo
// hash-set order, insertion order within a bucket; ids here share the ip
// id's bucket (zz, q1), so the arrival order shows. Through zkCli the
// arrival order itself is not fixed: addauth commands run before the
// session is connected are re-sent by the Java client's primeConnection in
// reverse (ClientCnxn queues authInfo with addFirst), so zkclish compares
// those ACLs as sets.
func TestIntegration_AuthACLOrder(t *testing.T) {
	cases := []struct {
		auths     []string // user:password, sent one at a time, each awaited
		acl, whom string   // recorded from ZooKeeper 3.8
	}{
		{[]string{"mike:a", "b:b", "zz:c", "anna:c", "q1:c"}, "b anna mike zz q1", "b anna mike 127.0.0.1 zz q1"},
		{[]string{"q1:c", "anna:c", "zz:c", "b:b", "mike:a"}, "b anna mike q1 zz", "b anna mike 127.0.0.1 q1 zz"},
		{[]string{"zz:c", "q1:c"}, "zz q1", "127.0.0.1 zz q1"},
		{[]string{"q1:c", "zz:c"}, "q1 zz", "127.0.0.1 q1 zz"},
		{[]string{"b:b", "b:b", "mike:a"}, "b mike", "b mike 127.0.0.1"},
	}
	zk := zkproc.StartZooKeeper(t, zkproc.Options{})
	zkd := zkproc.StartZkd(t, zkproc.Options{})
	for i, tc := range cases {
		t.Run(strings.Join(tc.auths, ","), func(t *testing.T) {
			for _, s := range []*zkproc.Server{zk, zkd} {
				acl, whom := authOrder(t, s.Addr, fmt.Sprintf("/auth%d", i), tc.auths)
				if acl != tc.acl || whom != tc.whom {
					t.Errorf("%s: getACL lists %q and whoAmI %q; ZooKeeper 3.8 recorded %q and %q", s.Kind, acl, whom, tc.acl, tc.whom)
				}
			}
		})
	}
}

// authOrder adds the digest ids on a new session, creates path with the
// ACL auth:cdrwa and returns the users of its getACL and of whoAmI.
func authOrder(t *testing.T, addr, path string, auths []string) (acl, whom string) {
	t.Helper()
	c, err := zkwire.Dial(addr, zkwire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, a := range auths {
		if _, err := c.CallXid(jute.XidAuth, jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: []byte(a)}, nil); err != nil {
			t.Fatalf("addauth digest %s on %s: %v", a, addr, err)
		}
	}
	if _, err := c.Call(jute.OpCreate, &jute.CreateRequest{Path: path, Acl: []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "auth"}}}}, nil); err != nil {
		t.Fatalf("create %s on %s: %v", path, addr, err)
	}
	var ga jute.GetACLResponse
	if _, err := c.Call(jute.OpGetACL, &jute.GetACLRequest{Path: path}, &ga); err != nil {
		t.Fatalf("getACL %s on %s: %v", path, addr, err)
	}
	var users []string
	for _, a := range ga.Acl {
		u, _, _ := strings.Cut(a.Id.Id, ":")
		users = append(users, u)
	}
	var who jute.WhoAmIResponse
	if _, err := c.Call(jute.OpWhoAmI, nil, &who); err != nil {
		t.Fatalf("whoAmI on %s: %v", addr, err)
	}
	var ids []string
	for _, ci := range who.ClientInfo {
		ids = append(ids, ci.User)
	}
	return strings.Join(users, " "), strings.Join(ids, " ")
}
