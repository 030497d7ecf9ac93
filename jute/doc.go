// Package jute is zkd's codec for Apache ZooKeeper 3.8's client wire format:
// the Jute serialization of the records in ZooKeeper's zookeeper.jute, plus
// the hand-written multi framing, opcodes, special xids, watch event types,
// keeper states, create modes, permissions and KeeperException error codes.
// It is pure: no I/O, no state, no clocks.
//
// # Encoding
//
// Jute writes fields in declaration order, big-endian: int as 4 bytes, long
// as 8, boolean as one byte, buffer and ustring as a 4-byte length then the
// bytes (length -1 is null), vectors as a 4-byte count then the elements
// (-1 is null), nested records inline. A TCP frame is a 4-byte length then
// the record(s); framing is the caller's job.
//
// Every record type here has Encode(*Encoder) and Decode(*Decoder) with
// pointer receivers and fields named as in zookeeper.jute with the first
// letter upper-cased (path → Path, timeOut → TimeOut). Decoder errors are
// sticky, so record decoders read every field and the caller checks Err
// once. Decoders never allocate more than the remaining input could hold:
// every length prefix is checked against the bytes left before any make.
// Byte buffers returned by a Decoder alias its input.
//
// # Generated records
//
// The records come from ZooKeeper 3.8's own zookeeper.jute, committed here
// unchanged: internal/jutegen reads it and records.txt (which records zkd
// uses, their doc comments, and the fields that hold a Code) and writes
// records_gen.go; run `go generate ./jute` after changing either, and a test
// in internal/jutegen fails while the file is stale. Only what the jute
// language cannot say is written by hand: ConnectRequest and ConnectResponse
// with their optional readOnly byte (proto.go), multi's header-delimited
// lists (multi.go), and the opcodes' table of request and response records
// (ops.go).
//
// # Frames on the wire
//
// A client request frame is RequestHeader{xid, type} followed by the body
// that NewRequest(type) returns a zero record for (nothing for ping,
// closeSession and whoAmI). A reply is ReplyHeader{xid, zxid, err}; when err
// is not CodeOK nothing follows, otherwise the body that NewResponse(type)
// describes. Reply xid -1 (XidNotification) carries a WatcherEvent and -2
// (XidPing) answers a ping. Behaviours recorded from a real ZooKeeper 3.8
// (jute/testdata/golden, written by jute/internal/goldengen):
//
//   - The handshake is a ConnectRequest without a header. Its trailing
//     readOnly byte is optional: go-zk omits it, Java clients, zkCli and
//     Kazoo send it. The ConnectResponse carries readOnly only when the
//     request did (HasReadOnly mirrors that).
//   - A successful addWatch is answered with ErrorResponse{0}, not an empty
//     body.
//   - Auth replies echo the request's xid (Java uses XidAuth -4, go-zk an
//     ordinary xid) with zxid 0. setWatches/setWatches2 are sent with
//     ordinary xids by go-zk and the 3.8 Java client, so dispatch on the
//     opcode, never on the xid.
//   - A failed multi still has reply err 0; every result is an error result
//     (0 before the failing op, its code at it, CodeRuntimeInconsistency
//     after it). In multiRead each failing read is an error result and the
//     others succeed.
//   - Multi results of create2, createContainer and createTTL all have
//     type create2 (15).
//
// # Canonical form
//
// Decoder.Canonical reports whether the bytes read were exactly what the
// Encoder writes; lenient forms ZooKeeper also accepts (a bool byte other
// than 0 or 1, a null string, odd multi header fields) make it false. The
// fuzz targets use it to require byte-identical re-encoding of canonical
// input.
//
// # Layers
//
// zkd's packages depend one way, cmd → {server, quorum} → zab →
// {datatree, session} → jute; cmd/internal/layers checks it.
// jute is the bottom layer: it imports no other zkd package.
package jute
