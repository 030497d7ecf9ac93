package main

import (
	"strings"

	"github.com/zkd/zkd/jute"
)

// splitChroot separates a connection string "h1:p1,h2:p2/app" into its
// servers and its chroot ("/app"; "" when there is none or it is "/"), as
// ZooKeeper's ConnectStringParser does.
func splitChroot(connect string) (servers, chroot string, err error) {
	i := strings.IndexByte(connect, '/')
	if i < 0 {
		return connect, "", nil
	}
	servers, chroot = connect[:i], connect[i:]
	if chroot == "/" {
		return servers, "", nil
	}
	if err := validatePath(chroot, false); err != nil {
		return "", "", err
	}
	return servers, chroot, nil
}

// chroot maps paths between the shell, which sees the chroot as "/", and
// the server, as the Java client does for a connection string with a path.
type chroot string

// toServer returns the server's path for a client path.
func (c chroot) toServer(p string) string {
	if c == "" {
		return p
	}
	if p == "/" {
		return string(c)
	}
	return string(c) + p
}

// toClient returns the client's path for a server path; paths outside the
// chroot are returned unchanged.
func (c chroot) toClient(p string) string {
	if c == "" {
		return p
	}
	if p == string(c) {
		return "/"
	}
	if rest, ok := strings.CutPrefix(p, string(c)+"/"); ok {
		return "/" + rest
	}
	return p
}

// request rewrites the paths of a request record in place, from client to
// server paths.
func (c chroot) request(req jute.Record) {
	if c == "" {
		return
	}
	all := func(ps []string) {
		for i := range ps {
			ps[i] = c.toServer(ps[i])
		}
	}
	switch r := req.(type) {
	case *jute.CreateRequest:
		r.Path = c.toServer(r.Path)
	case *jute.CreateTTLRequest:
		r.Path = c.toServer(r.Path)
	case *jute.DeleteRequest:
		r.Path = c.toServer(r.Path)
	case *jute.ExistsRequest:
		r.Path = c.toServer(r.Path)
	case *jute.GetDataRequest:
		r.Path = c.toServer(r.Path)
	case *jute.SetDataRequest:
		r.Path = c.toServer(r.Path)
	case *jute.GetACLRequest:
		r.Path = c.toServer(r.Path)
	case *jute.SetACLRequest:
		r.Path = c.toServer(r.Path)
	case *jute.GetChildrenRequest:
		r.Path = c.toServer(r.Path)
	case *jute.GetChildren2Request:
		r.Path = c.toServer(r.Path)
	case *jute.SyncRequest:
		r.Path = c.toServer(r.Path)
	case *jute.GetAllChildrenNumberRequest:
		r.Path = c.toServer(r.Path)
	case *jute.GetEphemeralsRequest:
		r.PrefixPath = c.toServer(r.PrefixPath)
	case *jute.AddWatchRequest:
		r.Path = c.toServer(r.Path)
	case *jute.RemoveWatchesRequest:
		r.Path = c.toServer(r.Path)
	case *jute.SetWatches2:
		all(r.DataWatches)
		all(r.ExistWatches)
		all(r.ChildWatches)
		all(r.PersistentWatches)
		all(r.PersistentRecursiveWatches)
	case *jute.MultiRequest:
		for _, op := range r.Ops {
			c.request(op.Req)
		}
	}
}

// response rewrites the paths of a response record in place, from server to
// client paths.
func (c chroot) response(resp jute.Record) {
	if c == "" {
		return
	}
	switch r := resp.(type) {
	case *jute.CreateResponse:
		r.Path = c.toClient(r.Path)
	case *jute.Create2Response:
		r.Path = c.toClient(r.Path)
	case *jute.SyncResponse:
		r.Path = c.toClient(r.Path)
	case *jute.GetEphemeralsResponse:
		for i, p := range r.Ephemerals {
			r.Ephemerals[i] = c.toClient(p)
		}
	}
}
