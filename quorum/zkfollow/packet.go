package zkfollow

import (
	"bufio"
	"fmt"

	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/zab/zkformat"
)

// Packet types of ZooKeeper's quorum protocol (Leader.java).
const (
	pktProposal          int32 = 2
	pktAck               int32 = 3
	pktCommit            int32 = 4
	pktPing              int32 = 5
	pktRevalidate        int32 = 6
	pktSync              int32 = 7
	pktInform            int32 = 8
	pktNewLeader         int32 = 10
	pktUpToDate          int32 = 12
	pktDiff              int32 = 13
	pktTrunc             int32 = 14
	pktSnap              int32 = 15
	pktObserverInfo      int32 = 16
	pktLeaderInfo        int32 = 17
	pktAckEpoch          int32 = 18
	pktInformAndActivate int32 = 19
)

// protocolVersion is the learner protocol version ZooKeeper 3.4+ speaks
// (0x10000, Zab 1.0).
const protocolVersion = 0x10000

// packetNames name the types in logs and errors.
var packetNames = map[int32]string{
	1: "REQUEST", 2: "PROPOSAL", 3: "ACK", 4: "COMMIT", 5: "PING", 6: "REVALIDATE",
	7: "SYNC", 8: "INFORM", 9: "COMMITANDACTIVATE", 10: "NEWLEADER", 11: "FOLLOWERINFO",
	12: "UPTODATE", 13: "DIFF", 14: "TRUNC", 15: "SNAP", 16: "OBSERVERINFO",
	17: "LEADERINFO", 18: "ACKEPOCH", 19: "INFORMANDACTIVATE",
}

func packetName(t int32) string {
	if n, ok := packetNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type %d", t)
}

// packet is zookeeper.jute's QuorumPacket {type, zxid, data, authinfo}.
// On the wire it is a bare jute record: no length frame.
type packet struct {
	Type int32
	Zxid int64
	Data []byte
	Auth []jute.Id
	// authNull records that authinfo was sent as null (-1).
	authNull bool
}

// encode appends p's jute encoding.
func (p *packet) encode() []byte {
	e := jute.NewEncoder(make([]byte, 0, 32+len(p.Data)))
	e.WriteInt(p.Type)
	e.WriteLong(p.Zxid)
	e.WriteBuffer(p.Data)
	if p.Auth == nil {
		e.WriteInt(-1)
	} else {
		e.WriteInt(int32(len(p.Auth)))
		for _, id := range p.Auth {
			e.WriteString(id.Scheme)
			e.WriteString(id.Id)
		}
	}
	return e.Bytes()
}

// readPacket reads one QuorumPacket.
func readPacket(s *zkformat.StreamReader) (packet, error) {
	var p packet
	p.Type = s.Int()
	p.Zxid = s.Long()
	p.Data = s.Buffer()
	n := s.Int()
	if n >= 0 {
		p.Auth = make([]jute.Id, 0, min(n, 16))
		for i := int32(0); i < n && s.Err() == nil; i++ {
			p.Auth = append(p.Auth, jute.Id{Scheme: s.String(), Id: s.String()})
		}
	}
	return p, s.Err()
}

// writePacket writes p and flushes.
func writePacket(w *bufio.Writer, p packet) error {
	if _, err := w.Write(p.encode()); err != nil {
		return err
	}
	return w.Flush()
}
