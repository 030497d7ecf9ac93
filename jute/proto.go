package jute

// This file holds the handshake records, ConnectRequest and ConnectResponse,
// written by hand because their optional trailing readOnly byte is not in
// zookeeper.jute (ZooKeeper's Java client and server write it outside the
// record too). Every other record of zookeeper.jute that zkd uses is generated into
// records_gen.go.

// ConnectRequest is the first frame a client sends, opening or resuming a
// session. ReadOnly is optional on the wire: Java clients and Kazoo send it,
// go-zk does not.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32
	SessionId       int64
	Passwd          []byte
	ReadOnly        bool
	// HasReadOnly says whether ReadOnly is on the wire; it is not encoded
	// itself. Decode sets it when the byte is present.
	HasReadOnly bool
}

// Encode writes the record.
func (r *ConnectRequest) Encode(e *Encoder) {
	e.WriteInt(r.ProtocolVersion)
	e.WriteLong(r.LastZxidSeen)
	e.WriteInt(r.TimeOut)
	e.WriteLong(r.SessionId)
	e.WriteBuffer(r.Passwd)
	if r.HasReadOnly {
		e.WriteBool(r.ReadOnly)
	}
}

// Decode reads the record.
func (r *ConnectRequest) Decode(d *Decoder) {
	r.ProtocolVersion = d.ReadInt()
	r.LastZxidSeen = d.ReadLong()
	r.TimeOut = d.ReadInt()
	r.SessionId = d.ReadLong()
	r.Passwd = d.ReadBuffer()
	r.HasReadOnly = d.err == nil && d.Remaining() > 0
	r.ReadOnly = false
	if r.HasReadOnly {
		r.ReadOnly = d.ReadBool()
	}
}

// ConnectResponse is the server's answer to a ConnectRequest. ReadOnly is
// written only when the client sent it in its ConnectRequest.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionId       int64
	Passwd          []byte
	ReadOnly        bool
	// HasReadOnly says whether ReadOnly is on the wire; it is not encoded
	// itself. Decode sets it when the byte is present.
	HasReadOnly bool
}

// Encode writes the record.
func (r *ConnectResponse) Encode(e *Encoder) {
	e.WriteInt(r.ProtocolVersion)
	e.WriteInt(r.TimeOut)
	e.WriteLong(r.SessionId)
	e.WriteBuffer(r.Passwd)
	if r.HasReadOnly {
		e.WriteBool(r.ReadOnly)
	}
}

// Decode reads the record.
func (r *ConnectResponse) Decode(d *Decoder) {
	r.ProtocolVersion = d.ReadInt()
	r.TimeOut = d.ReadInt()
	r.SessionId = d.ReadLong()
	r.Passwd = d.ReadBuffer()
	r.HasReadOnly = d.err == nil && d.Remaining() > 0
	r.ReadOnly = false
	if r.HasReadOnly {
		r.ReadOnly = d.ReadBool()
	}
}
