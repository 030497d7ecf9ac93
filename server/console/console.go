package console

import (
	"crypto/x509"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server"
	"github.com/zkd/zkd/server/lockview"
)

// Source is what the console reads from a member; *server.Server
// implements it. Every method must be safe for concurrent use and must
// not block on the network or the log.
type Source interface {
	Tree() *datatree.Tree
	Mode() string
	LastZxid() int64
	Serving() bool
	Monitor() []server.KeyValue
	Conns() []server.ConnInfo
	WatchesBySession() []server.SessionWatches
	Locks(prefix string) []lockview.Lock
	AdminCommand(name string) (map[string]any, bool)
	RaftStats() (server.RaftStats, bool)
	// Identity returns the ids a client would carry after "addauth
	// scheme credential", or an error for a scheme it cannot vouch for.
	Identity(scheme, credential string) ([]jute.Id, error)
	// X509Identity returns the ids and subject a client would carry after
	// presenting cert, verified, on a secure client port.
	X509Identity(cert *x509.Certificate) (subject string, ids []jute.Id, err error)
	// FencingToken returns a lock node's signed fencing token as a client
	// with auth would read it at /zookeeper/fencing<lock node>.
	FencingToken(lockNode string, auth []jute.Id) ([]byte, error)
}

// Config configures a Console. The zero value is valid: no identity, the
// default intervals and limits.
type Config struct {
	// Identity is the console's identity as "scheme:credential", the
	// arguments of zkCli's addauth: "digest:user:password" is the only
	// scheme accepted. Data and ACLs are shown only where this identity
	// may read them. "" (the default) shows no data at all. zoo.cfg key:
	// zkd.console.identity.
	Identity string
	// SampleInterval is how often the metrics plots get a point; default
	// 5 s.
	SampleInterval time.Duration
	// Window is how much history the plots keep; default 15 min.
	Window time.Duration
	// Logger receives the sampler's errors; default none.
	Logger *zap.Logger
	// ElectionsFile, if set, keeps the elections the Ensemble page lists
	// across restarts (a small JSON file; zkd puts it in the data
	// directory). "" keeps them in memory only.
	ElectionsFile string
}

// Validate names the first bad field.
func (c Config) Validate() error {
	if c.SampleInterval < 0 {
		return fmt.Errorf("console: SampleInterval %v is negative", c.SampleInterval)
	}
	if c.Window < 0 {
		return fmt.Errorf("console: Window %v is negative", c.Window)
	}
	if c.SampleInterval > 0 && c.Window > 0 && c.Window < c.SampleInterval {
		return fmt.Errorf("console: Window %v is shorter than SampleInterval %v", c.Window, c.SampleInterval)
	}
	return nil
}

// Page limits: the largest answers the API gives, whatever is asked.
const (
	defaultLimit = 100
	maxLimit     = 1000
	// maxData is the most data bytes sent for one znode; the Stat gives
	// the full length.
	maxData = 64 << 10
)

// identity is a parsed Config.Identity.
type identity struct {
	scheme, user string // shown; never the credential
	ids          []jute.Id
}

// Console serves the web console. Make one with New, mount Handler under
// /console/ and Close it when the server stops.
type Console struct {
	src     Source
	cfg     Config
	ident   *identity // nil: none configured
	metrics *sampler
	assets  fs.FS
	started time.Time // when the sampler began: elections are recorded since

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

//go:embed assets
var assetFS embed.FS

// New returns a console over src and starts its metrics sampler. It
// fails if cfg is invalid or its identity is not one src accepts.
func New(src Source, cfg Config) (*Console, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.SampleInterval == 0 {
		cfg.SampleInterval = 5 * time.Second
	}
	if cfg.Window == 0 {
		cfg.Window = 15 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	c := &Console{src: src, cfg: cfg, started: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	if cfg.Identity != "" {
		id, err := parseIdentity(src, cfg.Identity)
		if err != nil {
			return nil, err
		}
		c.ident = id
	}
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return nil, err
	}
	c.assets = sub
	c.metrics = newSampler(src, int(cfg.Window/cfg.SampleInterval)+1)
	if cfg.ElectionsFile != "" {
		since, els, err := loadElections(cfg.ElectionsFile)
		if err != nil {
			// A lost history is no reason to stop a member: say so and
			// start a new one.
			cfg.Logger.Warn("console: the elections recorded before this start are lost", zap.String("file", cfg.ElectionsFile), zap.Error(err))
		} else if !since.IsZero() {
			c.started = since
			c.metrics.mu.elections = els
		}
		c.metrics.persist = func(els []election) {
			if err := saveElections(cfg.ElectionsFile, c.started, els); err != nil {
				cfg.Logger.Warn("console: could not record an election", zap.String("file", cfg.ElectionsFile), zap.Error(err))
			}
		}
		c.metrics.persist(c.metrics.elections()) // records since when
	}
	go c.sampleLoop()
	return c, nil
}

// parseIdentity turns "scheme:credential" into ids through src, the
// server's own authentication code.
func parseIdentity(src Source, s string) (*identity, error) {
	scheme, cred, ok := strings.Cut(s, ":")
	if !ok || scheme == "" || cred == "" {
		return nil, errors.New("console: identity must be scheme:credential, e.g. digest:user:password")
	}
	ids, err := src.Identity(scheme, cred)
	if err != nil {
		return nil, fmt.Errorf("console: identity: %w", err)
	}
	user, _, _ := strings.Cut(cred, ":")
	return &identity{scheme: scheme, user: user, ids: ids}, nil
}

// sampleLoop takes a metrics sample every SampleInterval until Close.
func (c *Console) sampleLoop() {
	defer close(c.done)
	c.metrics.sample(time.Now())
	tick := time.NewTicker(c.cfg.SampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case now := <-tick.C:
			c.metrics.sample(now)
		}
	}
}

// Close stops the sampler and waits for it. It is safe to call twice.
func (c *Console) Close() error {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
	return nil
}

// Handler serves the console's pages and API; mount it at "/console/"
// (it also redirects "/console" there).
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/console/api/", c.api())
	static := http.StripPrefix("/console/", http.FileServerFS(c.assets))
	mux.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		if !readOnly(w, r) {
			return
		}
		// The pages may not be framed, and load nothing from elsewhere.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		static.ServeHTTP(w, r)
	})
	mux.Handle("/console", http.RedirectHandler("/console/", http.StatusMovedPermanently))
	return mux
}

// readOnly answers 405 to anything but GET and HEAD and reports whether
// the request may go on.
func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	writeError(w, http.StatusMethodNotAllowed, "console: the console is read-only: "+r.Method+" is not allowed")
	return false
}
