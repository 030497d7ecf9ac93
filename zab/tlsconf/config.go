package tlsconf

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ClientAuth values of ssl.clientAuth.
const (
	ClientAuthNone = "none"
	ClientAuthWant = "want"
	ClientAuthNeed = "need"
)

// Options are one TLS endpoint's ZooKeeper settings, read by FromProps from
// the properties under one prefix ("zookeeper.ssl." for the client port,
// "zookeeper.ssl.quorum." between members).
type Options struct {
	// Prefix is the property prefix the options were read from, for errors.
	Prefix string
	// KeyStore* locate the key and certificate presented (keyStore.location,
	// keyStore.password or keyStore.passwordPath, keyStore.type; "" type:
	// by extension).
	KeyStoreLocation, KeyStorePassword, KeyStoreType string
	// TrustStore* locate the CAs a peer's certificate must chain to
	// (trustStore.*). Without one, the system's roots are used, as Java's
	// default trust store is.
	TrustStoreLocation, TrustStorePassword, TrustStoreType string
	// ClientAuth is none, want or need (clientAuth; default need).
	ClientAuth string
	// Protocol is ssl.protocol (default TLSv1.2, ZooKeeper 3.8's), the
	// only protocol enabled when EnabledProtocols is empty.
	Protocol string
	// EnabledProtocols is ssl.enabledProtocols, comma separated in the
	// property.
	EnabledProtocols []string
	// CipherSuites is ssl.ciphersuites (IANA names, as Java uses); empty
	// means Go's defaults.
	CipherSuites []string
	// HostnameVerification is ssl.hostnameVerification (default true): a
	// client checks the server's name; as in ZooKeeper the client port does
	// not check client certificates' names.
	HostnameVerification bool
}

// unsupported lists properties (after the prefix) that ZooKeeper 3.8 reads
// and zkd does not implement; setting them would promise a check zkd does
// not make.
var unsupported = map[string]string{
	"crl":                    "certificate revocation lists are not checked by zkd",
	"ocsp":                   "OCSP is not checked by zkd",
	"context.supplier.class": "zkd cannot load a Java SSLContext supplier",
}

// FromProps reads the options under prefix from get, which looks a system
// property up by full name. It fails, naming the property, on a value zkd
// cannot honour.
func FromProps(get func(name string) (string, bool), prefix string) (Options, error) {
	o := Options{Prefix: prefix, ClientAuth: ClientAuthNeed, Protocol: "TLSv1.2", HostnameVerification: true}
	str := func(k string) string {
		v, _ := get(prefix + k)
		return strings.TrimSpace(v)
	}
	o.KeyStoreLocation = str("keyStore.location")
	o.KeyStorePassword = str("keyStore.password")
	o.KeyStoreType = str("keyStore.type")
	o.TrustStoreLocation = str("trustStore.location")
	o.TrustStorePassword = str("trustStore.password")
	o.TrustStoreType = str("trustStore.type")
	for _, p := range []struct {
		key string
		dst *string
	}{
		{"keyStore.passwordPath", &o.KeyStorePassword},
		{"trustStore.passwordPath", &o.TrustStorePassword},
	} {
		if path := str(p.key); path != "" {
			b, err := os.ReadFile(path)
			if err != nil {
				return o, fmt.Errorf("tlsconf: %s%s: %w", prefix, p.key, err)
			}
			*p.dst = strings.TrimRight(string(b), "\r\n")
		}
	}
	if v := str("clientAuth"); v != "" {
		switch strings.ToLower(v) {
		case ClientAuthNone, ClientAuthWant, ClientAuthNeed:
			o.ClientAuth = strings.ToLower(v)
		default:
			return o, fmt.Errorf("tlsconf: %sclientAuth=%q: want none, want or need", prefix, v)
		}
	}
	if v := str("protocol"); v != "" {
		o.Protocol = v
	}
	o.EnabledProtocols = splitList(str("enabledProtocols"))
	o.CipherSuites = splitList(str("ciphersuites"))
	if v := str("hostnameVerification"); v != "" {
		o.HostnameVerification = strings.EqualFold(v, "true")
	}
	for k, why := range unsupported {
		if v := str(k); v != "" && !strings.EqualFold(v, "false") {
			return o, fmt.Errorf("tlsconf: %s%s=%s is not supported: %s", prefix, k, v, why)
		}
	}
	if v := str("authProvider"); v != "" && v != "x509" {
		return o, fmt.Errorf("tlsconf: %sauthProvider=%s is not supported: zkd's TLS identities are the x509 scheme", prefix, v)
	}
	if _, _, err := o.versions(); err != nil {
		return o, err
	}
	if _, err := o.suites(); err != nil {
		return o, err
	}
	return o, nil
}

// splitList splits a comma-separated property, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// protocolVersions maps Java's protocol names to Go's versions.
var protocolVersions = map[string]uint16{
	"TLSv1.3": tls.VersionTLS13,
	"TLSv1.2": tls.VersionTLS12,
	"TLSv1.1": tls.VersionTLS11,
	"TLSv1":   tls.VersionTLS10,
}

// versions returns the TLS version range the protocols enable. Go enables a
// range, so a set with a hole (TLSv1.1 and TLSv1.3 only) is refused.
func (o Options) versions() (lo, hi uint16, err error) {
	protos := o.EnabledProtocols
	if len(protos) == 0 {
		// ZooKeeper: the SSLContext's protocol, TLS meaning its newest.
		protos = []string{o.Protocol}
		if o.Protocol == "TLS" {
			protos = []string{"TLSv1.3", "TLSv1.2"}
		}
	}
	var vs []uint16
	for _, p := range protos {
		v, ok := protocolVersions[p]
		if !ok {
			return 0, 0, fmt.Errorf("tlsconf: %senabledProtocols/protocol %q: want TLSv1, TLSv1.1, TLSv1.2 or TLSv1.3", o.Prefix, p)
		}
		vs = append(vs, v)
	}
	slices.Sort(vs)
	vs = slices.Compact(vs)
	if int(vs[len(vs)-1]-vs[0]) != len(vs)-1 {
		return 0, 0, fmt.Errorf("tlsconf: %senabledProtocols %v: zkd can enable only a contiguous range of versions", o.Prefix, protos)
	}
	return vs[0], vs[len(vs)-1], nil
}

// suites maps ssl.ciphersuites to Go's suite IDs; nil means Go's defaults.
// TLS 1.3 suites are always Go's (Go does not let them be chosen), so they
// are accepted in the list and not passed on.
func (o Options) suites() ([]uint16, error) {
	if len(o.CipherSuites) == 0 {
		return nil, nil
	}
	byName := map[string]uint16{}
	for _, s := range tls.CipherSuites() {
		byName[s.Name] = s.ID
	}
	tls13 := map[string]bool{"TLS_AES_128_GCM_SHA256": true, "TLS_AES_256_GCM_SHA384": true, "TLS_CHACHA20_POLY1305_SHA256": true}
	var ids []uint16
	for _, n := range o.CipherSuites {
		if tls13[n] {
			continue
		}
		id, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("tlsconf: %sciphersuites: %q is not a cipher suite zkd supports", o.Prefix, n)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Enabled reports whether a key store is configured.
func (o Options) Enabled() bool { return o.KeyStoreLocation != "" }

// material is what one load of the stores produced.
type material struct {
	cert  tls.Certificate
	roots *x509.CertPool // nil: system roots
	conf  *tls.Config    // the server config built from it
}

// Reloader holds an endpoint's TLS material and reloads it when the store
// files change, checking at most once per Interval.
type Reloader struct {
	opts     Options
	interval time.Duration
	onError  func(error)
	cur      atomic.Pointer[material]

	mu      sync.Mutex
	checked time.Time
	stamp   string // fileStamp at the last load
}

// NewReloader loads the stores of o and returns a Reloader serving them.
// onError, if not nil, is told of reloads that fail (the old material stays
// in use); interval 0 means one second.
func NewReloader(o Options, interval time.Duration, onError func(error)) (*Reloader, error) {
	if !o.Enabled() {
		return nil, fmt.Errorf("tlsconf: %skeyStore.location is not set", o.Prefix)
	}
	if interval <= 0 {
		interval = time.Second
	}
	r := &Reloader{opts: o, interval: interval, onError: onError}
	// Stamp before loading: a file rewritten in between is loaded again at
	// the next check rather than missed.
	r.stamp = r.fileStamp()
	m, err := r.load()
	if err != nil {
		return nil, err
	}
	r.cur.Store(m)
	r.checked = time.Now()
	return r, nil
}

// fileStamp describes the store files' current contents by their SHA-256.
// Sizes and modification times are not enough: a file rewritten within one
// tick of the kernel's clock with a same-sized certificate keeps both.
func (r *Reloader) fileStamp() string {
	var b strings.Builder
	for _, p := range []string{r.opts.KeyStoreLocation, r.opts.TrustStoreLocation} {
		if p == "" {
			continue
		}
		if data, err := os.ReadFile(p); err == nil {
			fmt.Fprintf(&b, "%s:%x;", p, sha256.Sum256(data))
		} else {
			fmt.Fprintf(&b, "%s:missing;", p)
		}
	}
	return b.String()
}

// load reads the stores and builds the server configuration.
func (r *Reloader) load() (*material, error) {
	o := r.opts
	cert, err := LoadKeyStore(o.KeyStoreLocation, o.KeyStorePassword, o.KeyStoreType)
	if err != nil {
		return nil, err
	}
	m := &material{cert: cert}
	if o.TrustStoreLocation != "" {
		if m.roots, err = LoadTrustStore(o.TrustStoreLocation, o.TrustStorePassword, o.TrustStoreType); err != nil {
			return nil, err
		}
	}
	lo, hi, _ := o.versions()
	suites, _ := o.suites()
	m.conf = &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    m.roots,
		RootCAs:      m.roots,
		MinVersion:   lo,
		MaxVersion:   hi,
		CipherSuites: suites,
	}
	switch o.ClientAuth {
	case ClientAuthNeed:
		m.conf.ClientAuth = tls.RequireAndVerifyClientCert
	case ClientAuthWant:
		m.conf.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		m.conf.ClientAuth = tls.NoClientCert
	}
	return m, nil
}

// maybeReload reloads the stores if their files changed since the last
// look, which is at most once per interval.
func (r *Reloader) maybeReload() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) < r.interval {
		return
	}
	r.checked = time.Now()
	stamp := r.fileStamp()
	if stamp == r.stamp {
		return
	}
	m, err := r.load()
	if err != nil {
		// A half-written file: keep the old material, retry next time.
		if r.onError != nil {
			r.onError(err)
		}
		return
	}
	r.stamp = stamp
	r.cur.Store(m)
}

// ServerConfig returns a tls.Config for a listener: each handshake uses the
// material current at that moment, reloaded when the files changed.
func (r *Reloader) ServerConfig() *tls.Config {
	return &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			r.maybeReload()
			return r.cur.Load().conf, nil
		},
	}
}

// VerifyPeerNames reports ssl.*.hostnameVerification: used between
// members, where both ends check the other's name.
func (r *Reloader) VerifyPeerNames() bool { return r.opts.HostnameVerification }

// Certificate returns the certificate currently presented.
func (r *Reloader) Certificate() tls.Certificate { return r.cur.Load().cert }

// ClientConfig returns a tls.Config for dialing a server named serverName
// with the endpoint's material: its certificate as client certificate, its
// trust store as roots, and the server's name checked when
// HostnameVerification is on (the chain is checked either way).
func (r *Reloader) ClientConfig(serverName string) *tls.Config {
	m := r.cur.Load()
	return ClientConfigFor(r.opts, &m.cert, m.roots, serverName)
}

// ClientConfigFor builds a client tls.Config from o, an optional client
// certificate and roots (nil: the system's).
func ClientConfigFor(o Options, cert *tls.Certificate, roots *x509.CertPool, serverName string) *tls.Config {
	lo, hi, _ := o.versions()
	suites, _ := o.suites()
	c := &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: lo, MaxVersion: hi, CipherSuites: suites}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	if !o.HostnameVerification {
		// Verify the chain, not the name, as Java's ZKTrustManager does.
		c.InsecureSkipVerify = true
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("tlsconf: server sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, ic := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return c
}
