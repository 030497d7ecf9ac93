package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
)

// fourLetterWords are the commands this server answers.
var fourLetterWords = map[string]bool{
	"ruok": true, "srvr": true, "stat": true, "mntr": true, "conf": true,
	"cons": true, "envi": true, "isro": true, "wchs": true, "wchc": true,
	"wchp": true, "dump": true, "crst": true, "srst": true, "dirs": true,
	"gtmk": true, "stmk": true,
	// Known to ZooKeeper but without meaning here: refused with the
	// whitelist message unless whitelisted, then answered with nothing
	// (ZooKeeper's digest history; the admin command hash has zkd's digest).
	"hash": true,
}

// notServingText is ZooKeeper's answer to the words that need a running
// server while a member is not serving (no quorum, not read-only).
const notServingText = "This ZooKeeper instance is not currently serving requests"

// needsServing lists the words answered with notServingText while the
// member is not serving, as ZooKeeper's commands that check
// isZKServerRunning; ruok, envi, isro, gtmk and stmk always answer.
var needsServing = map[string]bool{
	"srvr": true, "stat": true, "mntr": true, "conf": true, "cons": true,
	"wchs": true, "wchc": true, "wchp": true, "dump": true, "crst": true,
	"srst": true, "dirs": true, "hash": true,
}

// defaultTraceMask is ZooKeeper's initial trace mask (ZooTrace: client
// request, client ping and server packet tracing), reported by gtmk.
const defaultTraceMask = 306

func isFourLetterWord(w string) bool { return fourLetterWords[w] }

// FourLetterAllowed reports whether the whitelist lets word run.
func (s *Server) FourLetterAllowed(word string) bool {
	return s.whitelist == nil || s.whitelist[word]
}

// serveFourLetter answers a 4-letter word and returns; serve closes the
// connection.
func (c *conn) serveFourLetter(word string) {
	c.br.Discard(4)
	c.recv.Add(1)
	c.s.stats.packetsReceived.Add(1)
	c.s.stats.bytesReceived.Add(4) // ZooKeeper counts the word's bytes as read
	var out string
	switch {
	case !c.s.FourLetterAllowed(word):
		out = word + " is not executed because it is not in the whitelist.\n"
	case word == "stmk":
		// The new mask follows the word as a big-endian long.
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.maxTimeout()))
		var mask [8]byte
		if _, err := io.ReadFull(c.br, mask[:]); err != nil {
			c.s.log.Info("4-letter word stmk without its 8-byte mask, closing connection", zap.String("remote", c.remote))
			return
		}
		c.s.traceMask.Store(int64(binary.BigEndian.Uint64(mask[:])))
		out = c.s.FourLetter("gtmk")
	default:
		out = c.s.FourLetter(word)
	}
	c.s.log.Debug("4-letter word", zap.String("remote", c.remote), zap.String("cmd", word))
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.maxTimeout()))
	if _, err := c.nc.Write([]byte(out)); err == nil {
		c.s.stats.packetsSent.Add(1)
	}
	if tc, ok := c.nc.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

// FourLetter returns the text ZooKeeper 3.8 answers to a 4-letter word,
// ignoring the whitelist; "" for an unknown word.
func (s *Server) FourLetter(word string) string {
	var b strings.Builder
	running := s.serving() || s.b.Mode() == "read-only"
	if needsServing[word] && !running {
		if word == "hash" {
			return notServingText
		}
		return notServingText + "\n"
	}
	switch word {
	case "ruok":
		return "imok"
	case "isro":
		switch {
		case !running:
			return "null"
		case s.b.Mode() == "read-only":
			return "ro"
		}
		return "rw"
	case "gtmk":
		// zkd keeps the mask for ZooKeeper's tools; it has no trace log
		// for it to filter.
		return strconv.FormatInt(s.traceMask.Load(), 10)
	case "srvr":
		s.Stats().write(&b, nil)
	case "stat":
		st := s.Stats()
		st.write(&b, s.Conns())
	case "cons":
		for _, ci := range s.Conns() {
			ci.write(&b, false)
		}
		b.WriteString("\n")
	case "mntr":
		for _, kv := range s.Monitor() {
			fmt.Fprintf(&b, "%s\t%s\n", kv.Key, kv.Value)
		}
	case "conf":
		for _, kv := range s.Conf() {
			fmt.Fprintf(&b, "%s=%s\n", kv.Key, kv.Value)
		}
		if qc, ok := s.b.(QuorumConfReporter); ok {
			if lines, ok := qc.QuorumConf(); ok {
				b.WriteString(strings.Join(lines, "\n"))
			}
		}
	case "envi":
		b.WriteString("Environment:\n")
		for _, kv := range s.Environment() {
			fmt.Fprintf(&b, "%s=%s\n", kv.Key, kv.Value)
		}
	case "wchs":
		w := s.WatchSummary()
		fmt.Fprintf(&b, "%d connections watching %d paths\nTotal watches:%d\n", w.Connections, w.Paths, w.Watches)
	case "wchc":
		for _, e := range s.WatchesBySession() {
			fmt.Fprintf(&b, "%s\n", hexID(e.SessionID))
			for _, p := range e.Paths {
				fmt.Fprintf(&b, "\t%s\n", p)
			}
		}
		b.WriteString("\n")
	case "wchp":
		for _, e := range s.WatchesByPath() {
			fmt.Fprintf(&b, "%s\n", e.Path)
			for _, id := range e.Sessions {
				fmt.Fprintf(&b, "\t%s\n", hexID(id))
			}
		}
		b.WriteString("\n")
	case "dump":
		s.Dump().write(&b)
	case "crst":
		s.ResetConnStats()
		return "Connection stats reset.\n"
	case "srst":
		s.ResetStats()
		return "Server stats reset.\n"
	case "dirs":
		d, l := s.Dirs()
		fmt.Fprintf(&b, "datadir_size: %d\nlogdir_size: %d\n", d, l)
	default:
		return ""
	}
	return b.String()
}

// Stats backs srvr and stat.
type Stats struct {
	Version         string // "3.8.4-zkd, built on …"
	MinLatency      int64  // ms
	AvgLatency      float64
	MaxLatency      int64
	PacketsReceived int64
	PacketsSent     int64
	Connections     int
	Outstanding     int64
	Zxid            int64
	Mode            string
	NodeCount       int
}

// Stats returns the server's statistics.
func (s *Server) Stats() Stats {
	lo, avg, hi, _ := s.stats.latency.snapshot()
	st := Stats{
		Version:         s.fullVersion(),
		MinLatency:      lo,
		AvgLatency:      avg,
		MaxLatency:      hi,
		PacketsReceived: s.stats.packetsReceived.Load(),
		PacketsSent:     s.stats.packetsSent.Load(),
		Connections:     len(s.connections()),
		Outstanding:     max(s.stats.outstanding.Load(), 0),
		Zxid:            s.b.LastZxid(),
		Mode:            s.b.Mode(),
	}
	if t := s.b.Tree(); t != nil {
		st.NodeCount = t.NodeCount()
	}
	return st
}

// write prints srvr's text, or stat's when conns is not nil.
func (st Stats) write(b *strings.Builder, conns []ConnInfo) {
	fmt.Fprintf(b, "Zookeeper version: %s\n", st.Version)
	if conns != nil {
		b.WriteString("Clients:\n")
		for _, ci := range conns {
			ci.write(b, true)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "Latency min/avg/max: %d/%s/%d\n", st.MinLatency, javaDouble(st.AvgLatency), st.MaxLatency)
	fmt.Fprintf(b, "Received: %d\n", st.PacketsReceived)
	fmt.Fprintf(b, "Sent: %d\n", st.PacketsSent)
	fmt.Fprintf(b, "Connections: %d\n", st.Connections)
	fmt.Fprintf(b, "Outstanding: %d\n", st.Outstanding)
	fmt.Fprintf(b, "Zxid: 0x%x\n", uint64(st.Zxid))
	fmt.Fprintf(b, "Mode: %s\n", st.Mode)
	fmt.Fprintf(b, "Node count: %d\n", st.NodeCount)
}

// javaDouble prints v rounded to 4 decimals as Java prints a double: the
// shortest form, always with a fractional part ("0.0", "1.0811").
func javaDouble(v float64) string {
	v = math.Round(v*10000) / 10000
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// uptimeMs is the time since New, in ms.
func (s *Server) uptimeMs() int64 { return time.Since(s.start).Milliseconds() }

func (s *Server) fullVersion() string {
	return s.cfg.Version + ", built on " + s.cfg.BuiltOn
}

// ConnInfo backs cons and stat: one client connection.
type ConnInfo struct {
	Remote       string // "/127.0.0.1:40000", as Java prints addresses
	Interest     int    // 1 while reading requests, 0 for a 4-letter-word connection
	Queued       int64  // requests received and not yet answered
	Received     int64  // packets
	Sent         int64  // packets
	SessionID    int64  // 0 before the handshake
	LastOp       string // ZooKeeper's 4-letter op name, "NA" before any
	Established  time.Time
	Timeout      int32 // ms
	LastCxid     int32 // -1 before any request
	LastZxid     int64 // -1 before any reply
	LastResponse int64 // ms since the server started, 0 before any reply
	LastLatency  int64 // ms
	MinLatency   int64
	AvgLatency   int64
	MaxLatency   int64
	// LastHeard is when the last packet of the connection arrived (or it
	// was accepted); not printed by cons, used by the web console.
	LastHeard time.Time
}

// write prints the connection as ServerCnxn.dumpConnectionInfo does.
func (ci ConnInfo) write(b *strings.Builder, brief bool) {
	fmt.Fprintf(b, " %s[%x](queued=%d,recved=%d,sent=%d", ci.Remote, ci.Interest, ci.Queued, ci.Received, ci.Sent)
	if !brief && ci.SessionID != 0 {
		fmt.Fprintf(b, ",sid=%s,lop=%s,est=%d,to=%d", hexID(ci.SessionID), ci.LastOp, ci.Established.UnixMilli(), ci.Timeout)
		if ci.LastCxid >= 0 {
			fmt.Fprintf(b, ",lcxid=0x%x", ci.LastCxid)
		}
		fmt.Fprintf(b, ",lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d",
			uint64(ci.LastZxid), ci.LastResponse, ci.LastLatency, ci.MinLatency, ci.AvgLatency, ci.MaxLatency)
	}
	b.WriteString(")\n")
}

// Conns returns every open connection, oldest first.
func (s *Server) Conns() []ConnInfo {
	cs := s.connectionsSorted()
	out := make([]ConnInfo, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.info())
	}
	return out
}

// connectionsSorted returns the open connections, oldest first.
func (s *Server) connectionsSorted() []*conn {
	cs := s.connections()
	slices.SortFunc(cs, func(a, b *conn) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return cs
}

// info snapshots the connection for cons.
func (c *conn) info() ConnInfo {
	ci := ConnInfo{
		Remote:    javaAddr(c.nc.RemoteAddr()),
		Interest:  1,
		Queued:    max(c.pending.Load(), 0),
		Received:  c.recv.Load(),
		Sent:      c.sent.Load(),
		SessionID: c.sessionID.Load(),
		Timeout:   c.timeout.Load(),
		LastOp:    "NA",
		LastCxid:  -1,
		LastZxid:  -1,
		LastHeard: time.UnixMilli(c.lastRecv.Load()),
	}
	if c.fourLetter.Load() {
		ci.Interest = 0
	}
	if ms := c.established.Load(); ms != 0 {
		ci.Established = time.UnixMilli(ms)
	}
	c.last.Lock()
	if c.last.op != "" {
		ci.LastOp = c.last.op
		ci.LastCxid = c.last.cxid
		ci.LastZxid = c.last.zxid
		ci.LastResponse = c.last.respTime.Sub(c.s.start).Milliseconds()
		ci.LastLatency = c.last.latency
	}
	c.last.Unlock()
	lo, avg, hi, _ := c.lat.snapshot()
	ci.MinLatency, ci.AvgLatency, ci.MaxLatency = lo, int64(avg), hi
	return ci
}

// javaAddr prints an address as Java's InetSocketAddress.toString.
func javaAddr(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return "/" + ta.IP.String() + ":" + strconv.Itoa(ta.Port)
	}
	return "/" + a.String()
}

// ResetStats clears what ZooKeeper's srst clears: the latency and packet
// counters, the reply sizes and every counter and summary of mntr
// (ServerMetrics.resetAll), those kept in serverStats included.
func (s *Server) ResetStats() {
	s.stats.reset()
	s.stats.bytesReceived.Store(0)
	s.stats.connectionRejected.Store(0)
	s.stats.largeRequestsRejected.Store(0)
	s.zm.reset()
}

// ResetConnStats clears every connection's counters (crst).
func (s *Server) ResetConnStats() {
	for _, c := range s.connections() {
		c.recv.Store(0)
		c.sent.Store(0)
		c.lat.reset()
		c.last.Lock()
		c.last.op, c.last.cxid, c.last.zxid, c.last.latency = "", 0, 0, 0
		c.last.respTime = time.Time{}
		c.last.Unlock()
	}
}

// KeyValue is one line of mntr, conf or envi.
type KeyValue struct {
	Key, Value string
}

// Monitor backs mntr and the admin monitor command: ZooKeeper's zk_*
// keys that this server reports (see ZKMetrics and docs/monitor.md for
// those it has no counterpart for), in ZooKeeper's order of kinds.
func (s *Server) Monitor() []KeyValue {
	lines := s.zm.reg.Lines()
	out := make([]KeyValue, len(lines))
	for i, l := range lines {
		out[i] = KeyValue{l.Key, l.Value}
	}
	return out
}

// sessionCount is the number of sessions with a connection here, used when
// the Backend cannot count sessions.
func (s *Server) sessionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.sessions)
}

// fileDescriptors returns the process's descriptor limit and open count.
func fileDescriptors() (maxFD, open uint64, ok bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, false
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, 0, false
	}
	return rl.Cur, uint64(len(ents)), true
}

// Conf backs conf: the settings in ZooKeeper's order.
func (s *Server) Conf() []KeyValue {
	port := s.cfg.ClientPort
	if port == 0 {
		if ta, ok := s.Addr().(*net.TCPAddr); ok {
			port = ta.Port
		}
	}
	d, l := s.Dirs()
	logDir := s.cfg.DataLogDir
	if logDir == "" {
		logDir = s.cfg.DataDir
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	out := []KeyValue{
		{"clientPort", strconv.Itoa(port)},
		{"secureClientPort", secureClientPort(s.cfg.SecureClientPort)},
		{"dataDir", snapDirName(s.cfg.DataDir)},
		{"dataDirSize", strconv.FormatInt(d, 10)},
		{"dataLogDir", snapDirName(logDir)},
		{"dataLogSize", strconv.FormatInt(l, 10)},
		{"tickTime", ms(s.cfg.TickTime)},
		{"maxClientCnxns", strconv.Itoa(s.cfg.MaxClientCnxns)},
		{"minSessionTimeout", ms(s.cfg.minTimeout())},
		{"maxSessionTimeout", ms(s.cfg.maxTimeout())},
		{"clientPortListenBacklog", "-1"},
		{"serverId", strconv.FormatInt(s.cfg.ServerID, 10)},
	}
	return out
}

// snapDirName is how ZooKeeper 3.8 prints a data directory in conf: the
// version-2 directory its snapshots and logs live in. zkd keeps its Pebble
// stores directly in dir; the name is ZooKeeper's so that scripts reading
// conf find the path they expect.
func snapDirName(dir string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "version-2")
}

// secureClientPort is conf's secureClientPort: -1 when there is none.
func secureClientPort(p int) string {
	if p <= 0 {
		return "-1"
	}
	return strconv.Itoa(p)
}

// Dirs backs dirs: the bytes of the files under DataDir and DataLogDir (the
// same directory counted twice when DataLogDir is unset, as ZooKeeper does).
func (s *Server) Dirs() (dataDirSize, logDirSize int64) {
	dataDirSize = dirSize(s.cfg.DataDir)
	if s.cfg.DataLogDir == "" || s.cfg.DataLogDir == s.cfg.DataDir {
		return dataDirSize, dataDirSize
	}
	return dataDirSize, dirSize(s.cfg.DataLogDir)
}

func dirSize(dir string) int64 {
	if dir == "" {
		return 0
	}
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// Environment backs envi: ZooKeeper's keys where they make sense for a Go
// process, with go.* in place of java.*.
func (s *Server) Environment() []KeyValue {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	var uname, home string
	if u, err := user.Current(); err == nil {
		uname, home = u.Username, u.HomeDir
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	osVersion := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		osVersion = strings.TrimSpace(string(b))
	}
	mb := func(n uint64) string { return strconv.FormatUint(n>>20, 10) + "MB" }
	return []KeyValue{
		{"zookeeper.version", s.fullVersion()},
		{"host.name", host},
		{"go.version", runtime.Version()},
		{"go.maxprocs", strconv.Itoa(runtime.GOMAXPROCS(0))},
		{"os.name", osName()},
		{"os.arch", runtime.GOARCH},
		{"os.version", osVersion},
		{"user.name", uname},
		{"user.home", home},
		{"user.dir", wd},
		{"os.memory.free", mb(ms.HeapIdle - ms.HeapReleased)},
		{"os.memory.max", mb(ms.Sys)},
		{"os.memory.total", mb(ms.HeapSys)},
	}
}

// osName spells runtime.GOOS as Java's os.name does for common systems.
func osName() string {
	switch runtime.GOOS {
	case "linux":
		return "Linux"
	case "darwin":
		return "Mac OS X"
	case "windows":
		return "Windows"
	case "freebsd":
		return "FreeBSD"
	}
	return runtime.GOOS
}

// WatchSummary backs wchs. Like ZooKeeper 3.8's, it covers the data-watch
// table only (getData, exists and persistent watches): child watches do not
// show, so a path a session watches both ways counts once.
type WatchSummary struct {
	Connections int // connections with at least one data watch
	Paths       int // distinct paths with a data watch
	Watches     int // (path, connection) pairs of data watches
}

// WatchSummary returns the watch totals.
func (s *Server) WatchSummary() WatchSummary {
	t := s.b.Tree()
	if t == nil {
		return WatchSummary{}
	}
	return WatchSummary{
		Connections: len(t.WatchesByWatcher()),
		Paths:       len(t.WatchesByPath()),
		Watches:     t.DataWatchCount(),
	}
}

// SessionWatches is one entry of wchc.
type SessionWatches struct {
	SessionID int64
	Paths     []string // sorted
}

// WatchesBySession backs wchc: each connection's watched paths, by session.
func (s *Server) WatchesBySession() []SessionWatches {
	t := s.b.Tree()
	if t == nil {
		return nil
	}
	var out []SessionWatches
	for w, paths := range t.WatchesByWatcher() {
		c, ok := w.(*conn)
		if !ok {
			continue
		}
		out = append(out, SessionWatches{SessionID: c.sessionID.Load(), Paths: slices.Sorted(slices.Values(paths))})
	}
	slices.SortFunc(out, func(a, b SessionWatches) int {
		switch {
		case a.SessionID < b.SessionID:
			return -1
		case a.SessionID > b.SessionID:
			return 1
		}
		return 0
	})
	return out
}

// PathWatches is one entry of wchp.
type PathWatches struct {
	Path     string
	Sessions []int64 // sorted
}

// WatchesByPath backs wchp: each watched path with the sessions watching it.
func (s *Server) WatchesByPath() []PathWatches {
	t := s.b.Tree()
	if t == nil {
		return nil
	}
	var out []PathWatches
	for p, ws := range t.WatchesByPath() {
		e := PathWatches{Path: p}
		for _, w := range ws {
			if c, ok := w.(*conn); ok {
				e.Sessions = append(e.Sessions, c.sessionID.Load())
			}
		}
		slices.Sort(e.Sessions)
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b PathWatches) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// ExpirySet is one bucket of dump's expiry queues: the sessions (or
// connections) that expire at the same rounded deadline.
type ExpirySet struct {
	Deadline time.Time
	Members  []string // "0x…" session ids, or "ip: /addr sessionId: 0x…"
}

// SessionEphemerals is one session's ephemeral znodes, for dump.
type SessionEphemerals struct {
	SessionID int64
	Paths     []string // sorted
}

// Dump backs dump: the sessions connected here grouped by expiry deadline
// (last packet plus timeout, rounded up to a tick, as ZooKeeper's session
// ExpiryQueue), their ephemerals, and the connections grouped the same way
// (rounded up to 10 s, ZooKeeper's connection expiry interval).
type Dump struct {
	Sessions    []ExpirySet
	SessionN    int
	Ephemerals  []SessionEphemerals
	Connections []ExpirySet
	ConnN       int
}

// connExpiryInterval is ZooKeeper's sessionlessCnxnTimeout, the bucket size
// of its connection expiry queue.
const connExpiryInterval = 10 * time.Second

// Dump returns the data of dump.
func (s *Server) Dump() Dump {
	var d Dump
	sessions := map[int64][]string{}
	conns := map[int64][]string{}
	tick := s.cfg.TickTime.Milliseconds()
	roundUp := func(ms, interval int64) int64 { return (ms/interval + 1) * interval }
	var ids []int64
	for _, c := range s.connectionsSorted() {
		id := c.sessionID.Load()
		last := c.lastRecv.Load()
		to := int64(c.timeout.Load())
		if id != 0 {
			dl := roundUp(last+to, tick)
			sessions[dl] = append(sessions[dl], hexID(id))
			ids = append(ids, id)
			d.SessionN++
		} else {
			to = s.cfg.maxTimeout().Milliseconds()
		}
		dl := roundUp(last+to, connExpiryInterval.Milliseconds())
		conns[dl] = append(conns[dl], "ip: "+javaAddr(c.nc.RemoteAddr())+" sessionId: "+hexID(id))
		d.ConnN++
	}
	sets := func(m map[int64][]string) []ExpirySet {
		var out []ExpirySet
		for _, dl := range slices.Sorted(maps.Keys(m)) {
			out = append(out, ExpirySet{Deadline: time.UnixMilli(dl), Members: m[dl]})
		}
		return out
	}
	d.Sessions, d.Connections = sets(sessions), sets(conns)
	if t := s.b.Tree(); t != nil {
		for _, id := range ids {
			if ps := t.GetEphemerals(id, "/"); len(ps) > 0 {
				slices.Sort(ps)
				d.Ephemerals = append(d.Ephemerals, SessionEphemerals{id, ps})
			}
		}
	}
	return d
}

// write prints dump's text as ZooKeeper does.
func (d Dump) write(b *strings.Builder) {
	javaDate := "Mon Jan 02 15:04:05 MST 2006"
	fmt.Fprintf(b, "SessionTracker dump:\nSession Sets (%d)/(%d):\n", len(d.Sessions), d.SessionN)
	for _, set := range d.Sessions {
		fmt.Fprintf(b, "%d expire at %s:\n", len(set.Members), set.Deadline.Format(javaDate))
		for _, m := range set.Members {
			fmt.Fprintf(b, "\t%s\n", m)
		}
	}
	fmt.Fprintf(b, "ephemeral nodes dump:\nSessions with Ephemerals (%d):\n", len(d.Ephemerals))
	for _, e := range d.Ephemerals {
		fmt.Fprintf(b, "%s:\n", hexID(e.SessionID))
		for _, p := range e.Paths {
			fmt.Fprintf(b, "\t%s\n", p)
		}
	}
	fmt.Fprintf(b, "Connections dump:\nConnections Sets (%d)/(%d):\n", len(d.Connections), d.ConnN)
	for _, set := range d.Connections {
		fmt.Fprintf(b, "%d expire at %s:\n", len(set.Members), set.Deadline.Format(javaDate))
		for _, m := range set.Members {
			fmt.Fprintf(b, "\t%s\n", m)
		}
	}
}

// opName is ZooKeeper's short op name, as cons prints it in lop.
func opName(op int32) string {
	switch op {
	case jute.OpNotification:
		return "NOTI"
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		return "CREA"
	case jute.OpDelete:
		return "DELE"
	case jute.OpExists:
		return "EXIS"
	case jute.OpGetData:
		return "GETD"
	case jute.OpSetData:
		return "SETD"
	case jute.OpGetACL:
		return "GETA"
	case jute.OpSetACL:
		return "SETA"
	case jute.OpGetChildren, jute.OpGetChildren2:
		return "GETC"
	case jute.OpSync:
		return "SYNC"
	case jute.OpPing:
		return "PING"
	case jute.OpCheck:
		return "CHEC"
	case jute.OpMulti:
		return "MULT"
	case jute.OpMultiRead:
		return "MLTR"
	case jute.OpReconfig:
		return "RECO"
	case jute.OpCheckWatches:
		return "CHKW"
	case jute.OpRemoveWatches:
		return "REMW"
	case jute.OpAuth:
		return "AUTH"
	case jute.OpSetWatches, jute.OpSetWatches2:
		return "SETW"
	case jute.OpSASL:
		return "SASL"
	case jute.OpGetEphemerals:
		return "GETE"
	case jute.OpGetAllChildrenNumber:
		return "GETACN"
	case jute.OpAddWatch:
		return "ADDW"
	case jute.OpWhoAmI:
		return "HOMI"
	case jute.OpCreateSession:
		return "SESS"
	case jute.OpCloseSession:
		return "CLOS"
	}
	return "UNKN"
}

var _ datatree.AuthWatcher = (*conn)(nil)

// WatchAuth returns the connection's identities so the tree delivers events
// only for nodes the client may read, as ZooKeeper does.
func (c *conn) WatchAuth() []jute.Id { return c.authIDs() }
