package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	krb5client "github.com/jcmturner/gokrb5/v8/client"
	krb5config "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/zkd/zkd/server/sasl"
)

// krbLogin is a JAAS Client section's Krb5LoginModule with the client
// properties that name the server's principal, as ZooKeeper 3.8's
// client reads them (SaslServerPrincipal, SecurityUtils).
type krbLogin struct {
	// principal is the principal option, completed with krb5.conf's
	// default realm.
	principal string
	// keyTab is the keyTab option when useKeyTab=true.
	keyTab string
	// ticketCache is the credential cache when useTicketCache=true: the
	// ticketCache option, else KRB5CCNAME, else /tmp/krb5cc_<uid>.
	ticketCache string
	conf        *krb5config.Config
	confPath    string
	// service is zookeeper.sasl.client.username (default "zookeeper").
	service string
	// canonicalize is zookeeper.sasl.client.canonicalize.hostname
	// (default true).
	canonicalize bool
	// serverPrincipal is zookeeper.server.principal, which replaces
	// service/host when set.
	serverPrincipal string
	// serverRealm is zookeeper.server.realm, default the client's realm.
	serverRealm string

	mu sync.Mutex
	kc *krb5client.Client // logged in by the first exchange
}

// krbFromModule reads a Krb5LoginModule of a client section: a keytab
// (useKeyTab=true keyTab=... principal=...) or a credential cache
// (useTicketCache=true, optionally ticketCache=... and principal=...);
// with both, the cache is tried first, as Krb5LoginModule does. The KDC
// is found through the krb5.conf Java reads: -Djava.security.krb5.conf,
// else /etc/krb5.conf.
func krbFromModule(m sasl.LoginModule, props map[string]string, env []string) (*krbLogin, error) {
	opt := func(name string) string { v, _ := m.Option(name); return v }
	k := &krbLogin{
		principal:       opt("principal"),
		service:         "zookeeper",
		canonicalize:    true,
		serverPrincipal: props["zookeeper.server.principal"],
		serverRealm:     props["zookeeper.server.realm"],
		confPath:        "/etc/krb5.conf",
	}
	if v, ok := props["zookeeper.sasl.client.username"]; ok {
		k.service = v
	}
	if v, ok := props["zookeeper.sasl.client.canonicalize.hostname"]; ok {
		// Boolean.parseBoolean: anything but "true" is false.
		k.canonicalize = strings.EqualFold(v, "true")
	}
	if v, ok := props["java.security.krb5.conf"]; ok {
		k.confPath = v
	}
	var err error
	if k.conf, err = krb5config.Load(k.confPath); err != nil {
		return nil, fmt.Errorf("%s needs a krb5.conf to find the KDC (-Djava.security.krb5.conf): %s: %w", sasl.Krb5LoginModule, k.confPath, err)
	}
	if k.principal != "" && !strings.Contains(k.principal, "@") {
		if k.conf.LibDefaults.DefaultRealm == "" {
			return nil, fmt.Errorf("principal %s has no realm, and %s names no default_realm", k.principal, k.confPath)
		}
		k.principal += "@" + k.conf.LibDefaults.DefaultRealm
	}
	if strings.EqualFold(opt("useKeyTab"), "true") {
		if k.keyTab = opt("keyTab"); k.keyTab == "" || k.principal == "" {
			return nil, fmt.Errorf("%s with useKeyTab=true needs keyTab and principal options (zkcli cannot prompt for a principal)", sasl.Krb5LoginModule)
		}
	}
	if strings.EqualFold(opt("useTicketCache"), "true") {
		k.ticketCache = opt("ticketCache")
		for _, e := range env {
			if v, ok := strings.CutPrefix(e, "KRB5CCNAME="); ok && k.ticketCache == "" {
				k.ticketCache = v
			}
		}
		if k.ticketCache == "" {
			k.ticketCache = "/tmp/krb5cc_" + strconv.Itoa(os.Getuid())
		}
		if rest, ok := strings.CutPrefix(k.ticketCache, "FILE:"); ok {
			k.ticketCache = rest
		} else if i := strings.IndexByte(k.ticketCache, ':'); i > 0 && !strings.HasPrefix(k.ticketCache, "/") {
			return nil, fmt.Errorf("credential cache %s: zkcli reads FILE: caches only", k.ticketCache)
		}
	}
	if k.keyTab == "" && k.ticketCache == "" {
		return nil, fmt.Errorf("%s needs useKeyTab=true (with keyTab and principal) or useTicketCache=true: zkcli cannot prompt for a password", sasl.Krb5LoginModule)
	}
	return k, nil
}

// login returns the Kerberos client, logging in at the KDC the first time.
func (k *krbLogin) login() (*krb5client.Client, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kc != nil {
		return k.kc, nil
	}
	var errs []error
	if k.ticketCache != "" {
		kc, err := k.fromCache()
		if err == nil {
			k.kc = kc
			return kc, nil
		}
		errs = append(errs, err)
	}
	if k.keyTab != "" {
		kt, err := keytab.Load(k.keyTab)
		if err != nil {
			return nil, errors.Join(append(errs, fmt.Errorf("keyTab %s: %w", k.keyTab, err))...)
		}
		name, realm, _ := strings.Cut(k.principal, "@")
		kc := krb5client.NewWithKeytab(name, realm, kt, k.conf, krb5client.DisablePAFXFAST(true))
		if err := kc.Login(); err != nil {
			return nil, errors.Join(append(errs, fmt.Errorf("Kerberos login of %s with keyTab %s (KDC from %s): %w", k.principal, k.keyTab, k.confPath, err))...)
		}
		k.kc = kc
		return kc, nil
	}
	return nil, errors.Join(errs...)
}

// fromCache loads the credential cache; its principal must be the
// principal option's, when one is given.
func (k *krbLogin) fromCache() (*krb5client.Client, error) {
	cc, err := credentials.LoadCCache(k.ticketCache)
	if err != nil {
		return nil, fmt.Errorf("credential cache %s: %w", k.ticketCache, err)
	}
	got := cc.GetClientPrincipalName().PrincipalNameString() + "@" + cc.GetClientRealm()
	if k.principal != "" && got != k.principal {
		return nil, fmt.Errorf("credential cache %s holds %s, not principal %s", k.ticketCache, got, k.principal)
	}
	tgs := types.NewPrincipalName(nametype.KRB_NT_SRV_INST, "krbtgt/"+cc.GetClientRealm())
	if e, ok := cc.GetEntry(tgs); ok && time.Now().After(e.EndTime) {
		return nil, fmt.Errorf("credential cache %s: the ticket of %s expired at %s (renew it with kinit)", k.ticketCache, got, e.EndTime.UTC().Format(time.RFC3339))
	}
	kc, err := krb5client.NewFromCCache(cc, k.conf, krb5client.DisablePAFXFAST(true))
	if err != nil {
		return nil, fmt.Errorf("credential cache %s: %w", k.ticketCache, err)
	}
	return kc, nil
}

// exchange starts a GSSAPI exchange with the server dialled at addr,
// connected at ip: the service principal is zookeeper.server.principal,
// or service/host where host is addr's host, replaced by ip's canonical
// name (reverse DNS, confirmed forward) when canonicalize is on or addr
// is a literal IP, as SaslServerPrincipal does; the host is lowercased,
// as Java's Kerberos does it for a host-based service name. (Java's
// Kerberos also canonicalizes the host itself unless krb5.conf says
// dns_canonicalize_hostname = false; zkcli does not.)
func (k *krbLogin) exchange(addr string, ip net.IP) (*sasl.GSSAPIClient, error) {
	kc, err := k.login()
	if err != nil {
		return nil, err
	}
	service, host := k.service, ""
	realm := k.serverRealm
	if k.serverPrincipal != "" {
		name, r, _ := strings.Cut(k.serverPrincipal, "@")
		if r != "" {
			realm = r
		}
		service, host, _ = strings.Cut(name, "/")
	} else {
		host, _, _ = net.SplitHostPort(addr)
		// An address given as a literal IP has no name: Java's
		// InetSocketAddress.getHostName looks it up, whatever
		// canonicalize says. A name is kept unless canonicalized.
		if k.canonicalize || net.ParseIP(host) != nil {
			host = canonicalHost(host, ip)
		}
	}
	if host == "" {
		return nil, fmt.Errorf("server principal %q has no host part (service/host)", k.serverPrincipal)
	}
	// Java's Kerberos (and MIT's) lowercase a host-based service name's
	// host.
	host = strings.ToLower(host)
	if realm != "" && realm != kc.Credentials.Realm() {
		return nil, fmt.Errorf("server realm %s differs from the client's realm %s: zkcli does not implement cross-realm Kerberos", realm, kc.Credentials.Realm())
	}
	return sasl.NewGSSAPIClient(kc, service, host), nil
}

// canonicalHost is Java's InetAddress.getCanonicalHostName of ip: the
// name reverse DNS gives, if it resolves back to ip; otherwise host
// unchanged.
func canonicalHost(host string, ip net.IP) string {
	if ip == nil {
		return host
	}
	names, err := net.LookupAddr(ip.String())
	if err != nil || len(names) == 0 {
		return host
	}
	name := strings.TrimSuffix(names[0], ".")
	back, err := net.LookupIP(name)
	if err != nil {
		return host
	}
	for _, b := range back {
		if b.Equal(ip) {
			return name
		}
	}
	return host
}
