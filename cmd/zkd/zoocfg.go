package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// zooCfg is a parsed zoo.cfg: ZooKeeper's own keys, the server.N lines, and
// every other key as the system property "zookeeper.<key>", as
// QuorumPeerConfig does. -D flags in SERVER_JVMFLAGS and JVMFLAGS add
// properties too, so scripts written for zkServer.sh keep working.
type zooCfg struct {
	TickTime          time.Duration
	InitLimit         int
	SyncLimit         int
	DataDir           string
	DataLogDir        string
	ClientPort        int
	ClientPortAddress string
	MaxClientCnxns    int
	MinSessionTimeout time.Duration // 0: 2 × tickTime
	MaxSessionTimeout time.Duration // 0: 20 × tickTime
	FourLetterWords   []string
	AdminEnable       bool
	AdminAddress      string // admin.serverAddress; "" = all interfaces
	AdminPort         int
	// MetricsEnabled is set by metricsProvider.className (ZooKeeper's
	// Prometheus provider) or metricsProvider.httpPort.
	MetricsEnabled    bool
	MetricsHost       string // metricsProvider.httpHost; "" = all interfaces
	MetricsPort       int
	SnapCount         int
	SnapRetainCount   int
	ReconfigEnabled   bool
	StandaloneEnabled bool
	Servers           map[int]string // server.N lines, raw
	MyID              int64

	// LockDelay is zkd.lockDelayMs (docs/fencing.md, "Lock delay"); 0 is off.
	LockDelay time.Duration
	// NoBootstrap is zkd.bootstrap=false: an empty member waits for a
	// seeded one to send it the state by raft (docs/migration.md).
	NoBootstrap bool
	// Props holds system properties by full name ("zookeeper.extendedTypesEnabled",
	// "jute.maxbuffer", "readonlymode.enabled", …).
	Props map[string]string
	// NoEffect lists the keys set that zkd accepts and does not act on
	// (zooCfgKeys' noEffect), for one log line at start.
	NoEffect []string
	// UnknownKeys lists the keys set that zkd does not read at all, in
	// file order; each gets a warning at start naming the closest key zkd
	// knows. As in ZooKeeper they still become system properties.
	UnknownKeys []string

	// ClientPortSet tells an explicit clientPort from the default: with only
	// secureClientPort given, zkd serves TLS alone, as ZooKeeper does.
	ClientPortSet bool
	// SecureClientPort and SecureClientPortAddress (default
	// clientPortAddress) are the TLS-only client port; 0 = none.
	SecureClientPort        int
	SecureClientPortAddress string
	// QuorumPortUnification is the quorum portUnification key: members
	// take TLS and plaintext members on their ports (docs/security.md).
	// As in ZooKeeper's QuorumPeerConfig, zoo.cfg only: no system property.
	QuorumPortUnification bool
}

// defaultZooCfg returns ZooKeeper's defaults for the keys zkd reads.
func defaultZooCfg() *zooCfg {
	return &zooCfg{
		TickTime:          2 * time.Second,
		InitLimit:         10,
		SyncLimit:         5,
		ClientPort:        2181,
		MaxClientCnxns:    60,
		FourLetterWords:   []string{"srvr"},
		AdminEnable:       true,
		AdminPort:         8080,
		MetricsPort:       7000,
		SnapCount:         100000,
		SnapRetainCount:   3,
		StandaloneEnabled: true,
		Servers:           map[int]string{},
		Props:             map[string]string{},
	}
}

// readProperties parses Java properties text: key=value, key: value or
// key value; # and ! comments; surrounding white space dropped. Line
// continuations and escapes, which zoo.cfg files do not use, are taken
// literally.
func readProperties(r io.Reader) ([][2]string, error) {
	var kv [][2]string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=: \t")
		if i < 0 {
			kv = append(kv, [2]string{line, ""})
			continue
		}
		key := line[:i]
		val := strings.TrimSpace(line[i:])
		if val != "" && (val[0] == '=' || val[0] == ':') {
			val = strings.TrimSpace(val[1:])
		}
		if key == "" {
			return nil, fmt.Errorf("line %d: empty key", ln)
		}
		kv = append(kv, [2]string{key, val})
	}
	return kv, sc.Err()
}

// parseZooCfg reads a zoo.cfg file; relative dataDir paths are taken from
// the working directory, as ZooKeeper does.
func parseZooCfg(path string, env []string) (*zooCfg, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("zkd: read config: %w", err)
	}
	defer f.Close()
	kv, err := readProperties(f)
	if err != nil {
		return nil, fmt.Errorf("zkd: config %s: %w", path, err)
	}
	c := defaultZooCfg()
	addJVMFlags(c.Props, env)
	for _, p := range kv {
		if err := c.set(p[0], p[1]); err != nil {
			return nil, fmt.Errorf("zkd: config %s: %s=%s: %w", path, p[0], p[1], err)
		}
		switch st, ok := keyStatusOf(p[0]); {
		case !ok:
			c.UnknownKeys = append(c.UnknownKeys, p[0])
		case st == noEffect:
			c.NoEffect = append(c.NoEffect, p[0])
		}
	}
	if c.DataDir == "" {
		return nil, fmt.Errorf("zkd: config %s: dataDir is not set", path)
	}
	if b, err := os.ReadFile(filepath.Join(c.DataDir, "myid")); err == nil {
		id, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("zkd: %s: myid: %w", filepath.Join(c.DataDir, "myid"), err)
		}
		c.MyID = id
	}
	return c, nil
}

// addJVMFlags takes -Dkey=value words of SERVER_JVMFLAGS and JVMFLAGS as
// system properties.
func addJVMFlags(props map[string]string, env []string) {
	for _, name := range []string{"JVMFLAGS", "SERVER_JVMFLAGS"} {
		prefix := name + "="
		for _, e := range env {
			if !strings.HasPrefix(e, prefix) {
				continue
			}
			for _, w := range strings.Fields(e[len(prefix):]) {
				if !strings.HasPrefix(w, "-D") {
					continue
				}
				k, v, _ := strings.Cut(w[2:], "=")
				if k != "" {
					props[k] = v
				}
			}
		}
	}
}

// set applies one zoo.cfg key.
func (c *zooCfg) set(key, val string) error {
	atoi := func(dst *int) error {
		n, err := strconv.Atoi(val)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		*dst = n
		return nil
	}
	ms := func(dst *time.Duration) error {
		var n int
		if err := atoi(&n); err != nil {
			return err
		}
		*dst = time.Duration(n) * time.Millisecond
		return nil
	}
	boolean := func(dst *bool) error {
		switch strings.ToLower(val) {
		case "true", "yes":
			*dst = true
		case "false", "no":
			*dst = false
		default:
			return fmt.Errorf("not true or false")
		}
		return nil
	}
	switch key {
	case "tickTime":
		return ms(&c.TickTime)
	case "initLimit":
		return atoi(&c.InitLimit)
	case "syncLimit":
		return atoi(&c.SyncLimit)
	case "dataDir":
		c.DataDir = val
	case "dataLogDir":
		c.DataLogDir = val
	case "clientPort":
		c.ClientPortSet = true
		return atoi(&c.ClientPort)
	case "secureClientPort":
		return atoi(&c.SecureClientPort)
	case "secureClientPortAddress":
		c.SecureClientPortAddress = val
	case "clientPortAddress":
		c.ClientPortAddress = val
	case "maxClientCnxns":
		return atoi(&c.MaxClientCnxns)
	case "minSessionTimeout":
		return ms(&c.MinSessionTimeout)
	case "maxSessionTimeout":
		return ms(&c.MaxSessionTimeout)
	case "4lw.commands.whitelist":
		c.FourLetterWords = nil
		for _, w := range strings.Split(val, ",") {
			if w = strings.TrimSpace(w); w != "" {
				c.FourLetterWords = append(c.FourLetterWords, w)
			}
		}
	case "admin.enableServer":
		return boolean(&c.AdminEnable)
	case "admin.serverPort":
		return atoi(&c.AdminPort)
	case "admin.serverAddress":
		c.AdminAddress = val
	case "metricsProvider.httpPort":
		c.MetricsEnabled = true
		return atoi(&c.MetricsPort)
	case "metricsProvider.httpHost":
		c.MetricsHost = val
	case "metricsProvider.className":
		c.MetricsEnabled = strings.Contains(val, "Prometheus")
	case "snapCount":
		return atoi(&c.SnapCount)
	case "autopurge.snapRetainCount":
		return atoi(&c.SnapRetainCount)
	case "reconfigEnabled":
		return boolean(&c.ReconfigEnabled)
	case "standaloneEnabled":
		return boolean(&c.StandaloneEnabled)
	case "portUnification":
		return boolean(&c.QuorumPortUnification)
	case "zkd.bootstrap":
		var b bool
		if err := boolean(&b); err != nil {
			return err
		}
		c.NoBootstrap = !b
	case "zkd.lockDelayMs":
		if err := ms(&c.LockDelay); err != nil {
			return err
		}
		if c.LockDelay < 0 {
			return fmt.Errorf("must not be negative")
		}
	case "autopurge.purgeInterval", "metricsProvider.exportJvmInfo", "dynamicConfigFile",
		"localSessionsEnabled", "localSessionsUpgradingEnabled",
		"preAllocSize", "peerType", "electionAlg", "quorumListenOnAllIPs", "forceSync":
		// Read and accepted; zkd's behaviour does not depend on them
		// (zooCfgKeys marks them noEffect).
	default:
		if n, ok := strings.CutPrefix(key, "server."); ok {
			id, err := strconv.Atoi(n)
			if err != nil || id < 0 {
				return fmt.Errorf("server id is not a number")
			}
			c.Servers[id] = val
			return nil
		}
		if strings.HasPrefix(key, "group.") || strings.HasPrefix(key, "weight.") {
			return nil
		}
		// As QuorumPeerConfig: any other key is a system property.
		c.Props["zookeeper."+key] = val
	}
	return nil
}

// prop returns a system property, looking first under its full name and
// then with the "zookeeper." prefix zoo.cfg keys get.
func (c *zooCfg) prop(name string) (string, bool) {
	if v, ok := c.Props[name]; ok {
		return v, true
	}
	v, ok := c.Props["zookeeper."+name]
	return v, ok
}

// propBool reads a boolean property; ZooKeeper takes "true" (any case).
func (c *zooCfg) propBool(name string) bool {
	v, _ := c.prop(name)
	return strings.EqualFold(strings.TrimSpace(v), "true")
}

// propInt reads an integer property, def when absent.
func (c *zooCfg) propInt(name string, def int64) (int64, error) {
	v, ok := c.prop(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 0, 64)
	if err != nil {
		return 0, fmt.Errorf("zkd: property %s=%q is not a number", name, v)
	}
	return n, nil
}

// propNames lists the properties set, sorted, for the envi output.
func (c *zooCfg) propNames() []string {
	names := make([]string, 0, len(c.Props))
	for k := range c.Props {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
