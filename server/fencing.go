package server

import (
	"fmt"
	"strings"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server/lockview"
	"github.com/zkd/zkd/zab/fencing"
)

// FencingSigner is an optional Backend extension: the signer of fencing
// tokens, nil while the ensemble has no key yet. zab.Node implements it.
// Without it, /zookeeper/fencing does not exist.
type FencingSigner interface {
	FencingSigner() *fencing.Signer
}

// signer returns the backend's fencing signer, or nil.
func (s *Server) signer() *fencing.Signer {
	if fs, ok := s.b.(FencingSigner); ok {
		return fs.FencingSigner()
	}
	return nil
}

// isFencingPath reports whether path is datatree.FencingPath or under it.
func isFencingPath(path string) bool {
	return strings.HasPrefix(path, datatree.FencingPath) &&
		(len(path) == len(datatree.FencingPath) || path[len(datatree.FencingPath)] == '/')
}

// fencingNode serves a read of the virtual read-only subtree
// /zookeeper/fencing, which the tree does not hold (it is neither listed
// by getChildren of /zookeeper nor written to snapshots):
//
//   - /zookeeper/fencing holds the public key as JSON
//     (fencing.PublicKeyInfo), with a Stat of zeros but for its length;
//   - /zookeeper/fencing<lock node path> holds a signed token for a lock
//     node: a session's ephemeral whose name a lock recipe gave
//     (lockview.IsLockName), READ-checked as the node. Its Stat is the lock
//     node's, but for the data length and children. Anything else there is
//     NoNode.
//
// path must be in the subtree (isFencingPath). Watches are not set on
// virtual nodes: they never change, a token node goes with its lock node,
// which is where a recipe watches.
func (s *Server) fencingNode(t *datatree.Tree, path string, auth []jute.Id) (data []byte, st jute.Stat, err error) {
	sg := s.signer()
	if sg == nil {
		return nil, st, fmt.Errorf("server: %s: no fencing key yet: %w", path, jute.CodeNoNode)
	}
	if path == datatree.FencingPath {
		data = fencing.MarshalInfo(sg.PublicKey())
		return data, jute.Stat{DataLength: int32(len(data))}, nil
	}
	lock := path[len(datatree.FencingPath):]
	i := strings.LastIndexByte(lock, '/')
	parent, name := lock[:i], lock[i+1:]
	if i == 0 {
		parent = "/"
	}
	if !lockview.IsLockName(name) {
		return nil, st, fmt.Errorf("server: %s: %s is not a lock node: %w", path, lock, jute.CodeNoNode)
	}
	st, err = t.SessionEphemeral(lock, auth)
	if err != nil {
		return nil, jute.Stat{}, fmt.Errorf("server: fencing token of %s: %w", lock, err)
	}
	readZxid := max(t.LastZxid(), st.Mzxid)
	data = sg.Sign(&fencing.Token{LockPath: parent, Node: name, Czxid: st.Czxid, Session: st.EphemeralOwner, ReadZxid: readZxid})
	st.DataLength = int32(len(data))
	st.NumChildren, st.Cversion = 0, 0
	return data, st, nil
}

// FencingToken returns the signed fencing token of lock node lockNode (a
// lock recipe's ephemeral, by its full path) as a client with auth reads
// it at /zookeeper/fencing<lockNode>: the same bytes, checked as that read
// is (READ on the lock node; NoNode for anything that is not a held or
// queued lock node, or while the ensemble has no fencing key).
func (s *Server) FencingToken(lockNode string, auth []jute.Id) ([]byte, error) {
	data, _, err := s.fencingNode(s.b.Tree(), datatree.FencingPath+lockNode, auth)
	return data, err
}

// fencingRead answers req if it reads the virtual /zookeeper/fencing
// subtree (see fencingNode); ok is false otherwise. A virtual node has no
// children and the ACL world:anyone:READ.
func (c *conn) fencingRead(t *datatree.Tree, req jute.Record) (rec jute.Record, ok bool, err error) {
	switch req.(type) {
	case *jute.GetDataRequest, *jute.ExistsRequest, *jute.GetChildrenRequest, *jute.GetChildren2Request,
		*jute.GetACLRequest, *jute.GetAllChildrenNumberRequest:
	default:
		return nil, false, nil
	}
	path := pathOf(req)
	if !isFencingPath(path) {
		return nil, false, nil
	}
	data, st, err := c.s.fencingNode(t, path, c.authIDs())
	if err != nil {
		return nil, true, err
	}
	switch req.(type) {
	case *jute.GetDataRequest:
		return &jute.GetDataResponse{Data: data, Stat: st}, true, nil
	case *jute.ExistsRequest:
		return &jute.ExistsResponse{Stat: st}, true, nil
	case *jute.GetChildrenRequest:
		return &jute.GetChildrenResponse{Children: []string{}}, true, nil
	case *jute.GetChildren2Request:
		return &jute.GetChildren2Response{Children: []string{}, Stat: st}, true, nil
	case *jute.GetACLRequest:
		return &jute.GetACLResponse{Acl: []jute.ACL{{Perms: jute.PermRead, Id: jute.Id{Scheme: "world", Id: "anyone"}}}, Stat: st}, true, nil
	default:
		return &jute.GetAllChildrenNumberResponse{}, true, nil
	}
}

// adminFencing is the fencing admin command: the public key of the fencing
// tokens as published at /zookeeper/fencing, with key_installed false (and
// nothing else) while the ensemble has no key yet.
func (s *Server) adminFencing() []field {
	sg := s.signer()
	if sg == nil {
		return []field{{"key_installed", false}}
	}
	in := fencing.Info(sg.PublicKey())
	return []field{{"key_installed", true}, {"algorithm", in.Algorithm}, {"key_id", in.KeyID},
		{"public_key", in.PublicKey}, {"public_key_spki", in.PublicKeySPKI}, {"token_prefix", in.TokenPrefix}}
}
