package jute

import (
	"errors"
	"fmt"
)

// ErrUnknownOp is the DecodeRequest error for an opcode ZooKeeper 3.8 does
// not accept from clients. ZooKeeper answers such a request with
// CodeUnimplemented and zxid -1, then closes the connection.
var ErrUnknownOp = errors.New("jute: unknown opcode")

// DecodeRequest decodes the body of a client request with opcode op the way
// ZooKeeper 3.8 does, for a server's read loop. It returns (nil, nil) for
// opcodes without a body. Bytes after the record are ignored, as ZooKeeper
// ignores them. Besides MultiRequest's own checks, a multi (14) that holds
// read operations and a multiRead (22) that holds write operations are
// refused with ErrMixedMulti, as ZooKeeper refuses them.
//
// An error wrapping ErrUnknownOp means the opcode is unknown; any other
// error means a malformed body, which ZooKeeper answers with
// CodeMarshallingError while keeping the connection open.
func DecodeRequest(op int32, body []byte) (Record, error) {
	r, known := NewRequest(op)
	if !known {
		return nil, fmt.Errorf("%w: %d", ErrUnknownOp, op)
	}
	if r == nil {
		return nil, nil
	}
	d := NewDecoder(body)
	r.Decode(d)
	if d.Err() != nil {
		return nil, fmt.Errorf("jute: %s request: %w", OpName(op), d.Err())
	}
	if m, ok := r.(*MultiRequest); ok {
		for _, o := range m.Ops {
			if isMultiRead(o.Type) != (op == OpMultiRead) {
				return nil, fmt.Errorf("jute: %s request: %w", OpName(op), ErrMixedMulti)
			}
		}
	}
	return r, nil
}

// NewRequest returns a fresh zero request record for a client opcode, so a
// server can decode the body that follows a RequestHeader. It returns
// (nil, true) for opcodes that have no body (ping, closeSession, whoAmI) and
// (nil, false) for opcodes a ZooKeeper 3.8 client does not send: unknown
// numbers, notification, createSession (the connect handshake is a
// ConnectRequest without a header), deleteContainer (server-internal) and
// error.
func NewRequest(op int32) (Record, bool) {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}, true
	case OpCreateTTL:
		return &CreateTTLRequest{}, true
	case OpDelete:
		return &DeleteRequest{}, true
	case OpExists:
		return &ExistsRequest{}, true
	case OpGetData:
		return &GetDataRequest{}, true
	case OpSetData:
		return &SetDataRequest{}, true
	case OpGetACL:
		return &GetACLRequest{}, true
	case OpSetACL:
		return &SetACLRequest{}, true
	case OpGetChildren:
		return &GetChildrenRequest{}, true
	case OpSync:
		return &SyncRequest{}, true
	case OpGetChildren2:
		return &GetChildren2Request{}, true
	case OpCheck:
		return &CheckVersionRequest{}, true
	case OpMulti, OpMultiRead:
		return &MultiRequest{}, true
	case OpReconfig:
		return &ReconfigRequest{}, true
	case OpCheckWatches:
		return &CheckWatchesRequest{}, true
	case OpRemoveWatches:
		return &RemoveWatchesRequest{}, true
	case OpAuth:
		return &AuthPacket{}, true
	case OpSetWatches:
		return &SetWatches{}, true
	case OpSASL:
		return &GetSASLRequest{}, true
	case OpGetEphemerals:
		return &GetEphemeralsRequest{}, true
	case OpGetAllChildrenNumber:
		return &GetAllChildrenNumberRequest{}, true
	case OpSetWatches2:
		return &SetWatches2{}, true
	case OpAddWatch:
		return &AddWatchRequest{}, true
	case OpPing, OpCloseSession, OpWhoAmI:
		return nil, true
	}
	return nil, false
}

// NewResponse returns a fresh zero response record for the successful reply
// to a client opcode, so a client (or a test) can decode a reply body. Like
// NewRequest it returns (nil, true) for opcodes whose reply has no body
// (delete, ping, closeSession, auth, setWatches, setWatches2, checkWatches,
// removeWatches, check) and (nil, false) for opcodes a client does not send.
// A successful addWatch is answered with ErrorResponse{0}, as ZooKeeper 3.8
// does. A failed request's reply is the ReplyHeader alone.
func NewResponse(op int32) (Record, bool) {
	switch op {
	case OpCreate:
		return &CreateResponse{}, true
	case OpCreate2, OpCreateContainer, OpCreateTTL:
		return &Create2Response{}, true
	case OpExists:
		return &ExistsResponse{}, true
	case OpGetData, OpReconfig:
		return &GetDataResponse{}, true
	case OpSetData:
		return &SetDataResponse{}, true
	case OpGetACL:
		return &GetACLResponse{}, true
	case OpSetACL:
		return &SetACLResponse{}, true
	case OpGetChildren:
		return &GetChildrenResponse{}, true
	case OpSync:
		return &SyncResponse{}, true
	case OpGetChildren2:
		return &GetChildren2Response{}, true
	case OpMulti, OpMultiRead:
		return &MultiResponse{}, true
	case OpSASL:
		return &SetSASLResponse{}, true
	case OpGetEphemerals:
		return &GetEphemeralsResponse{}, true
	case OpGetAllChildrenNumber:
		return &GetAllChildrenNumberResponse{}, true
	case OpWhoAmI:
		return &WhoAmIResponse{}, true
	case OpAddWatch:
		return &ErrorResponse{}, true
	case OpDelete, OpPing, OpCloseSession, OpAuth, OpSetWatches, OpSetWatches2,
		OpCheckWatches, OpRemoveWatches, OpCheck:
		return nil, true
	}
	return nil, false
}
