// Package aclops is the table of every client operation whose answer a
// znode's ACL may decide, with the permission ZooKeeper 3.8 requires for
// each, and Check, which runs the table for an ACL's owner and for a
// client without that identity over nodes granting the owner all
// permissions or a single one. compat/zktls (x509) and compat/sasl (sasl)
// run it against zkd and ZooKeeper alike, so the table is checked against
// the real server on every run.
package aclops

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zkd/zkd/compat/zkwire"
	"github.com/zkd/zkd/jute"
)

// op is one row: run does the operation as the client named who on node
// n and describes its outcome; need is the permission mask of which
// ZooKeeper requires any one bit (0: no ACL check); ok and denied are the
// outcomes with and without it.
type op struct {
	name       string
	need       int32
	ok, denied []string
	run        func(c *zkwire.Client, n, who string) ([]string, error)
}

var (
	okRes     = []string{"ok"}
	noAuthRes = []string{jute.CodeNoAuth.Error()}
)

// outcome turns a call's error into its code's text; other errors
// (connection loss, bad replies) are returned.
func outcome(err error) ([]string, error) {
	var code jute.Code
	switch {
	case err == nil:
		return okRes, nil
	case errors.As(err, &code):
		return []string{code.Error()}, nil
	}
	return nil, err
}

// do sends one request on c and describes its outcome.
func do(c *zkwire.Client, opcode int32, req jute.Record) ([]string, error) {
	_, err := c.Call(opcode, req, nil)
	return outcome(err)
}

// multi sends a multi or multiRead request and describes each result:
// "ok", or "error: " and the code of an error result (a multi's ops before
// the failing one get code 0, "error: ok"). A reply header carrying an
// error is described as the other ops are.
func multi(c *zkwire.Client, opcode int32, ops ...jute.MultiOp) ([]string, error) {
	var resp jute.MultiResponse
	if _, err := c.Call(opcode, &jute.MultiRequest{Ops: ops}, &resp); err != nil {
		return outcome(err)
	}
	var res []string
	for _, r := range resp.Results {
		if r.Type == jute.OpError {
			res = append(res, "error: "+r.Err.Error())
		} else {
			res = append(res, "ok")
		}
	}
	return res, nil
}

// ops is the table: acl is the ACL of the children it creates, nodeACL
// the ACL setACL sets (the node's own, so later rows see the same node).
// Each op's request is built per node and client, so a client's create
// and delete touch children of its own.
func ops(acl, nodeACL []jute.ACL) []op {
	return []op{
		{name: "getData", need: jute.PermRead, ok: okRes, denied: noAuthRes,
			run: func(c *zkwire.Client, n, _ string) ([]string, error) {
				return do(c, jute.OpGetData, &jute.GetDataRequest{Path: n})
			}},
		{name: "exists", ok: okRes,
			run: func(c *zkwire.Client, n, _ string) ([]string, error) {
				return do(c, jute.OpExists, &jute.ExistsRequest{Path: n})
			}},
		{name: "getChildren", need: jute.PermRead, ok: okRes, denied: noAuthRes,
			run: func(c *zkwire.Client, n, _ string) ([]string, error) {
				return do(c, jute.OpGetChildren, &jute.GetChildrenRequest{Path: n})
			}},
		{name: "getChildren2", need: jute.PermRead, ok: okRes, denied: noAuthRes,
			run: func(c *zkwire.Client, n, _ string) ([]string, error) {
				return do(c, jute.OpGetChildren2, &jute.GetChildren2Request{Path: n})
			}},
		{name: "getAllChildrenNumber", need: jute.PermRead, ok: okRes, denied: noAuthRes,
			run: func(c *zkwire.Client, n, _ string) ([]string, error) {
				return do(c, jute.OpGetAllChildrenNumber, &jute.GetAllChildrenNumberRequest{Path: n})
			}},
		// ZooKeeper 3.8 answers getACL to READ or ADMIN.
		{name: "getACL", need: jute.PermRead | jute.PermAdmin, ok: okRes, denied: noAuthRes,
			run: func(c *zkwire.Client, n, _ string) ([]string, error) {
				return do(c, jute.OpGetACL, &jute.GetACLRequest{Path: n})
			}},
		{name: "setACL", need: jute.PermAdmin, ok: okRes, denied: noAuthRes,
			run: func(c *zkwire.Client, n, _ string) ([]string, error) {
				return do(c, jute.OpSetACL, &jute.SetACLRequest{Path: n, Acl: nodeACL, Version: -1})
			}},
		{name: "setData", need: jute.PermWrite, ok: okRes, denied: noAuthRes,
			run: func(c *zkwire.Client, n, who string) ([]string, error) {
				return do(c, jute.OpSetData, &jute.SetDataRequest{Path: n, Data: []byte(who), Version: -1})
			}},
		{name: "create child", need: jute.PermCreate, ok: okRes, denied: noAuthRes,
			run: func(c *zkwire.Client, n, who string) ([]string, error) {
				return do(c, jute.OpCreate, &jute.CreateRequest{Path: n + "/c-" + who, Acl: acl})
			}},
		{name: "delete child", need: jute.PermDelete, ok: okRes, denied: noAuthRes,
			run: func(c *zkwire.Client, n, who string) ([]string, error) {
				return do(c, jute.OpDelete, &jute.DeleteRequest{Path: n + "/d-" + who, Version: -1})
			}},
		// A multi's reply header carries no error: its results do.
		{name: "checkVersion in multi", need: jute.PermRead, ok: okRes, denied: []string{"error: " + jute.CodeNoAuth.Error()},
			run: func(c *zkwire.Client, n, _ string) ([]string, error) {
				return multi(c, jute.OpMulti, jute.MultiOp{Type: jute.OpCheck, Req: &jute.CheckVersionRequest{Path: n, Version: -1}})
			}},
		// A write on an open node, then one the ACL decides: when the
		// second is refused the first must not be applied either.
		{name: "multi", need: jute.PermWrite,
			ok:     []string{"ok", "ok", "open node written"},
			denied: []string{"error: ok", "error: " + jute.CodeNoAuth.Error(), "open node not written"},
			run: func(c *zkwire.Client, n, who string) ([]string, error) {
				open, data := n+"-open", []byte(n+" multi by "+who)
				res, err := multi(c, jute.OpMulti,
					jute.MultiOp{Type: jute.OpSetData, Req: &jute.SetDataRequest{Path: open, Data: data, Version: -1}},
					jute.MultiOp{Type: jute.OpSetData, Req: &jute.SetDataRequest{Path: n, Data: data, Version: -1}})
				if err != nil {
					return nil, err
				}
				var got jute.GetDataResponse
				if _, err := c.Call(jute.OpGetData, &jute.GetDataRequest{Path: open}, &got); err != nil {
					return nil, fmt.Errorf("getData %s: %w", open, err)
				}
				if string(got.Data) == string(data) {
					return append(res, "open node written"), nil
				}
				return append(res, "open node not written"), nil
			}},
		// multiRead answers each read on its own.
		{name: "multiRead", need: jute.PermRead,
			ok:     []string{"ok", "ok", "ok"},
			denied: []string{"error: " + jute.CodeNoAuth.Error(), "error: " + jute.CodeNoAuth.Error(), "ok"},
			run: func(c *zkwire.Client, n, _ string) ([]string, error) {
				return multi(c, jute.OpMultiRead,
					jute.MultiOp{Type: jute.OpGetData, Req: &jute.GetDataRequest{Path: n}},
					jute.MultiOp{Type: jute.OpGetChildren, Req: &jute.GetChildrenRequest{Path: n}},
					jute.MultiOp{Type: jute.OpGetData, Req: &jute.GetDataRequest{Path: n + "-open"}})
			}},
		{name: "getEphemerals", ok: okRes,
			run: func(c *zkwire.Client, n, _ string) ([]string, error) {
				return do(c, jute.OpGetEphemerals, &jute.GetEphemeralsRequest{PrefixPath: n})
			}},
		// ZooKeeper 3.8 checks no ACL for addWatch.
		{name: "addWatch", ok: okRes,
			run: func(c *zkwire.Client, n, _ string) ([]string, error) {
				return do(c, jute.OpAddWatch, &jute.AddWatchRequest{Path: n, Mode: 0})
			}},
		{name: "sync", ok: okRes,
			run: func(c *zkwire.Client, n, _ string) ([]string, error) {
				return do(c, jute.OpSync, &jute.SyncRequest{Path: n})
			}},
	}
}

var perms = []struct {
	name string
	perm int32
}{
	{"ALL", jute.PermAll},
	{"READ", jute.PermRead},
	{"WRITE", jute.PermWrite},
	{"CREATE", jute.PermCreate},
	{"DELETE", jute.PermDelete},
	{"ADMIN", jute.PermAdmin},
}

var openACL = []jute.ACL{{Perms: jute.PermAll, Id: jute.Id{Scheme: "world", Id: "anyone"}}}

// Client is a client Check runs the table as, named in failures and in
// the children it creates and deletes.
type Client struct {
	Name string
	C    *zkwire.Client
}

// Check makes, under root (which must not exist), one node per
// permission (all of them, then each alone) whose ACL grants it only to
// id, which owner is authenticated as and no client of others is, and
// asserts every op's outcome for each client on each node.
func Check(t *testing.T, root string, id jute.Id, owner *zkwire.Client, others ...Client) {
	t.Helper()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := owner.Call(jute.OpCreate, &jute.CreateRequest{Path: root, Acl: openACL}, nil)
	must("create "+root, err)
	clients := append([]Client{{"owner", owner}}, others...)
	for _, p := range perms {
		n := root + "/" + strings.ToLower(p.name)
		// Made open, given children to delete, then closed.
		paths := []string{n, n + "-open"}
		for _, cl := range clients {
			paths = append(paths, n+"/d-"+cl.Name)
		}
		for _, path := range paths {
			_, err := owner.Call(jute.OpCreate, &jute.CreateRequest{Path: path, Acl: openACL}, nil)
			must("create "+path, err)
		}
		_, err := owner.Call(jute.OpSetACL, &jute.SetACLRequest{Path: n, Acl: []jute.ACL{{Perms: p.perm, Id: id}}, Version: -1}, nil)
		must("setACL "+n, err)
	}
	for _, p := range perms {
		n := root + "/" + strings.ToLower(p.name)
		for _, o := range ops([]jute.ACL{{Perms: jute.PermAll, Id: id}}, []jute.ACL{{Perms: p.perm, Id: id}}) {
			for i, cl := range clients {
				want := o.ok
				if o.need != 0 && (i > 0 || p.perm&o.need == 0) {
					want = o.denied
				}
				got, err := o.run(cl.C, n, cl.Name)
				must(fmt.Sprintf("%s by %s on %s", o.name, cl.Name, n), err)
				if !slices.Equal(got, want) {
					t.Errorf("%s by %s on a node granting %s to %s:%s: got %q, want %q",
						o.name, cl.Name, p.name, id.Scheme, id.Id, got, want)
				}
			}
		}
	}
}
