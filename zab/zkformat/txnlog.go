package zkformat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"

	"github.com/zkd/zkd/jute"
)

// Txn is one transaction of a ZooKeeper log: TxnHeader, the decoded
// record, and the 3.6+ tree digest after it when the log has one.
type Txn struct {
	ClientID int64
	Cxid     int32
	Zxid     int64
	Time     int64
	Type     int32
	// Offset is where the record starts in its file.
	Offset int64
	// Path, Data, ACL, Ephemeral, ParentCVersion, TTL, Version, Timeout
	// and Paths hold the record's fields by type; Sub holds a multi's
	// transactions.
	Path           string
	Data           []byte
	ACL            []jute.ACL
	Ephemeral      bool
	ParentCVersion int32
	TTL            int64
	Version        int32
	Timeout        int32
	Paths          []string
	Sub            []Txn
	// Digest is the tree digest after this transaction, nil without one.
	Digest *ZxidDigest
}

// LogFile is the decoded content of one log file.
type LogFile struct {
	Txns []Txn
	// Partial is the offset of a record that was only partly written
	// (ZooKeeper stops reading the file there), or -1.
	Partial int64
}

// eor ends every log record (FileTxnLog writes 'B').
const eor = 'B'

// ReadLog decodes a transaction log file's bytes. A record cut short at
// the end of the file, or followed by the zeros ZooKeeper preallocates,
// ends the file as it ends ZooKeeper's reading (LogFile.Partial says
// where). A record whose checksum does not match, or that does not
// decode, is an error naming the file and offset: ZooKeeper refuses to
// start on either.
func ReadLog(name string, data []byte) (*LogFile, error) {
	d := jute.NewDecoder(data)
	if m := d.ReadInt(); d.Err() != nil || m != logMagic {
		return nil, &FormatError{File: name, Msg: fmt.Sprintf("not a ZooKeeper transaction log (magic %08x, want %08x \"ZKLG\")", uint32(m), uint32(logMagic))}
	}
	if v := d.ReadInt(); v != formatVersion {
		return nil, &FormatError{File: name, Offset: 4, Msg: fmt.Sprintf("log format version %d, want %d", v, formatVersion)}
	}
	d.ReadLong() // dbid
	if d.Err() != nil {
		return nil, &FormatError{File: name, Msg: "truncated in the file header"}
	}
	lf := &LogFile{Partial: -1}
	pos := d.Offset()
	for pos < len(data) {
		off := int64(pos)
		if len(data)-pos < 12 {
			// Too short for a record header: a record cut short, or
			// the end.
			if !allZero(data[pos:]) {
				lf.Partial = off
			}
			return lf, nil
		}
		crc := binary.BigEndian.Uint64(data[pos:])
		n := int32(binary.BigEndian.Uint32(data[pos+8:]))
		pos += 12
		if n == 0 {
			// Zero length: the preallocated, unwritten rest.
			if crc != 0 || !allZero(data[pos:]) {
				lf.Partial = off
			}
			return lf, nil
		}
		if n < 0 || int(n) >= len(data)-pos || data[pos+int(n)] != eor {
			// Cut short, or the end-of-record byte never written:
			// FileTxnIterator takes it as the end of the file.
			lf.Partial = off
			return lf, nil
		}
		body := data[pos : pos+int(n)]
		pos += int(n) + 1
		if sum := adler32.Checksum(body); crc != uint64(sum) {
			return nil, &FormatError{File: name, Offset: off, Msg: fmt.Sprintf("transaction checksum %08x, computed %08x: the log is damaged", crc, sum)}
		}
		tx, err := decodeTxn(body)
		if err != nil {
			return nil, &FormatError{File: name, Offset: off, Msg: err.Error()}
		}
		tx.Offset = off
		lf.Txns = append(lf.Txns, tx)
	}
	return lf, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// decodeTxn is SerializeUtils.deserializeTxn: header, record by type,
// then an optional TxnDigest.
func decodeTxn(b []byte) (Txn, error) {
	d := jute.NewDecoder(b)
	var t Txn
	t.ClientID = d.ReadLong()
	t.Cxid = d.ReadInt()
	t.Zxid = d.ReadLong()
	t.Time = d.ReadLong()
	t.Type = d.ReadInt()
	if d.Err() != nil {
		return t, fmt.Errorf("transaction header: %v", d.Err())
	}
	rest := b[d.Offset():]
	if t.Type == jute.OpCloseSession {
		// CloseSessionTxn (3.6+, zookeeper.closeSessionTxn.enabled) and
		// the digest are both optional: take the path list that spans
		// the record exactly, with or without a digest after it.
		switch {
		case len(rest) == 0:
			return t, nil
		case pathList(rest, &t.Paths):
			return t, nil
		case len(rest) == 12 || len(rest) > 12 && pathList(rest[:len(rest)-12], &t.Paths):
			t.Digest = readDigest(t.Zxid, rest[len(rest)-12:])
			return t, nil
		}
		return t, fmt.Errorf("zxid 0x%x: closeSession record of %d bytes does not decode", t.Zxid, len(rest))
	}
	if err := decodeRecord(d, &t); err != nil {
		return t, fmt.Errorf("zxid 0x%x (type %d): %v", t.Zxid, t.Type, err)
	}
	if d.Remaining() >= 12 {
		t.Digest = readDigest(t.Zxid, b[d.Offset():])
	}
	return t, nil
}

func readDigest(zxid int64, b []byte) *ZxidDigest {
	d := jute.NewDecoder(b)
	return &ZxidDigest{Zxid: zxid, Version: d.ReadInt(), Digest: uint64(d.ReadLong())}
}

// pathList decodes b as a vector of strings using all of b.
func pathList(b []byte, out *[]string) bool {
	d := jute.NewDecoder(b)
	v := d.ReadStrings()
	if d.Err() != nil || d.Remaining() != 0 {
		return false
	}
	*out = v
	return true
}

// errUnknownType is a transaction type ZooKeeper never logs.
var errUnknownType = errors.New("unknown transaction type")

// decodeRecord reads the txn record of t.Type (zookeeper.jute's txn
// module).
func decodeRecord(d *jute.Decoder, t *Txn) error {
	switch t.Type {
	case jute.OpCreate, jute.OpCreate2:
		readCreate(d, t)
		t.Ephemeral = d.ReadBool()
		// 3.4 logs may hold CreateTxnV0, without parentCVersion.
		t.ParentCVersion = -1
		if d.Remaining() >= 4 {
			t.ParentCVersion = d.ReadInt()
		}
	case jute.OpCreateContainer:
		readCreate(d, t)
		t.ParentCVersion = d.ReadInt()
	case jute.OpCreateTTL:
		readCreate(d, t)
		t.ParentCVersion = d.ReadInt()
		t.TTL = d.ReadLong()
	case jute.OpDelete, jute.OpDeleteContainer:
		t.Path = d.ReadString()
	case jute.OpSetData, jute.OpReconfig:
		t.Path = d.ReadString()
		t.Data = d.ReadBuffer()
		t.Version = d.ReadInt()
	case jute.OpSetACL:
		t.Path = d.ReadString()
		t.ACL = d.ReadACLs()
		t.Version = d.ReadInt()
	case jute.OpCheck:
		t.Path = d.ReadString()
		t.Version = d.ReadInt()
	case jute.OpCreateSession:
		t.Timeout = d.ReadInt()
	case jute.OpError:
		t.Version = d.ReadInt() // the error code
	case jute.OpMulti:
		n := d.VectorLen(8)
		for i := 0; i < n && d.Err() == nil; i++ {
			sub := Txn{ClientID: t.ClientID, Cxid: t.Cxid, Zxid: t.Zxid, Time: t.Time}
			sub.Type = d.ReadInt()
			body := d.ReadBuffer()
			if d.Err() != nil {
				break
			}
			if sub.Type == jute.OpMulti || sub.Type == jute.OpCreateSession || sub.Type == jute.OpCloseSession {
				return fmt.Errorf("multi holds a transaction of type %d", sub.Type)
			}
			sd := jute.NewDecoder(body)
			if err := decodeRecord(sd, &sub); err != nil {
				return fmt.Errorf("multi op %d: %v", i, err)
			}
			t.Sub = append(t.Sub, sub)
		}
	default:
		return fmt.Errorf("%w %d", errUnknownType, t.Type)
	}
	return d.Err()
}

// readCreate reads the path, data and ACL every create record opens with.
func readCreate(d *jute.Decoder, t *Txn) {
	t.Path = d.ReadString()
	t.Data = d.ReadBuffer()
	t.ACL = d.ReadACLs()
}
