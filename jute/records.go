package jute

// Id is an ACL identity: a scheme ("world", "digest", "ip", "auth", "super")
// and an id within it.
type Id struct {
	Scheme string
	Id     string
}

// Encode writes the record.
func (r *Id) Encode(e *Encoder) { e.WriteString(r.Scheme); e.WriteString(r.Id) }

// Decode reads the record.
func (r *Id) Decode(d *Decoder) { r.Scheme = d.ReadString(); r.Id = d.ReadString() }

// ACL grants Perms (a mask of Perm* bits) to Id.
type ACL struct {
	Perms int32
	Id    Id
}

// Encode writes the record.
func (r *ACL) Encode(e *Encoder) { e.WriteInt(r.Perms); r.Id.Encode(e) }

// Decode reads the record.
func (r *ACL) Decode(d *Decoder) { r.Perms = d.ReadInt(); r.Id.Decode(d) }

// WriteACLs appends a vector of ACLs; nil is written as -1.
func (e *Encoder) WriteACLs(v []ACL) {
	if v == nil {
		e.WriteInt(-1)
		return
	}
	e.WriteInt(int32(len(v)))
	for i := range v {
		v[i].Encode(e)
	}
}

// ReadACLs reads a vector of ACLs; -1 gives nil.
func (d *Decoder) ReadACLs() []ACL {
	n := d.VectorLen(12)
	if n < 0 || d.err != nil {
		return nil
	}
	v := make([]ACL, n)
	for i := 0; i < n && d.err == nil; i++ {
		v[i].Decode(d)
	}
	return v
}

// Stat is a znode's metadata as ZooKeeper reports it.
type Stat struct {
	Czxid          int64 // zxid of the create
	Mzxid          int64 // zxid of the last data change
	Ctime          int64 // create time, ms since the epoch
	Mtime          int64 // last data change time, ms since the epoch
	Version        int32 // data version
	Cversion       int32 // child version: creates and deletes of children
	Aversion       int32 // ACL version
	EphemeralOwner int64 // owning session of an ephemeral, else 0
	DataLength     int32
	NumChildren    int32
	Pzxid          int64 // zxid of the last child create or delete
}

// StatSize is the encoded size of a Stat.
const StatSize = 68

// Encode writes the record.
func (s *Stat) Encode(e *Encoder) {
	e.WriteLong(s.Czxid)
	e.WriteLong(s.Mzxid)
	e.WriteLong(s.Ctime)
	e.WriteLong(s.Mtime)
	e.WriteInt(s.Version)
	e.WriteInt(s.Cversion)
	e.WriteInt(s.Aversion)
	e.WriteLong(s.EphemeralOwner)
	e.WriteInt(s.DataLength)
	e.WriteInt(s.NumChildren)
	e.WriteLong(s.Pzxid)
}

// Decode reads the record.
func (s *Stat) Decode(d *Decoder) {
	s.Czxid = d.ReadLong()
	s.Mzxid = d.ReadLong()
	s.Ctime = d.ReadLong()
	s.Mtime = d.ReadLong()
	s.Version = d.ReadInt()
	s.Cversion = d.ReadInt()
	s.Aversion = d.ReadInt()
	s.EphemeralOwner = d.ReadLong()
	s.DataLength = d.ReadInt()
	s.NumChildren = d.ReadInt()
	s.Pzxid = d.ReadLong()
}

// WatcherEvent is a watch notification, sent with reply xid -1.
type WatcherEvent struct {
	Type  int32 // an Event* constant
	State int32 // a State* constant
	Path  string
}

// Encode writes the record.
func (r *WatcherEvent) Encode(e *Encoder) {
	e.WriteInt(r.Type)
	e.WriteInt(r.State)
	e.WriteString(r.Path)
}

// Decode reads the record.
func (r *WatcherEvent) Decode(d *Decoder) {
	r.Type = d.ReadInt()
	r.State = d.ReadInt()
	r.Path = d.ReadString()
}

// RequestHeader opens every client request.
type RequestHeader struct {
	Xid  int32
	Type int32 // an Op* constant
}

// Encode writes the record.
func (r *RequestHeader) Encode(e *Encoder) { e.WriteInt(r.Xid); e.WriteInt(r.Type) }

// Decode reads the record.
func (r *RequestHeader) Decode(d *Decoder) { r.Xid = d.ReadInt(); r.Type = d.ReadInt() }

// ReplyHeader opens every server reply.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  Code
}

// Encode writes the record.
func (r *ReplyHeader) Encode(e *Encoder) {
	e.WriteInt(r.Xid)
	e.WriteLong(r.Zxid)
	e.WriteInt(int32(r.Err))
}

// Decode reads the record.
func (r *ReplyHeader) Decode(d *Decoder) {
	r.Xid = d.ReadInt()
	r.Zxid = d.ReadLong()
	r.Err = Code(d.ReadInt())
}

// writeClientInfos appends a vector of ClientInfo; nil is written as -1.
func writeClientInfos(e *Encoder, v []ClientInfo) {
	if v == nil {
		e.WriteInt(-1)
		return
	}
	e.WriteInt(int32(len(v)))
	for i := range v {
		v[i].Encode(e)
	}
}

// readClientInfos reads a vector of ClientInfo; -1 gives nil.
func readClientInfos(d *Decoder) []ClientInfo {
	n := d.VectorLen(8)
	if n < 0 || d.err != nil {
		return nil
	}
	v := make([]ClientInfo, n)
	for i := 0; i < n && d.err == nil; i++ {
		v[i].Decode(d)
	}
	return v
}
