package sasl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jcmturner/gokrb5/v8/client"
)

// Quorum SASL by GSSAPI, as ZooKeeper 3.8 runs it between members when
// the JAAS QuorumServer and QuorumLearner sections log Kerberos principals
// in (Krb5LoginModule): the learner gets a ticket for the quorum service
// principal (quorum.auth.kerberos.servicePrincipal, zkquorum/localhost by
// default, "_HOST" standing for the member it dials), and the member it
// dials accepts it with the QuorumServer principal's keytab, then
// authorizes it as SaslQuorumServerCallbackHandler does.

// DefaultQuorumServicePrincipal is ZooKeeper's default
// quorum.auth.kerberos.servicePrincipal.
const DefaultQuorumServicePrincipal = "zkquorum/localhost"

// QuorumServicePrincipal is ZooKeeper's SecurityUtils.getServerPrincipal:
// a principal configured as service/_HOST (exactly two parts when split at
// "/") names the member at host, lowercased; any other is taken as it is
// (so zkquorum/_HOST@REALM is not substituted, as in ZooKeeper 3.8).
func QuorumServicePrincipal(configured, host string) string {
	parts := strings.Split(configured, "/")
	if len(parts) != 2 || parts[1] != "_HOST" {
		return configured
	}
	return parts[0] + "/" + strings.ToLower(host)
}

// NewQuorumGSSAPIServer returns the server side of quorum SASL by GSSAPI:
// the learner's AP-REQ must be for k.Principal, under a key of k's
// keytab; then, as SaslQuorumServerCallbackHandler authorizes, the
// authorization ID the learner asks for must be its own principal, and a
// principal of the form name/host@REALM must name a host of this member's
// server.N lines (authzHosts). AuthorizationID is the learner's principal.
func NewQuorumGSSAPIServer(k *Kerberos, authzHosts []string) *GSSAPIServer {
	s := &GSSAPIServer{k: k}
	s.authorize = func(principal, requested string) (string, error) {
		return principal, authorizeLearner(principal, requested, authzHosts)
	}
	return s
}

// authorizeLearner is SaslQuorumServerCallbackHandler's
// handleAuthorizeCallback; requested empty means the principal itself (as
// Java's GSSAPI server takes it).
func authorizeLearner(principal, requested string, authzHosts []string) error {
	if requested == "" {
		requested = principal
	}
	if requested != principal {
		return fmt.Errorf("learner %s asked to be authorized as %s: a learner is authorized as its own principal only", principal, requested)
	}
	parts := strings.Split(strings.ReplaceAll(principal, "@", "/"), "/")
	if len(parts) == 3 && !slices.Contains(authzHosts, parts[1]) {
		return fmt.Errorf("learner %s is not authorized to connect: host %s is in no server.N line of this member (%s)",
			principal, parts[1], strings.Join(authzHosts, ", "))
	}
	return nil
}

// QuorumGSSAPIClient is the learner side of quorum SASL by GSSAPI: a
// GSSAPIClient whose service ticket was got when it was made, so that a
// KDC that refuses is an error before anything is sent to the member.
type QuorumGSSAPIClient struct {
	*GSSAPIClient
	first []byte
}

// NewQuorumGSSAPIClient gets the logged-in kc a ticket for
// servicePrincipal (service/host, or service/host@REALM: the ticket's
// realm is the one krb5.conf gives the host, as for Java) and returns the
// exchange that presents it.
func NewQuorumGSSAPIClient(kc *client.Client, servicePrincipal string) (*QuorumGSSAPIClient, error) {
	name, _, _ := strings.Cut(servicePrincipal, "@")
	svc, host, ok := strings.Cut(name, "/")
	if !ok || svc == "" || host == "" {
		return nil, fmt.Errorf("GSSAPI: quorum service principal %q is not of the form service/host (zkquorum/localhost, zkquorum/_HOST)", servicePrincipal)
	}
	c := NewGSSAPIClient(kc, svc, host)
	first, err := c.First()
	if err != nil {
		return nil, err
	}
	return &QuorumGSSAPIClient{GSSAPIClient: c, first: first}, nil
}

// First is the initial token, carrying the AP-REQ.
func (c *QuorumGSSAPIClient) First() []byte { return c.first }
