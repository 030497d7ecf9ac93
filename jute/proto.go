package jute

// This file holds the handshake records, ConnectRequest and ConnectResponse,
// written by hand because their optional trailing readOnly byte is not in
// zookeeper.jute (ZooKeeper's Java client and server write it outside the
// record too). Every other record of zookeeper.jute that zkd uses is
// generated into records_gen.go.

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
	writeReadOnly(e, r.HasReadOnly, r.ReadOnly)
}

// Decode reads the record.
func (r *ConnectRequest) Decode(d *Decoder) {
	r.ProtocolVersion = d.ReadInt()
	r.LastZxidSeen = d.ReadLong()
	r.TimeOut = d.ReadInt()
	r.SessionId = d.ReadLong()
	r.Passwd = d.ReadBuffer()
	r.HasReadOnly, r.ReadOnly = readReadOnly(d)
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
	writeReadOnly(e, r.HasReadOnly, r.ReadOnly)
}

// Decode reads the record.
func (r *ConnectResponse) Decode(d *Decoder) {
	r.ProtocolVersion = d.ReadInt()
	r.TimeOut = d.ReadInt()
	r.SessionId = d.ReadLong()
	r.Passwd = d.ReadBuffer()
	r.HasReadOnly, r.ReadOnly = readReadOnly(d)
}

// writeReadOnly appends the handshake records' optional readOnly byte when
// has is set.
func writeReadOnly(e *Encoder, has, readOnly bool) {
	if has {
		e.WriteBool(readOnly)
	}
}

// readReadOnly reads the handshake records' optional readOnly byte, which is
// there when bytes remain after the record's jute fields.
func readReadOnly(d *Decoder) (has, readOnly bool) {
	if d.err != nil || d.Remaining() == 0 {
		return false, false
	}
	return true, d.ReadBool()
}
