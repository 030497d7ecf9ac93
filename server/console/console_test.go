package console

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server"
	"github.com/zkd/zkd/server/lockview"
)

// fakeSource is a Source over a real datatree and canned figures.
type fakeSource struct {
	tree    *datatree.Tree
	super   string // super digest
	conns   []server.ConnInfo
	watches []server.SessionWatches
	monitor []server.KeyValue
}

func (f *fakeSource) Tree() *datatree.Tree                      { return f.tree }
func (f *fakeSource) Mode() string                              { return "standalone" }
func (f *fakeSource) LastZxid() int64                           { return 0x100000005 }
func (f *fakeSource) Serving() bool                             { return true }
func (f *fakeSource) Monitor() []server.KeyValue                { return f.monitor }
func (f *fakeSource) Conns() []server.ConnInfo                  { return f.conns }
func (f *fakeSource) WatchesBySession() []server.SessionWatches { return f.watches }
func (f *fakeSource) Locks(prefix string) []lockview.Lock {
	return lockview.Build(f.tree.EphemeralsByParent(prefix, lockview.IsLockName), func(int64) string { return "" }, time.Now().UnixMilli())
}
func (f *fakeSource) AdminCommand(string) (map[string]any, bool) { return nil, false }
func (f *fakeSource) RaftStats() (server.RaftStats, bool)        { return server.RaftStats{}, false }

// FencingToken stands for server.Server.FencingToken (tested in package
// server): a token naming the node and the first id it was read with.
func (f *fakeSource) FencingToken(node string, auth []jute.Id) ([]byte, error) {
	if len(auth) == 0 {
		return nil, errors.New("no auth")
	}
	return []byte("token " + node + " for " + auth[0].Id), nil
}

// Identity mirrors server.Server.Identity (tested in package server).
func (f *fakeSource) Identity(scheme, cred string) ([]jute.Id, error) {
	if scheme != "digest" || !strings.Contains(cred, ":") {
		return nil, errors.New("server: identity scheme not supported")
	}
	ids := []jute.Id{{Scheme: "digest", Id: server.Digest(cred)}}
	if server.Digest(cred) == f.super {
		ids = append(ids, jute.Id{Scheme: "super"})
	}
	return ids, nil
}

// X509Identity stands for server.Server.X509Identity (tested with a real
// zkd in TestIntegration_ConsoleX509): x509 and the subject's CN.
func (f *fakeSource) X509Identity(cert *x509.Certificate) (string, []jute.Id, error) {
	subject := "CN=" + cert.Subject.CommonName
	return subject, []jute.Id{{Scheme: "x509", Id: subject}}, nil
}

const (
	alicePw = "alice:wonderland-pw"
	bobPw   = "bob:builder-pw"
	superPw = "root:super-secret-pw"
)

// newFake builds a tree:
//
//	/open       world READ, data "hello"
//	/alice      digest alice ALL, data {"k": 1}
//	/adminonly  digest alice ADMIN only, data "hidden"
//	/dir        250 children c000…c249
//	/locks/a    two go-zk lock nodes of sessions 0x11 and 0x22
func newFake(t testing.TB) *fakeSource {
	t.Helper()
	tr := datatree.New(datatree.Config{})
	zxid := int64(0x100000000)
	mk := func(path, data string, acl []jute.ACL, mode int32, session int64) {
		t.Helper()
		zxid++
		if _, _, err := tr.Create(&datatree.Txn{Zxid: zxid, Time: 1700000000000, SessionID: session},
			datatree.CreateOp{Path: path, Data: []byte(data), ACL: acl, Mode: mode}); err != nil {
			t.Fatalf("create %s: %v", path, err)
		}
	}
	alice := jute.Id{Scheme: "digest", Id: server.Digest(alicePw)}
	mk("/open", "hello", datatree.ReadACLUnsafe, jute.ModePersistent, 0)
	mk("/alice", `{"k": 1}`, []jute.ACL{{Perms: jute.PermAll, Id: alice}}, jute.ModePersistent, 0)
	mk("/adminonly", "hidden", []jute.ACL{{Perms: jute.PermAdmin, Id: alice}}, jute.ModePersistent, 0)
	mk("/dir", "", datatree.OpenACLUnsafe, jute.ModePersistent, 0)
	for i := range 250 {
		mk(fmt.Sprintf("/dir/c%03d", (i*7)%250), "", datatree.OpenACLUnsafe, jute.ModePersistent, 0)
	}
	mk("/locks", "", datatree.OpenACLUnsafe, jute.ModePersistent, 0)
	mk("/locks/a", "", datatree.OpenACLUnsafe, jute.ModePersistent, 0)
	mk("/locks/a/lock-0000000000", "", datatree.OpenACLUnsafe, jute.ModeEphemeral, 0x11)
	mk("/locks/a/lock-0000000001", "", datatree.OpenACLUnsafe, jute.ModeEphemeral, 0x22)
	return &fakeSource{tree: tr, super: server.Digest(superPw)}
}

// get serves one request on a console over src and returns the status and
// body; it fails the test if the body shows a secret.
func get(t *testing.T, c *Console, method, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, req)
	body := rec.Body.String()
	for _, secret := range []string{alicePw, bobPw, superPw, "wonderland-pw", "builder-pw", "super-secret-pw",
		strings.SplitN(server.Digest(alicePw), ":", 2)[1], strings.SplitN(server.Digest(superPw), ":", 2)[1]} {
		if strings.Contains(body, secret) {
			t.Errorf("%s %s shows the secret %q: %s", method, url, secret, body)
		}
	}
	return rec.Code, body
}

func newConsole(t *testing.T, src Source, identity string) *Console {
	t.Helper()
	c, err := New(src, Config{Identity: identity, SampleInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}

func TestTreeShowsOnlyWhatTheIdentityMayRead(t *testing.T) {
	src := newFake(t)
	tests := []struct {
		identity string
		header   string // Authorization, as ZooKeeper 3.9's admin server takes it
		path     string
		data     string // "" = hidden
		acl      bool
	}{
		{"", "", "/open", "", false}, // no identity: structure only
		{"", "", "/alice", "", false},
		{"digest:" + alicePw, "", "/open", "hello", true},
		{"digest:" + alicePw, "", "/alice", `{"k": 1}`, true},
		{"digest:" + alicePw, "", "/adminonly", "", true}, // ADMIN: ACL but not data
		{"digest:" + bobPw, "", "/alice", "", false},
		{"digest:" + bobPw, "", "/adminonly", "", false},
		{"digest:" + bobPw, "", "/open", "hello", true},
		{"digest:" + superPw, "", "/alice", `{"k": 1}`, true},
		{"", "digest " + alicePw, "/alice", `{"k": 1}`, true},
		{"digest:" + alicePw, "digest " + bobPw, "/alice", "", false}, // the header wins
	}
	for _, tc := range tests {
		t.Run(tc.identity+"|"+tc.header+"|"+tc.path, func(t *testing.T) {
			c := newConsole(t, src, tc.identity)
			hdr := map[string]string{}
			if tc.header != "" {
				hdr["Authorization"] = tc.header
			}
			code, body := get(t, c, "GET", "/console/api/tree?path="+tc.path, hdr)
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			n := decode[nodeView](t, body)
			got := ""
			if n.Data != nil {
				b, _ := base64.StdEncoding.DecodeString(*n.Data)
				got = string(b)
				if got == "" {
					t.Errorf("data shown empty")
				}
			} else if n.DataHidden == "" {
				t.Errorf("data hidden without a reason")
			}
			if got != tc.data {
				t.Errorf("data = %q, want %q", got, tc.data)
			}
			if (n.ACL != nil) != tc.acl {
				t.Errorf("ACL shown = %v, want %v (%s)", n.ACL != nil, tc.acl, body)
			}
			if n.ACL == nil && n.ACLHidden == "" {
				t.Errorf("ACL hidden without a reason")
			}
			for _, a := range n.ACL {
				if a.Scheme == "digest" && !strings.HasSuffix(a.ID, ":x") {
					t.Errorf("digest id %q not redacted", a.ID)
				}
			}
			if n.Stat.NumChildren != 0 || n.Stat.DataLength == 0 {
				t.Errorf("stat = %+v, want the node's structure whatever the identity", n.Stat)
			}
		})
	}
}

func TestTreePaging(t *testing.T) {
	c := newConsole(t, newFake(t), "")
	var names []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		code, body := get(t, c, "GET", "/console/api/tree?path=/dir&limit=60&after="+after, nil)
		if code != 200 {
			t.Fatalf("status %d: %s", code, body)
		}
		n := decode[nodeView](t, body)
		if len(n.Children) > 60 || n.Matched != 250 {
			t.Fatalf("page of %d children, matched %d", len(n.Children), n.Matched)
		}
		for _, ch := range n.Children {
			names = append(names, ch.Name)
		}
		if !n.More {
			break
		}
		after = n.NextAfter
	}
	if len(names) != 250 || !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != 250 {
		t.Errorf("pages gave %d names (sorted %v), want 250 distinct in order", len(names), slices.IsSorted(names))
	}

	tests := []struct {
		url    string
		status int
		kids   int
		errSub string
	}{
		{"/console/api/tree?path=/dir", 200, defaultLimit, ""},
		{"/console/api/tree?path=/dir&limit=100000", 200, 250, ""}, // capped at maxLimit, and 250 exist
		{"/console/api/tree?path=/dir&prefix=c24", 200, 10, ""},
		{"/console/api/tree?path=/dir&prefix=zz", 200, 0, ""},
		{"/console/api/tree?path=/dir&limit=0", 400, 0, "limit must be at least 1"},
		{"/console/api/tree?path=/dir&limit=-3", 400, 0, "not a non-negative number"},
		{"/console/api/tree?path=/dir&limit=ten", 400, 0, "not a non-negative number"},
		{"/console/api/tree?path=dir", 400, 0, "not a znode path"},
		{"/console/api/tree?path=/dir/", 400, 0, "not a znode path"},
		{"/console/api/tree?path=/a//b", 400, 0, "not a znode path"},
		{"/console/api/tree?path=/nope", 404, 0, "no znode /nope"},
		{"/console/api/nothing", 404, 0, "no API"},
	}
	for _, tc := range tests {
		code, body := get(t, c, "GET", tc.url, nil)
		if code != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.url, code, tc.status, body)
			continue
		}
		if tc.status != 200 {
			if e := decode[map[string]string](t, body)["error"]; !strings.Contains(e, tc.errSub) {
				t.Errorf("%s: error %q, want it to say %q", tc.url, e, tc.errSub)
			}
			continue
		}
		if n := decode[nodeView](t, body); len(n.Children) != tc.kids {
			t.Errorf("%s: %d children, want %d", tc.url, len(n.Children), tc.kids)
		}
	}
}

func TestSessionsSortAndLimit(t *testing.T) {
	src := newFake(t)
	now := time.Now()
	for i, id := range []int64{0x22, 0x11, 0x33} {
		src.conns = append(src.conns, server.ConnInfo{SessionID: id, Remote: "/127.0.0.1:" + strconv.Itoa(5000-i),
			Timeout: int32(4000 + 1000*i), LastHeard: now.Add(-time.Duration(i) * time.Second)})
	}
	src.conns = append(src.conns, server.ConnInfo{Remote: "/127.0.0.1:1"}) // no session yet: not listed
	src.watches = []server.SessionWatches{{SessionID: 0x33, Paths: []string{"/a", "/b"}}}
	c := newConsole(t, src, "")
	ids := func(body string) []string {
		var out []string
		for _, s := range decode[struct{ Sessions []sessionView }](t, body).Sessions {
			out = append(out, s.ID)
		}
		return out
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{"0x11", "0x22", "0x33"}},
		{"sort=id&order=desc", []string{"0x33", "0x22", "0x11"}},
		{"sort=timeout", []string{"0x22", "0x11", "0x33"}},
		{"sort=remote", []string{"0x33", "0x11", "0x22"}},
		{"sort=heard", []string{"0x22", "0x11", "0x33"}},
		{"sort=ephemerals&order=desc", []string{"0x11", "0x22", "0x33"}}, // one lock node each for 0x11 and 0x22, stable
		{"sort=watches&order=desc&limit=1", []string{"0x33"}},
		{"limit=2&offset=2", []string{"0x33"}},
		{"offset=10", nil},
	}
	for _, tc := range tests {
		code, body := get(t, c, "GET", "/console/api/sessions?"+tc.query, nil)
		if code != 200 {
			t.Errorf("%s: status %d: %s", tc.query, code, body)
			continue
		}
		if got := ids(body); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	for _, q := range []string{"sort=password", "order=up", "limit=0", "offset=-1"} {
		if code, body := get(t, c, "GET", "/console/api/sessions?"+q, nil); code != 400 || !strings.Contains(body, "console:") {
			t.Errorf("%s: status %d, want 400 with an error: %s", q, code, body)
		}
	}
}

func TestLocks(t *testing.T) {
	c := newConsole(t, newFake(t), "")
	code, body := get(t, c, "GET", "/console/api/locks", nil)
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	d := decode[struct {
		Locks []lockview.Lock
		Total int
	}](t, body)
	if d.Total != 1 || len(d.Locks) != 1 || d.Locks[0].Path != "/locks/a" ||
		len(d.Locks[0].Holders) != 1 || d.Locks[0].Holders[0].Session != "0x11" || len(d.Locks[0].Waiters) != 1 {
		t.Errorf("locks = %s", body)
	}
	if code, _ := get(t, c, "GET", "/console/api/locks?path=locks", nil); code != 400 {
		t.Errorf("relative path: status %d, want 400", code)
	}
	if strings.Contains(body, "tokens") {
		t.Errorf("locks without an identity carry tokens: %s", body)
	}
	// With an identity, the holder's token comes, the waiter's does not.
	c = newConsole(t, newFake(t), "digest:"+alicePw)
	_, body = get(t, c, "GET", "/console/api/locks", nil)
	dt := decode[struct {
		Locks  []lockview.Lock
		Total  int
		Tokens map[string]string
	}](t, body)
	if len(dt.Tokens) != 1 || len(dt.Locks) != 1 {
		t.Fatalf("tokens with an identity = %s", body)
	}
	holder := "/locks/a/" + dt.Locks[0].Holders[0].Name
	tok, err := base64.StdEncoding.DecodeString(dt.Tokens[holder])
	if err != nil || !strings.HasPrefix(string(tok), "token "+holder+" for ") {
		t.Errorf("token of %s = %q (%v): %s", holder, tok, err, body)
	}
}

func TestReadOnly(t *testing.T) {
	c := newConsole(t, newFake(t), "digest:"+alicePw)
	for _, url := range []string{"/console/api/tree?path=/open", "/console/", "/console/console.js", "/console/api/locks"} {
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			code, body := get(t, c, m, url, nil)
			if code != http.StatusMethodNotAllowed || !strings.Contains(body, "read-only") {
				t.Errorf("%s %s: status %d, want 405 saying read-only: %s", m, url, code, body)
			}
		}
	}
}

func TestIdentityErrors(t *testing.T) {
	src := newFake(t)
	for _, id := range []string{"digest", "digest:", "digest:nopassword", "ip:127.0.0.1", ":x"} {
		if _, err := New(src, Config{Identity: id}); err == nil || !strings.Contains(err.Error(), "console:") {
			t.Errorf("identity %q: err = %v, want a console error", id, err)
		}
	}
	for _, cfg := range []Config{{SampleInterval: -1}, {Window: -1}, {SampleInterval: time.Minute, Window: time.Second}} {
		if _, err := New(src, cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	c := newConsole(t, src, "digest:"+alicePw)
	for _, h := range []string{"digest", "ip 127.0.0.1", "digest nopassword"} {
		code, body := get(t, c, "GET", "/console/api/tree?path=/alice", map[string]string{"Authorization": h})
		if code != http.StatusUnauthorized || strings.Contains(body, "\"data\"") {
			t.Errorf("Authorization %q: status %d, want 401 and no data: %s", h, code, body)
		}
	}
	_, body := get(t, c, "GET", "/console/api/whoami", nil)
	if !strings.Contains(body, `"user": "alice"`) {
		t.Errorf("whoami = %s, want user alice", body)
	}
}

func TestAssetsAreEmbeddedAndLocal(t *testing.T) {
	c := newConsole(t, newFake(t), "")
	code, body := get(t, c, "GET", "/console/", nil)
	if code != 200 || !strings.Contains(body, `<script src="console.js"`) {
		t.Fatalf("index: status %d: %.200s", code, body)
	}
	req := httptest.NewRequest("GET", "/console/", nil)
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, req)
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP = %q", csp)
	}
	if code, _ := get(t, c, "GET", "/console", nil); code != http.StatusMovedPermanently {
		t.Errorf("/console: status %d, want a redirect", code)
	}
	// No asset names another host: the only URL allowed is the SVG
	// namespace, which browsers never fetch.
	url := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	fs.WalkDir(assetFS, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, _ := assetFS.Open(p)
		b, _ := io.ReadAll(f)
		f.Close()
		for _, m := range url.FindAllString(string(b), -1) {
			if m != "http://www.w3.org" {
				t.Errorf("%s names a remote URL %q", p, m)
			}
		}
		return nil
	})
}

func TestSamplerRing(t *testing.T) {
	src := newFake(t)
	s := newSampler(src, 4)
	t0 := time.Unix(1700000000, 0)
	for i := range 6 {
		src.monitor = []server.KeyValue{
			{Key: "zk_packets_received", Value: strconv.Itoa(i * 50)},
			{Key: "zk_znode_count", Value: strconv.Itoa(100 + i)},
			{Key: "zk_cnt_election_time", Value: strconv.Itoa(i / 3)},
			{Key: "zk_sum_election_time", Value: strconv.Itoa(i / 3 * 250)},
		}
		s.sample(t0.Add(time.Duration(i) * 5 * time.Second))
	}
	pts := s.points()
	if len(pts) != 4 {
		t.Fatalf("%d points, want the last 4", len(pts))
	}
	idx := slices.IndexFunc(series[:], func(sr struct{ Key, Title, Unit string }) bool { return sr.Key == "znode_count" })
	for i, p := range pts {
		if p.T != t0.Add(time.Duration(i+2)*5*time.Second).UnixMilli() || p.Values[idx] != float64(102+i) {
			t.Errorf("point %d = %+v", i, p)
		}
		if p.Values[0] != 10 { // 50 packets in 5 s
			t.Errorf("point %d: %v requests/s, want 10", i, p.Values[0])
		}
	}
	if el := s.elections(); len(el) != 1 || el[0].DurationMs != 250 {
		t.Errorf("elections = %+v, want one of 250 ms", el)
	}
}

// TestElectionsKeptAcrossRestarts: with an ElectionsFile, the elections
// and the time recording began survive a restart of the console (of the
// member), the elections a process had before its first sample (its
// start-up election) are recorded, and a damaged file starts a new
// history rather than stopping the member.
func TestElectionsKeptAcrossRestarts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "console-elections.json")
	elections := func(cnt, sum int) *fakeSource {
		src := newFake(t)
		src.monitor = []server.KeyValue{{Key: "zk_cnt_election_time", Value: strconv.Itoa(cnt)}, {Key: "zk_sum_election_time", Value: strconv.Itoa(sum)}}
		return src
	}
	open := func(src Source, want int) (*Console, []election) {
		t.Helper()
		c, err := New(src, Config{SampleInterval: time.Hour, ElectionsFile: file})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		deadline := time.Now().Add(10 * time.Second)
		for len(c.metrics.elections()) < want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		return c, c.metrics.elections()
	}
	c1, els := open(elections(1, 300), 1)
	if len(els) != 1 || els[0].DurationMs != 300 || els[0].Count != 1 {
		t.Fatalf("first start: elections %+v, want the start-up one of 300 ms", els)
	}
	c1.Close()
	since := c1.started.UnixMilli()

	// The restarted process counts from zero again: two elections, 500 ms.
	c2, els := open(elections(2, 500), 2)
	if len(els) != 2 || els[0].DurationMs != 300 || els[1].DurationMs != 250 || els[1].Count != 2 {
		t.Fatalf("after a restart: elections %+v, want the recorded one then 2 of 250 ms mean", els)
	}
	_, body := get(t, c2, "GET", "/console/api/ensemble", nil)
	if v := decode[ensembleView](t, body); v.ElectionsSince != since {
		t.Errorf("elections_since %d after a restart, want the first start's %d", v.ElectionsSince, since)
	}
	c2.Close()

	if err := os.WriteFile(file, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	c3, els := open(elections(0, 0), 0)
	if len(els) != 0 || c3.started.UnixMilli() < since {
		t.Errorf("damaged file: elections %+v since %v, want a new history", els, c3.started)
	}
}
