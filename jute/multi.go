package jute

import (
	"errors"
	"fmt"
)

// ErrBadMultiOp is the decode error for a multi operation or result whose
// type a multi cannot carry.
var ErrBadMultiOp = errors.New("jute: invalid operation type in multi")

// ErrMixedMulti is the decode error for a multi that mixes read operations
// (getData, getChildren) with write operations; ZooKeeper refuses it too.
var ErrMixedMulti = errors.New("jute: multi mixes read and write operations")

// multiEndHeader is the header that ends both a multi request and a multi
// response: type -1, done, err -1.
var multiEndHeader = MultiHeader{Type: -1, Done: true, Err: -1}

// MultiOp is one operation of a multi or multiRead request: Type is its
// opcode and Req its request record.
//
// Type and Req go together: create, create2 and createContainer carry a
// *CreateRequest, createTTL a *CreateTTLRequest, delete a *DeleteRequest,
// setData a *SetDataRequest, check a *CheckVersionRequest, and the read ops
// of multiRead getData a *GetDataRequest and getChildren a
// *GetChildrenRequest.
type MultiOp struct {
	Type int32
	Req  Record
}

// MultiRequest is the body of multi (opcode 14) and multiRead (opcode 22)
// requests, ZooKeeper's MultiOperationRecord: each operation is a
// MultiHeader{Type, false, -1} followed by its request, and the list ends
// with MultiHeader{-1, true, -1}.
type MultiRequest struct {
	Ops []MultiOp
}

// newMultiOpRequest returns a zero request record for a multi operation type,
// or nil when a multi cannot carry that type.
func newMultiOpRequest(op int32) Record {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}
	case OpCreateTTL:
		return &CreateTTLRequest{}
	case OpDelete:
		return &DeleteRequest{}
	case OpSetData:
		return &SetDataRequest{}
	case OpCheck:
		return &CheckVersionRequest{}
	case OpGetChildren:
		return &GetChildrenRequest{}
	case OpGetData:
		return &GetDataRequest{}
	}
	return nil
}

// isMultiRead reports whether a multi operation type is a read.
func isMultiRead(op int32) bool { return op == OpGetData || op == OpGetChildren }

// IsRead reports whether the request holds read operations only (as
// multiRead does) and at least one operation.
func (r *MultiRequest) IsRead() bool {
	for _, op := range r.Ops {
		if !isMultiRead(op.Type) {
			return false
		}
	}
	return len(r.Ops) > 0
}

// Encode writes the record. A nil Req is written as the zero request of its
// Type so that the frame stays well formed.
func (r *MultiRequest) Encode(e *Encoder) {
	for _, op := range r.Ops {
		h := MultiHeader{Type: op.Type, Done: false, Err: -1}
		h.Encode(e)
		req := op.Req
		if req == nil {
			req = newMultiOpRequest(op.Type)
		}
		if req != nil {
			req.Encode(e)
		}
	}
	multiEndHeader.Encode(e)
}

// Decode reads the record, dispatching each operation by its header type.
// An unknown type, or a mix of read and write operations, is a decode error.
func (r *MultiRequest) Decode(d *Decoder) {
	r.Ops = nil
	var h MultiHeader
	sawRead, sawWrite := false, false
	for d.err == nil {
		h.Decode(d)
		if d.err != nil {
			return
		}
		if h.Done {
			if h != multiEndHeader {
				d.lax = true
			}
			return
		}
		if h.Err != -1 {
			d.lax = true
		}
		req := newMultiOpRequest(h.Type)
		if req == nil {
			d.Fail(fmt.Errorf("%w: %d", ErrBadMultiOp, h.Type))
			return
		}
		if isMultiRead(h.Type) {
			sawRead = true
		} else {
			sawWrite = true
		}
		if sawRead && sawWrite {
			d.Fail(ErrMixedMulti)
			return
		}
		req.Decode(d)
		r.Ops = append(r.Ops, MultiOp{Type: h.Type, Req: req})
	}
}

// MultiResult is one result of a multi response. Type is the opcode of the
// result (OpError for a failed or rolled-back operation, whose code is Err)
// and Resp its response record, nil for delete, check and error results.
//
// Type and Resp go together: create carries a *CreateResponse; create2,
// createContainer and createTTL a *Create2Response; setData a
// *SetDataResponse; getData a *GetDataResponse; getChildren a
// *GetChildrenResponse. ZooKeeper itself reports every create that returns a
// Stat as type create2 (Java clients decode no other), so servers should use
// OpCreate2 for createContainer and createTTL results.
type MultiResult struct {
	Type int32
	Err  Code
	Resp Record
}

// MultiResponse answers multi and multiRead requests, as ZooKeeper's
// MultiResponse: each result is a MultiHeader{Type, false, err} (err is the
// code for error results and 0 otherwise) followed by its body
// (ErrorResponse{Err} for error results), ending with
// MultiHeader{-1, true, -1}.
//
// A failed multi has a result of type OpError for every operation: 0 for
// those before the failing one, its code for the failing one, and
// CodeRuntimeInconsistency for those after it.
type MultiResponse struct {
	Results []MultiResult
}

// newMultiResultResponse returns a zero response record for a result type,
// nil for types without a body, and ok false for types a multi response
// cannot carry.
func newMultiResultResponse(op int32) (Record, bool) {
	switch op {
	case OpCreate:
		return &CreateResponse{}, true
	case OpCreate2, OpCreateContainer, OpCreateTTL:
		return &Create2Response{}, true
	case OpSetData:
		return &SetDataResponse{}, true
	case OpGetData:
		return &GetDataResponse{}, true
	case OpGetChildren:
		return &GetChildrenResponse{}, true
	case OpDelete, OpCheck, OpError:
		return nil, true
	}
	return nil, false
}

// Encode writes the record. A nil Resp is written as the zero response of
// its Type so that the frame stays well formed.
func (r *MultiResponse) Encode(e *Encoder) {
	for _, res := range r.Results {
		h := MultiHeader{Type: res.Type}
		if res.Type == OpError {
			h.Err = res.Err
		}
		h.Encode(e)
		if res.Type == OpError {
			e.WriteInt(int32(res.Err))
			continue
		}
		resp := res.Resp
		if resp == nil {
			resp, _ = newMultiResultResponse(res.Type)
		}
		if resp != nil {
			resp.Encode(e)
		}
	}
	multiEndHeader.Encode(e)
}

// Decode reads the record, dispatching each result by its header type; an
// unknown type is a decode error. For error results Err is the code of the
// ErrorResponse body.
func (r *MultiResponse) Decode(d *Decoder) {
	r.Results = nil
	var h MultiHeader
	for d.err == nil {
		h.Decode(d)
		if d.err != nil {
			return
		}
		if h.Done {
			if h != multiEndHeader {
				d.lax = true
			}
			return
		}
		resp, ok := newMultiResultResponse(h.Type)
		if !ok {
			d.Fail(fmt.Errorf("%w: %d", ErrBadMultiOp, h.Type))
			return
		}
		res := MultiResult{Type: h.Type}
		if h.Type == OpError {
			var er ErrorResponse
			er.Decode(d)
			res.Err = er.Err
			if h.Err != er.Err {
				d.lax = true
			}
		} else {
			if h.Err != 0 {
				d.lax = true
			}
			if resp != nil {
				resp.Decode(d)
				res.Resp = resp
			}
		}
		r.Results = append(r.Results, res)
	}
}
