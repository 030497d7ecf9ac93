package sasl

import (
	"errors"
	"fmt"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/jcmturner/gokrb5/v8/types"
)

// GSSAPIClient is the client side of a GSSAPI exchange with a ZooKeeper
// server, for zkd's tools: the client sends a Kerberos AP-REQ for the
// service principal in a GSS-API initial context token, without asking
// for mutual authentication; the server answers with its wrapped
// security-layer offer, whose checksum under the ticket's session key
// proves that the server holds the service's keys; the client answers,
// wrapped, choosing no security layer, with its own principal as the
// authorization ID (as ZooKeeper's Java client does). Drive it like
// Client: send First, then pass each server token to Evaluate and send
// what it returns until Complete. It is not safe for concurrent use.
type GSSAPIClient struct {
	kc      *client.Client
	service string // service/host, in the client's realm
	step    int    // 0 before First, 1 waiting for the offer, 2 for the server's last (empty) reply, 3 complete
	key     types.EncryptionKey
	seq     uint64 // the initiator's sequence number
}

// NewGSSAPIClient returns an exchange of the logged-in Kerberos client kc
// with the service principal service/host of kc's realm.
func NewGSSAPIClient(kc *client.Client, service, host string) *GSSAPIClient {
	return &GSSAPIClient{kc: kc, service: service + "/" + host}
}

// Complete reports whether the server accepted the client and proved it
// holds the service principal's keys.
func (c *GSSAPIClient) Complete() bool { return c.step == 3 }

// First gets a service ticket from the KDC and returns the initial
// context token carrying the AP-REQ.
func (c *GSSAPIClient) First() ([]byte, error) {
	if c.step != 0 {
		return nil, errors.New("GSSAPI: exchange already started")
	}
	tkt, key, err := c.kc.GetServiceTicket(c.service)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: service ticket for %s@%s: %w", c.service, c.kc.Credentials.Realm(), err)
	}
	switch key.KeyType {
	case 17, 18, 19, 20: // aes*-cts-hmac-sha*: RFC 4121 tokens
	default:
		return nil, fmt.Errorf("GSSAPI: service ticket for %s has encryption type %d, which uses RFC 1964 tokens that zkd does not implement (use an aes encryption type)", c.service, key.KeyType)
	}
	tok, err := spnego.NewKRB5TokenAPREQ(c.kc, tkt, key, []int{gssapi.ContextFlagInteg}, nil)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: AP-REQ for %s: %w", c.service, err)
	}
	b, err := tok.Marshal()
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: AP-REQ for %s: %w", c.service, err)
	}
	c.key, c.seq, c.step = key, uint64(uint32(tok.APReq.Authenticator.SeqNumber)), 1
	return b, nil
}

// Evaluate takes the server's security-layer offer and returns the
// client's wrapped choice of no security layer; then the server's empty
// reply to that choice, which completes the exchange.
func (c *GSSAPIClient) Evaluate(challenge []byte) ([]byte, error) {
	if c.step == 2 {
		if len(challenge) != 0 {
			return nil, fmt.Errorf("GSSAPI: server sent %d bytes after the exchange ended", len(challenge))
		}
		c.step = 3
		return nil, nil
	}
	if c.step != 1 {
		return nil, errors.New("GSSAPI: no server token expected now")
	}
	offer, err := unwrap(c.key, challenge, true)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: server's security-layer offer from %s: %w", c.service, err)
	}
	if len(offer) != 4 {
		return nil, fmt.Errorf("GSSAPI: server's security-layer offer is %d bytes, want 4", len(offer))
	}
	if offer[0]&noLayerOffer[0] == 0 {
		return nil, fmt.Errorf("GSSAPI: server offers security layers %#x but not authentication alone (0x01), the only one zkd implements", offer[0])
	}
	answer := append([]byte{1, 0, 0, 0}, c.kc.Credentials.CName().PrincipalNameString()+"@"+c.kc.Credentials.Realm()...)
	out, err := wrap(c.key, c.seq, false, answer)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: wrap the security-layer answer: %w", err)
	}
	c.step = 2
	return out, nil
}
