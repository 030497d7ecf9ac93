// Reads: executing a read against the tree in its slot's turn, with the
// watches it sets (execRead, read, setWatches, multiRead).

package server

import (
	"fmt"
	"time"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
)

// execRead runs a read against the tree and queues its reply. While a
// read that sets a watch runs, events on its path are held back until the
// reply is queued, so a client always receives the reply that set a watch
// before that watch's event (go-zk drops an event for a watch it has not
// registered yet). Other events are not held: the tree queues them before
// any reader can see their write, so a client sees an event before a reply
// showing the change.
func (c *conn) execRead(sl *slot) {
	began := time.Now()
	defer c.s.zm.readFinal.ObserveSince(began)
	path, all, hold := watchHold(sl.req)
	if hold {
		c.out.Lock()
		c.out.deferring, c.out.holdPath, c.out.holdAll = true, path, all
		c.out.Unlock()
	}
	body, err := c.read(sl)
	hdr := jute.ReplyHeader{Xid: sl.xid, Zxid: c.s.b.LastZxid(), Err: c.codeFor(sl, err)}
	if err != nil {
		body = nil
	}
	c.account(sl, hdr.Zxid)
	if hdr.Err == jute.CodeConnectionLoss {
		c.dropConnection()
		return
	}
	buf := encodeReplyPooled(hdr, body)
	if c.enqueue(*buf, false, hold) {
		putReplyBuf(buf)
	}
}

// watchHold tells whether req registers a watch and which events to hold
// while it runs: those on path, or all of them.
func watchHold(req jute.Record) (path string, all, hold bool) {
	switch r := req.(type) {
	case *jute.ExistsRequest:
		return r.Path, false, r.Watch
	case *jute.GetDataRequest:
		return r.Path, false, r.Watch
	case *jute.GetChildrenRequest:
		return r.Path, false, r.Watch
	case *jute.GetChildren2Request:
		return r.Path, false, r.Watch
	case *jute.AddWatchRequest:
		return "", true, true
	}
	return "", false, false
}

// watcher returns c as a datatree watcher when watch is set, else nil.
func (c *conn) watcher(watch bool) datatree.Watcher {
	if watch {
		return c
	}
	return nil
}

// read executes a read request and returns its response record.
func (c *conn) read(sl *slot) (jute.Record, error) {
	t := c.s.b.Tree()
	if rec, ok, err := c.fencingRead(t, sl.req); ok {
		return rec, err
	}
	switch r := sl.req.(type) {
	case *jute.ExistsRequest:
		st, err := t.Exists(r.Path, c.watcher(r.Watch))
		if err == nil {
			c.s.zm.noteRead(r.Path, 0)
		}
		return &jute.ExistsResponse{Stat: st}, err
	case *jute.GetDataRequest:
		data, st, err := t.GetData(r.Path, c.authIDs(), c.watcher(r.Watch))
		if err == nil {
			c.s.zm.noteRead(r.Path, len(data))
		}
		return &jute.GetDataResponse{Data: data, Stat: st}, err
	case *jute.GetChildrenRequest:
		kids, _, err := t.GetChildren(r.Path, c.authIDs(), c.watcher(r.Watch))
		if err == nil {
			c.s.zm.noteRead(r.Path, namesLen(kids))
		}
		return &jute.GetChildrenResponse{Children: nonNil(kids)}, err
	case *jute.GetChildren2Request:
		kids, st, err := t.GetChildren(r.Path, c.authIDs(), c.watcher(r.Watch))
		if err == nil {
			c.s.zm.noteRead(r.Path, namesLen(kids))
		}
		return &jute.GetChildren2Response{Children: nonNil(kids), Stat: st}, err
	case *jute.GetACLRequest:
		acl, st, err := t.GetACL(r.Path, c.authIDs())
		return &jute.GetACLResponse{Acl: acl, Stat: st}, err
	case *jute.GetEphemeralsRequest:
		return &jute.GetEphemeralsResponse{Ephemerals: nonNil(t.GetEphemerals(c.sessionID.Load(), r.PrefixPath))}, nil
	case *jute.GetAllChildrenNumberRequest:
		n, err := t.GetAllChildrenNumber(r.Path, c.authIDs())
		return &jute.GetAllChildrenNumberResponse{TotalNumber: n}, err
	case *jute.CheckWatchesRequest:
		if !validWatcherType(r.Type) {
			return nil, jute.CodeMarshallingError
		}
		return nil, t.CheckWatches(r.Path, c, r.Type)
	case *jute.RemoveWatchesRequest:
		if !validWatcherType(r.Type) {
			return nil, jute.CodeMarshallingError
		}
		return nil, t.RemoveWatches(r.Path, c, r.Type)
	case *jute.AddWatchRequest:
		// ZooKeeper fails to convert an unknown mode and answers
		// MarshallingError; success carries an ErrorResponse body of 0.
		if r.Mode != jute.AddWatchModePersistent && r.Mode != jute.AddWatchModePersistentRecursive {
			return nil, jute.CodeMarshallingError
		}
		return &jute.ErrorResponse{}, t.AddWatch(r.Path, c, r.Mode)
	case *jute.SetWatches:
		return nil, c.setWatches(t, r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches, []string{}, []string{})
	case *jute.SetWatches2:
		return nil, c.setWatches(t, r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches,
			r.PersistentWatches, r.PersistentRecursiveWatches)
	case *jute.MultiRequest:
		return c.multiRead(t, r), nil
	case nil:
		if sl.op == jute.OpWhoAmI {
			return c.whoAmI(), nil
		}
	}
	return nil, fmt.Errorf("server: no read handler for op %d", sl.op)
}

// setWatches sets the watch lists of a setWatches or setWatches2 in their
// order up to the first null one (a vector of length -1), and answers
// MarshallingError when there is one: ZooKeeper walks the lists in this
// order and fails on a null list after setting the lists before it.
func (c *conn) setWatches(t *datatree.Tree, relZxid int64, lists ...[]string) error {
	var err error
	for i, l := range lists {
		if l == nil && err == nil {
			err = jute.CodeMarshallingError
		}
		if err != nil {
			lists[i] = nil
		}
	}
	t.SetWatches(relZxid, lists[0], lists[1], lists[2], lists[3], lists[4], c)
	return err
}

// validWatcherType reports whether typ is a WatcherType ZooKeeper can
// convert; for others it answers MarshallingError.
func validWatcherType(typ int32) bool {
	return typ == jute.WatcherTypeChildren || typ == jute.WatcherTypeData || typ == jute.WatcherTypeAny
}

// multiRead runs each read of a multiRead on its own: a failed op gives an
// error result and the others still run, as in ZooKeeper.
func (c *conn) multiRead(t *datatree.Tree, r *jute.MultiRequest) *jute.MultiResponse {
	resp := &jute.MultiResponse{Results: make([]jute.MultiResult, 0, len(r.Ops))}
	auth := c.authIDs()
	for _, op := range r.Ops {
		var (
			rec jute.Record
			err error
		)
		switch q := op.Req.(type) {
		case *jute.GetDataRequest:
			var ok bool
			if rec, ok, err = c.fencingRead(t, q); ok {
				break
			}
			var data []byte
			var st jute.Stat
			data, st, err = t.GetData(q.Path, auth, c.watcher(q.Watch))
			rec = &jute.GetDataResponse{Data: data, Stat: st}
		case *jute.GetChildrenRequest:
			var ok bool
			if rec, ok, err = c.fencingRead(t, q); ok {
				break
			}
			var kids []string
			kids, _, err = t.GetChildren(q.Path, auth, c.watcher(q.Watch))
			rec = &jute.GetChildrenResponse{Children: nonNil(kids)}
		default:
			err = jute.CodeMarshallingError
		}
		if err != nil {
			code, _, _ := errorCode(err)
			resp.Results = append(resp.Results, jute.MultiResult{Type: jute.OpError, Err: code})
			continue
		}
		resp.Results = append(resp.Results, jute.MultiResult{Type: op.Type, Resp: rec})
	}
	return resp
}

// nonNil turns a nil list into an empty one, which jute writes as length 0
// rather than -1, as ZooKeeper does.
func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}
