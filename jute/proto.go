package jute

// This file holds the records of zookeeper.jute's org.apache.zookeeper.proto
// module (and ClientInfo of its data module) that the client protocol uses,
// with fields in the exact order of zookeeper.jute.

// ConnectRequest the first frame a client sends, opening or resuming a session. ReadOnly is optional on the wire: Java clients and Kazoo send it, go-zk does not.
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

// ConnectResponse the server's answer to a ConnectRequest. ReadOnly is written only when the client sent it in its ConnectRequest.
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

// SetWatches re-registers a reconnecting client's one-shot watches (xid -8, opcode setWatches).
type SetWatches struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// Encode writes the record.
func (r *SetWatches) Encode(e *Encoder) {
	e.WriteLong(r.RelativeZxid)
	e.WriteStrings(r.DataWatches)
	e.WriteStrings(r.ExistWatches)
	e.WriteStrings(r.ChildWatches)
}

// Decode reads the record.
func (r *SetWatches) Decode(d *Decoder) {
	r.RelativeZxid = d.ReadLong()
	r.DataWatches = d.ReadStrings()
	r.ExistWatches = d.ReadStrings()
	r.ChildWatches = d.ReadStrings()
}

// SetWatches2 re-registers a reconnecting client's watches, persistent ones included (opcode setWatches2).
type SetWatches2 struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// Encode writes the record.
func (r *SetWatches2) Encode(e *Encoder) {
	e.WriteLong(r.RelativeZxid)
	e.WriteStrings(r.DataWatches)
	e.WriteStrings(r.ExistWatches)
	e.WriteStrings(r.ChildWatches)
	e.WriteStrings(r.PersistentWatches)
	e.WriteStrings(r.PersistentRecursiveWatches)
}

// Decode reads the record.
func (r *SetWatches2) Decode(d *Decoder) {
	r.RelativeZxid = d.ReadLong()
	r.DataWatches = d.ReadStrings()
	r.ExistWatches = d.ReadStrings()
	r.ChildWatches = d.ReadStrings()
	r.PersistentWatches = d.ReadStrings()
	r.PersistentRecursiveWatches = d.ReadStrings()
}

// MultiHeader precedes every operation of a multi request and every result of a multi response; a header with Done set ends the list.
type MultiHeader struct {
	Type int32
	Done bool
	Err  Code
}

// Encode writes the record.
func (r *MultiHeader) Encode(e *Encoder) {
	e.WriteInt(r.Type)
	e.WriteBool(r.Done)
	e.WriteInt(int32(r.Err))
}

// Decode reads the record.
func (r *MultiHeader) Decode(d *Decoder) {
	r.Type = d.ReadInt()
	r.Done = d.ReadBool()
	r.Err = Code(d.ReadInt())
}

// AuthPacket is the body of an auth request (xid -4, opcode auth): addauth scheme credentials.
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

// Encode writes the record.
func (r *AuthPacket) Encode(e *Encoder) {
	e.WriteInt(r.Type)
	e.WriteString(r.Scheme)
	e.WriteBuffer(r.Auth)
}

// Decode reads the record.
func (r *AuthPacket) Decode(d *Decoder) {
	r.Type = d.ReadInt()
	r.Scheme = d.ReadString()
	r.Auth = d.ReadBuffer()
}

// GetDataRequest is the body of a getData request.
type GetDataRequest struct {
	Path  string
	Watch bool
}

// Encode writes the record.
func (r *GetDataRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteBool(r.Watch)
}

// Decode reads the record.
func (r *GetDataRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Watch = d.ReadBool()
}

// SetDataRequest is the body of a setData request; Version -1 matches any version.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// Encode writes the record.
func (r *SetDataRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteBuffer(r.Data)
	e.WriteInt(r.Version)
}

// Decode reads the record.
func (r *SetDataRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Data = d.ReadBuffer()
	r.Version = d.ReadInt()
}

// ReconfigRequest is the body of a reconfig request.
type ReconfigRequest struct {
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigId    int64
}

// Encode writes the record.
func (r *ReconfigRequest) Encode(e *Encoder) {
	e.WriteString(r.JoiningServers)
	e.WriteString(r.LeavingServers)
	e.WriteString(r.NewMembers)
	e.WriteLong(r.CurConfigId)
}

// Decode reads the record.
func (r *ReconfigRequest) Decode(d *Decoder) {
	r.JoiningServers = d.ReadString()
	r.LeavingServers = d.ReadString()
	r.NewMembers = d.ReadString()
	r.CurConfigId = d.ReadLong()
}

// SetDataResponse answers a setData request.
type SetDataResponse struct {
	Stat Stat
}

// Encode writes the record.
func (r *SetDataResponse) Encode(e *Encoder) {
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *SetDataResponse) Decode(d *Decoder) {
	r.Stat.Decode(d)
}

// GetSASLRequest is the body of a sasl request (opcode sasl).
type GetSASLRequest struct {
	Token []byte
}

// Encode writes the record.
func (r *GetSASLRequest) Encode(e *Encoder) {
	e.WriteBuffer(r.Token)
}

// Decode reads the record.
func (r *GetSASLRequest) Decode(d *Decoder) {
	r.Token = d.ReadBuffer()
}

// SetSASLRequest carries a SASL token (kept for completeness of zookeeper.jute).
type SetSASLRequest struct {
	Token []byte
}

// Encode writes the record.
func (r *SetSASLRequest) Encode(e *Encoder) {
	e.WriteBuffer(r.Token)
}

// Decode reads the record.
func (r *SetSASLRequest) Decode(d *Decoder) {
	r.Token = d.ReadBuffer()
}

// SetSASLResponse answers a sasl request with the server's SASL token.
type SetSASLResponse struct {
	Token []byte
}

// Encode writes the record.
func (r *SetSASLResponse) Encode(e *Encoder) {
	e.WriteBuffer(r.Token)
}

// Decode reads the record.
func (r *SetSASLResponse) Decode(d *Decoder) {
	r.Token = d.ReadBuffer()
}

// CreateRequest is the body of create, create2 and createContainer requests; Flags is a Mode* constant.
type CreateRequest struct {
	Path  string
	Data  []byte
	Acl   []ACL
	Flags int32
}

// Encode writes the record.
func (r *CreateRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteBuffer(r.Data)
	e.WriteACLs(r.Acl)
	e.WriteInt(r.Flags)
}

// Decode reads the record.
func (r *CreateRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Data = d.ReadBuffer()
	r.Acl = d.ReadACLs()
	r.Flags = d.ReadInt()
}

// CreateTTLRequest is the body of a createTTL request; Ttl is in milliseconds.
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	Acl   []ACL
	Flags int32
	Ttl   int64
}

// Encode writes the record.
func (r *CreateTTLRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteBuffer(r.Data)
	e.WriteACLs(r.Acl)
	e.WriteInt(r.Flags)
	e.WriteLong(r.Ttl)
}

// Decode reads the record.
func (r *CreateTTLRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Data = d.ReadBuffer()
	r.Acl = d.ReadACLs()
	r.Flags = d.ReadInt()
	r.Ttl = d.ReadLong()
}

// DeleteRequest is the body of a delete request; Version -1 matches any version.
type DeleteRequest struct {
	Path    string
	Version int32
}

// Encode writes the record.
func (r *DeleteRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(r.Version)
}

// Decode reads the record.
func (r *DeleteRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Version = d.ReadInt()
}

// GetChildrenRequest is the body of a getChildren request.
type GetChildrenRequest struct {
	Path  string
	Watch bool
}

// Encode writes the record.
func (r *GetChildrenRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteBool(r.Watch)
}

// Decode reads the record.
func (r *GetChildrenRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Watch = d.ReadBool()
}

// GetAllChildrenNumberRequest is the body of a getAllChildrenNumber request.
type GetAllChildrenNumberRequest struct {
	Path string
}

// Encode writes the record.
func (r *GetAllChildrenNumberRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
}

// Decode reads the record.
func (r *GetAllChildrenNumberRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
}

// GetChildren2Request is the body of a getChildren2 request (children plus the parent's Stat).
type GetChildren2Request struct {
	Path  string
	Watch bool
}

// Encode writes the record.
func (r *GetChildren2Request) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteBool(r.Watch)
}

// Decode reads the record.
func (r *GetChildren2Request) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Watch = d.ReadBool()
}

// CheckVersionRequest is a check operation inside a multi: it fails unless the node's version is Version (-1 matches any).
type CheckVersionRequest struct {
	Path    string
	Version int32
}

// Encode writes the record.
func (r *CheckVersionRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(r.Version)
}

// Decode reads the record.
func (r *CheckVersionRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Version = d.ReadInt()
}

// SyncRequest is the body of a sync request.
type SyncRequest struct {
	Path string
}

// Encode writes the record.
func (r *SyncRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
}

// Decode reads the record.
func (r *SyncRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
}

// SyncResponse answers a sync request.
type SyncResponse struct {
	Path string
}

// Encode writes the record.
func (r *SyncResponse) Encode(e *Encoder) {
	e.WriteString(r.Path)
}

// Decode reads the record.
func (r *SyncResponse) Decode(d *Decoder) {
	r.Path = d.ReadString()
}

// GetACLRequest is the body of a getACL request.
type GetACLRequest struct {
	Path string
}

// Encode writes the record.
func (r *GetACLRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
}

// Decode reads the record.
func (r *GetACLRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
}

// SetACLRequest is the body of a setACL request; Version is the expected aversion, -1 for any.
type SetACLRequest struct {
	Path    string
	Acl     []ACL
	Version int32
}

// Encode writes the record.
func (r *SetACLRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteACLs(r.Acl)
	e.WriteInt(r.Version)
}

// Decode reads the record.
func (r *SetACLRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Acl = d.ReadACLs()
	r.Version = d.ReadInt()
}

// SetACLResponse answers a setACL request.
type SetACLResponse struct {
	Stat Stat
}

// Encode writes the record.
func (r *SetACLResponse) Encode(e *Encoder) {
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *SetACLResponse) Decode(d *Decoder) {
	r.Stat.Decode(d)
}

// AddWatchRequest is the body of an addWatch request; Mode is an AddWatchMode* constant.
type AddWatchRequest struct {
	Path string
	Mode int32
}

// Encode writes the record.
func (r *AddWatchRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(r.Mode)
}

// Decode reads the record.
func (r *AddWatchRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Mode = d.ReadInt()
}

// ErrorResponse is the body of a failed operation's result inside a multi response.
type ErrorResponse struct {
	Err Code
}

// Encode writes the record.
func (r *ErrorResponse) Encode(e *Encoder) {
	e.WriteInt(int32(r.Err))
}

// Decode reads the record.
func (r *ErrorResponse) Decode(d *Decoder) {
	r.Err = Code(d.ReadInt())
}

// CreateResponse answers a create request.
type CreateResponse struct {
	Path string
}

// Encode writes the record.
func (r *CreateResponse) Encode(e *Encoder) {
	e.WriteString(r.Path)
}

// Decode reads the record.
func (r *CreateResponse) Decode(d *Decoder) {
	r.Path = d.ReadString()
}

// Create2Response answers create2, createContainer and createTTL requests.
type Create2Response struct {
	Path string
	Stat Stat
}

// Encode writes the record.
func (r *Create2Response) Encode(e *Encoder) {
	e.WriteString(r.Path)
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *Create2Response) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Stat.Decode(d)
}

// ExistsRequest is the body of an exists request.
type ExistsRequest struct {
	Path  string
	Watch bool
}

// Encode writes the record.
func (r *ExistsRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteBool(r.Watch)
}

// Decode reads the record.
func (r *ExistsRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Watch = d.ReadBool()
}

// ExistsResponse answers an exists request on an existing node.
type ExistsResponse struct {
	Stat Stat
}

// Encode writes the record.
func (r *ExistsResponse) Encode(e *Encoder) {
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *ExistsResponse) Decode(d *Decoder) {
	r.Stat.Decode(d)
}

// GetDataResponse answers a getData request.
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// Encode writes the record.
func (r *GetDataResponse) Encode(e *Encoder) {
	e.WriteBuffer(r.Data)
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *GetDataResponse) Decode(d *Decoder) {
	r.Data = d.ReadBuffer()
	r.Stat.Decode(d)
}

// GetChildrenResponse answers a getChildren request.
type GetChildrenResponse struct {
	Children []string
}

// Encode writes the record.
func (r *GetChildrenResponse) Encode(e *Encoder) {
	e.WriteStrings(r.Children)
}

// Decode reads the record.
func (r *GetChildrenResponse) Decode(d *Decoder) {
	r.Children = d.ReadStrings()
}

// GetAllChildrenNumberResponse answers a getAllChildrenNumber request.
type GetAllChildrenNumberResponse struct {
	TotalNumber int32
}

// Encode writes the record.
func (r *GetAllChildrenNumberResponse) Encode(e *Encoder) {
	e.WriteInt(r.TotalNumber)
}

// Decode reads the record.
func (r *GetAllChildrenNumberResponse) Decode(d *Decoder) {
	r.TotalNumber = d.ReadInt()
}

// GetChildren2Response answers a getChildren2 request.
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// Encode writes the record.
func (r *GetChildren2Response) Encode(e *Encoder) {
	e.WriteStrings(r.Children)
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *GetChildren2Response) Decode(d *Decoder) {
	r.Children = d.ReadStrings()
	r.Stat.Decode(d)
}

// GetACLResponse answers a getACL request.
type GetACLResponse struct {
	Acl  []ACL
	Stat Stat
}

// Encode writes the record.
func (r *GetACLResponse) Encode(e *Encoder) {
	e.WriteACLs(r.Acl)
	r.Stat.Encode(e)
}

// Decode reads the record.
func (r *GetACLResponse) Decode(d *Decoder) {
	r.Acl = d.ReadACLs()
	r.Stat.Decode(d)
}

// CheckWatchesRequest is the body of a checkWatches request; Type is a WatcherType* constant.
type CheckWatchesRequest struct {
	Path string
	Type int32
}

// Encode writes the record.
func (r *CheckWatchesRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(r.Type)
}

// Decode reads the record.
func (r *CheckWatchesRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Type = d.ReadInt()
}

// RemoveWatchesRequest is the body of a removeWatches request; Type is a WatcherType* constant.
type RemoveWatchesRequest struct {
	Path string
	Type int32
}

// Encode writes the record.
func (r *RemoveWatchesRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(r.Type)
}

// Decode reads the record.
func (r *RemoveWatchesRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Type = d.ReadInt()
}

// GetEphemeralsRequest is the body of a getEphemerals request; an empty or "/" PrefixPath lists all of the session's ephemerals.
type GetEphemeralsRequest struct {
	PrefixPath string
}

// Encode writes the record.
func (r *GetEphemeralsRequest) Encode(e *Encoder) {
	e.WriteString(r.PrefixPath)
}

// Decode reads the record.
func (r *GetEphemeralsRequest) Decode(d *Decoder) {
	r.PrefixPath = d.ReadString()
}

// GetEphemeralsResponse answers a getEphemerals request.
type GetEphemeralsResponse struct {
	Ephemerals []string
}

// Encode writes the record.
func (r *GetEphemeralsResponse) Encode(e *Encoder) {
	e.WriteStrings(r.Ephemerals)
}

// Decode reads the record.
func (r *GetEphemeralsResponse) Decode(d *Decoder) {
	r.Ephemerals = d.ReadStrings()
}

// ClientInfo is one authenticated identity of a session, as whoAmI reports it.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// Encode writes the record.
func (r *ClientInfo) Encode(e *Encoder) {
	e.WriteString(r.AuthScheme)
	e.WriteString(r.User)
}

// Decode reads the record.
func (r *ClientInfo) Decode(d *Decoder) {
	r.AuthScheme = d.ReadString()
	r.User = d.ReadString()
}

// WhoAmIResponse answers a whoAmI request.
type WhoAmIResponse struct {
	ClientInfo []ClientInfo
}

// Encode writes the record.
func (r *WhoAmIResponse) Encode(e *Encoder) {
	writeClientInfos(e, r.ClientInfo)
}

// Decode reads the record.
func (r *WhoAmIResponse) Decode(d *Decoder) {
	r.ClientInfo = readClientInfos(d)
}

// GetMaxChildrenRequest is a legacy record of zookeeper.jute with no opcode in 3.8.
type GetMaxChildrenRequest struct {
	Path string
}

// Encode writes the record.
func (r *GetMaxChildrenRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
}

// Decode reads the record.
func (r *GetMaxChildrenRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
}

// GetMaxChildrenResponse is a legacy record of zookeeper.jute with no opcode in 3.8.
type GetMaxChildrenResponse struct {
	Max int32
}

// Encode writes the record.
func (r *GetMaxChildrenResponse) Encode(e *Encoder) {
	e.WriteInt(r.Max)
}

// Decode reads the record.
func (r *GetMaxChildrenResponse) Decode(d *Decoder) {
	r.Max = d.ReadInt()
}

// SetMaxChildrenRequest is a legacy record of zookeeper.jute with no opcode in 3.8.
type SetMaxChildrenRequest struct {
	Path string
	Max  int32
}

// Encode writes the record.
func (r *SetMaxChildrenRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(r.Max)
}

// Decode reads the record.
func (r *SetMaxChildrenRequest) Decode(d *Decoder) {
	r.Path = d.ReadString()
	r.Max = d.ReadInt()
}
