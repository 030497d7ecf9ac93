package sasl

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/jcmturner/gokrb5/v8/types"
)

// MechanismGSSAPI is the SASL name of Kerberos V5 through GSS-API (RFC 4752).
const MechanismGSSAPI = "GSSAPI"

// Exchange is one connection's SASL exchange, server side, whatever its
// mechanism: *Server (DIGEST-MD5) or *GSSAPIServer.
type Exchange interface {
	// Evaluate takes the client's token and returns the server's next one.
	Evaluate(token []byte) ([]byte, error)
	// Complete reports whether the client has authenticated.
	Complete() bool
	// AuthorizationID is the authenticated name once Complete.
	AuthorizationID() (string, error)
}

// Kerberos is the service side of GSSAPI: the service principal and its
// keys from the JAAS Server section's Krb5LoginModule, and how
// authenticated principals become sasl identities.
type Kerberos struct {
	// Principal is the service principal, service/host@REALM, as
	// ZooKeeper requires it (zookeeper/host.example.com@EXAMPLE.COM).
	Principal string
	// Keytab holds Principal's keys.
	Keytab *keytab.Keytab
	// DefaultRealm is krb5.conf's default_realm: ZooKeeper's KerberosName
	// DEFAULT auth_to_local rule maps only principals of this realm.
	DefaultRealm string
	// RemoveHost and RemoveRealm are zookeeper.kerberos.removeHostFromPrincipal
	// and zookeeper.kerberos.removeRealmFromPrincipal.
	RemoveHost, RemoveRealm bool
}

// serviceName returns Principal without its realm, and the realm.
func (k *Kerberos) serviceName() (name, realm string) {
	name, realm, _ = strings.Cut(k.Principal, "@")
	return name, realm
}

// Validate reports a principal ZooKeeper's SaslServer could not serve, or
// a keytab without the principal's keys.
func (k *Kerberos) Validate() error {
	name, realm := k.serviceName()
	svc, host, ok := strings.Cut(name, "/")
	if !ok || svc == "" || host == "" || realm == "" || strings.Contains(host, "/") {
		return fmt.Errorf("sasl: Kerberos principal %q is not of the form service/host@REALM (zookeeper/host.example.com@EXAMPLE.COM)", k.Principal)
	}
	if k.Keytab == nil {
		return fmt.Errorf("sasl: Kerberos principal %s has no keytab", k.Principal)
	}
	pn := types.NewPrincipalName(2, name) // NT-SRV-INST
	for _, e := range k.Keytab.Entries {
		if e.Principal.Realm == realm && strings.Join(e.Principal.Components, "/") == strings.Join(pn.NameString, "/") {
			return nil
		}
	}
	return fmt.Errorf("sasl: keytab holds no key of principal %s", k.Principal)
}

// MapName is ZooKeeper's SaslServerCallbackHandler canonicalization of an
// authenticated principal (KerberosName with the DEFAULT auth_to_local
// rule): the first component, then "/host" unless RemoveHost, then
// "@REALM" unless RemoveRealm. A principal of a realm other than
// DefaultRealm matches no rule; ZooKeeper then logs the failure and keeps
// the client's own name, the whole principal, and so does MapName.
func (k *Kerberos) MapName(components []string, realm string) string {
	full := strings.Join(components, "/") + "@" + realm
	if realm != k.DefaultRealm || len(components) == 0 || len(components) > 2 {
		return full
	}
	name := components[0]
	if len(components) == 2 && !k.RemoveHost {
		name += "/" + components[1]
	}
	if !k.RemoveRealm {
		name += "@" + realm
	}
	return name
}

// GSSAPIServer is one connection's GSSAPI exchange, server side, as Java's
// GssKrb5Server runs it for ZooKeeper: the client's AP-REQ is verified
// against the keytab (answered by an AP-REP when the client asks for
// mutual authentication), then the server offers, in a wrap token, no
// security layer ("auth" only, maximum message size 0), and the client's
// wrapped answer must choose it. It is not safe for concurrent use.
type GSSAPIServer struct {
	k      *Kerberos
	client types.HostAddress
	step   int // 0 before the AP-REQ, 1 after the AP-REP, 2 after the offer, 3 complete, 4 failed
	key    types.EncryptionKey
	seq    uint64 // the acceptor's sequence number
	cname  types.PrincipalName
	realm  string
	authz  string
	// authorize, when set, decides the authorization (quorum SASL):
	// given the authenticated principal and the authorization ID the
	// client asked for, it returns the authorized name.
	authorize func(principal, requested string) (string, error)
}

// NewGSSAPIServer starts an exchange for a client at addr (nil: unknown),
// which tickets carrying addresses must list.
func NewGSSAPIServer(k *Kerberos, addr net.IP) *GSSAPIServer {
	s := &GSSAPIServer{k: k}
	if addr != nil {
		s.client = types.HostAddressFromNetIP(addr)
	}
	return s
}

// Complete reports whether a client has authenticated.
func (s *GSSAPIServer) Complete() bool { return s.step == 3 }

// AuthorizationID is the authenticated principal mapped by Kerberos.MapName.
func (s *GSSAPIServer) AuthorizationID() (string, error) {
	if s.step != 3 {
		return "", errors.New("GSSAPI: authentication not completed")
	}
	return s.authz, nil
}

// Principal is the client's authenticated principal, name@REALM, once
// the AP-REQ has been verified.
func (s *GSSAPIServer) Principal() string {
	if s.step == 0 || s.step == 4 && s.realm == "" {
		return ""
	}
	return strings.Join(s.cname.NameString, "/") + "@" + s.realm
}

// noLayerOffer is the server's security-layer offer: bit 1 (no security
// layer) and a maximum message size of 0, as RFC 4752 asks when no layer
// is offered.
var noLayerOffer = []byte{1, 0, 0, 0}

// Evaluate takes the client's token and returns the server's next one.
func (s *GSSAPIServer) Evaluate(token []byte) ([]byte, error) {
	out, err := s.evaluate(token)
	if err != nil {
		s.step = 4
		return nil, fmt.Errorf("GSSAPI: %w", err)
	}
	return out, nil
}

func (s *GSSAPIServer) evaluate(token []byte) ([]byte, error) {
	switch s.step {
	case 0:
		req, err := s.accept(token)
		if err != nil {
			return nil, err
		}
		if mutualRequested(req) {
			s.step = 1
			return s.apRep(req)
		}
		// Without an AP-REP the acceptor's tokens continue the
		// initiator's sequence numbers (RFC 4121 4.2.6; Java checks).
		s.seq = uint64(uint32(req.Authenticator.SeqNumber))
		return s.offer()
	case 1:
		// The client's context is established by the AP-REP: it answers
		// with an empty token, and the server makes its offer.
		if len(token) != 0 {
			return nil, fmt.Errorf("expected an empty response after the AP-REP, got %d bytes", len(token))
		}
		return s.offer()
	case 2:
		payload, err := s.unwrap(token)
		if err != nil {
			return nil, err
		}
		if len(payload) < 4 {
			return nil, fmt.Errorf("security-layer answer of %d bytes, want at least 4", len(payload))
		}
		if payload[0] != 1 {
			return nil, fmt.Errorf("client chose security layer %#x; the server offers none but authentication (0x01)", payload[0])
		}
		if s.authorize != nil {
			authz, err := s.authorize(strings.Join(s.cname.NameString, "/")+"@"+s.realm, string(payload[4:]))
			if err != nil {
				return nil, err
			}
			s.authz = authz
			s.step = 3
			return nil, nil
		}
		// The requested authorization ID (payload[4:]) is not used:
		// ZooKeeper authorizes every client as its own principal.
		s.authz = s.k.MapName(s.cname.NameString, s.realm)
		s.step = 3
		return nil, nil
	default:
		return nil, errors.New("exchange already ended")
	}
}

// accept verifies the initial context token and returns its AP-REQ.
func (s *GSSAPIServer) accept(token []byte) (*messages.APReq, error) {
	if len(token) == 0 {
		return nil, errors.New("empty initial token (expected a Kerberos AP-REQ)")
	}
	var tok spnego.KRB5Token
	if err := tok.Unmarshal(token); err != nil {
		return nil, err
	}
	if !tok.IsAPReq() {
		return nil, errors.New("initial token is not a Kerberos AP-REQ")
	}
	name, _ := s.k.serviceName()
	settings := service.NewSettings(s.k.Keytab, service.KeytabPrincipal(name),
		service.DecodePAC(false), service.ClientAddress(s.client))
	req := &tok.APReq
	ok, _, err := service.VerifyAPREQ(req, settings)
	if err != nil || !ok {
		if err == nil {
			err = errors.New("ticket not valid")
		}
		return nil, fmt.Errorf("AP-REQ for %s rejected: %w", strings.Join(req.Ticket.SName.NameString, "/")+"@"+req.Ticket.Realm, err)
	}
	s.cname, s.realm = req.Authenticator.CName, req.Authenticator.CRealm
	s.key = req.Ticket.DecryptedEncPart.Key
	if req.Authenticator.SubKey.KeyType != 0 {
		s.key = req.Authenticator.SubKey
	}
	switch s.key.KeyType {
	case 17, 18, 19, 20: // aes*-cts-hmac-sha*: RFC 4121 tokens
	default:
		return nil, fmt.Errorf("encryption type %d uses RFC 1964 tokens, which zkd does not implement (use an aes encryption type)", s.key.KeyType)
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	s.seq = uint64(binary.BigEndian.Uint32(b[:]) & 0x3fffffff)
	return req, nil
}

// mutualRequested reports whether the client asked for mutual
// authentication, by the AP-REQ's mutual-required option (MIT) or by
// GSS_C_MUTUAL_FLAG in the authenticator's GSS checksum (RFC 4121 4.1.1;
// Java sets only this one), as MIT's acceptor reads them.
func mutualRequested(req *messages.APReq) bool {
	if types.IsFlagSet(&req.APOptions, flags.APOptionMutualRequired) {
		return true
	}
	ck := req.Authenticator.Cksum
	return ck.CksumType == 0x8003 && len(ck.Checksum) >= 24 && binary.LittleEndian.Uint32(ck.Checksum[20:24])&2 != 0
}

// encAPRepPart is EncAPRepPart with the fields the acceptor sends.
type encAPRepPart struct {
	CTime          time.Time `asn1:"generalized,explicit,tag:0"`
	Cusec          int       `asn1:"explicit,tag:1"`
	SequenceNumber int64     `asn1:"optional,explicit,tag:3"`
}

// apRep returns the AP-REP context token: the authenticator's time, and
// the acceptor's sequence number, under the ticket's session key. It
// sends no acceptor subkey: both directions use the initiator's.
func (s *GSSAPIServer) apRep(req *messages.APReq) ([]byte, error) {
	part, err := asn1.Marshal(encAPRepPart{
		CTime:          req.Authenticator.CTime,
		Cusec:          req.Authenticator.Cusec,
		SequenceNumber: int64(s.seq),
	})
	if err != nil {
		return nil, fmt.Errorf("marshal AP-REP: %w", err)
	}
	part = asn1tools.AddASNAppTag(part, asnAppTag.EncAPRepPart)
	enc, err := crypto.GetEncryptedData(part, req.Ticket.DecryptedEncPart.Key, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, fmt.Errorf("encrypt AP-REP: %w", err)
	}
	rep, err := asn1.Marshal(messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: enc})
	if err != nil {
		return nil, fmt.Errorf("marshal AP-REP: %w", err)
	}
	return gssToken([2]byte{0x02, 0x00}, asn1tools.AddASNAppTag(rep, asnAppTag.APREP))
}

// offer returns the wrapped security-layer offer.
func (s *GSSAPIServer) offer() ([]byte, error) {
	s.step = 2
	return wrap(s.key, s.seq, true, noLayerOffer)
}

// unwrap verifies the client's wrap token and returns its payload.
func (s *GSSAPIServer) unwrap(token []byte) ([]byte, error) {
	return unwrap(s.key, token, false)
}

// wrap returns an RFC 4121 integrity-only wrap token of payload under
// key, sent by the acceptor (fromAcceptor) or the initiator, with
// sequence number seq; neither side sends an acceptor subkey.
func wrap(key types.EncryptionKey, seq uint64, fromAcceptor bool, payload []byte) ([]byte, error) {
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, err
	}
	wt := gssapi.WrapToken{
		EC:        uint16(et.GetHMACBitLength() / 8),
		SndSeqNum: seq,
		Payload:   payload,
	}
	usage := uint32(keyusage.GSSAPI_INITIATOR_SEAL)
	if fromAcceptor {
		wt.Flags, usage = 0x01, keyusage.GSSAPI_ACCEPTOR_SEAL // sent by acceptor, not sealed
	}
	if err := wt.SetCheckSum(key, usage); err != nil {
		return nil, err
	}
	return wt.Marshal()
}

// unwrap verifies a wrap token from the peer (RFC 4121 4.2.6.2,
// integrity only) under key, and returns its payload: fromAcceptor says
// which side must have sent it.
func unwrap(key types.EncryptionKey, token []byte, fromAcceptor bool) ([]byte, error) {
	if len(token) < gssapi.HdrLen {
		return nil, fmt.Errorf("wrap token of %d bytes, shorter than its header", len(token))
	}
	if token[0] != 0x05 || token[1] != 0x04 || token[3] != 0xff {
		return nil, fmt.Errorf("not an RFC 4121 wrap token (starts %x)", token[:4])
	}
	fl := token[2]
	usage := uint32(keyusage.GSSAPI_INITIATOR_SEAL)
	switch {
	case fl&0x01 != 0 && !fromAcceptor:
		return nil, errors.New("wrap token claims to come from the acceptor")
	case fl&0x01 == 0 && fromAcceptor:
		return nil, errors.New("wrap token from the acceptor lacks the SentByAcceptor flag")
	case fl&0x02 != 0:
		return nil, errors.New("sealed (encrypted) wrap token: the exchange uses integrity-only tokens")
	case fl&0x04 != 0:
		return nil, errors.New("wrap token names an acceptor subkey, which zkd does not use")
	}
	if fromAcceptor {
		usage = keyusage.GSSAPI_ACCEPTOR_SEAL
	}
	ec := int(binary.BigEndian.Uint16(token[4:6]))
	rrc := int(binary.BigEndian.Uint16(token[6:8]))
	data := append([]byte(nil), token[gssapi.HdrLen:]...)
	if ec > len(data) {
		return nil, fmt.Errorf("wrap token checksum length %d exceeds its %d bytes", ec, len(data))
	}
	if len(data) > 0 {
		r := rrc % len(data)
		data = append(data[r:], data[:r]...)
	}
	wt := gssapi.WrapToken{
		Flags:     fl,
		EC:        uint16(ec),
		SndSeqNum: binary.BigEndian.Uint64(token[8:16]),
		Payload:   data[:len(data)-ec],
		CheckSum:  data[len(data)-ec:],
	}
	if ok, err := wt.Verify(key, usage); !ok {
		return nil, fmt.Errorf("wrap token checksum: %w", err)
	}
	return wt.Payload, nil
}

// gssToken frames a Kerberos message as a GSS-API context token
// (RFC 2743 3.1, RFC 1964 1.1): the krb5 mechanism OID, the token ID,
// the message.
func gssToken(tokID [2]byte, msg []byte) ([]byte, error) {
	b, err := asn1.Marshal(gssapi.OIDKRB5.OID())
	if err != nil {
		return nil, err
	}
	b = append(b, tokID[:]...)
	b = append(b, msg...)
	return asn1tools.AddASNAppTag(b, 0), nil
}
