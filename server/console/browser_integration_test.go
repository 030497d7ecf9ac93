package console_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/zkd/zkd/compat/zkproc"
)

// screenshots names a directory that receives the pages' screenshots
// besides the test's artifact directory; `go test -run Browser
// ./server/console -screenshots ../../docs/console` refreshes the docs'.
var screenshots = flag.String("screenshots", "", "also save the console screenshots in this directory")

// consoleIdentity is the console's identity in the browser test; the
// deep znode is readable by it alone.
const consoleIdentity = "ops:ops-secret-pw"

// chromium finds Debian's chromium (or another Chrome). Without one the
// test is skipped, or fails under CI=true: CI must run it.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium: apt-get install -y chromium (scripts/setup-deps.sh does)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser starts headless Chromium for the test. --no-sandbox is needed
// as root (CI runs as root), where Chromium refuses its sandbox.
func browser(t testing.TB) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 860),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() { cancelC(); cancelA() })
	// The first Run starts the browser, with no deadline: one would
	// stop the browser with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// run runs actions with a deadline, failing the test with what it waited
// for.
func run(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	value(t, ctx, what, chromedp.Steps(steps...))
}

// value runs one action with a deadline and returns its value.
func value[T any](t testing.TB, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// shoot saves a full-page PNG of the current page as name.png in the
// artifact directory and in -screenshots.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	dirs := []string{t.ArtifactDir()}
	if *screenshots != "" {
		dirs = append(dirs, *screenshots)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s: %s (%d bytes)", name, p, len(png))
	}
}

// waitFor polls cond every 20 ms until it holds or 30 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range ev { // drained, so go-zk never blocks on it
		}
	}()
	waitFor(t, "go-zk session", func() bool { return c.State() == zk.StateHasSession })
	t.Cleanup(c.Close)
	return c
}

func mustCreate(t *testing.T, c *zk.Conn, path, data string, acl []zk.ACL) {
	t.Helper()
	if _, err := c.Create(path, []byte(data), 0, acl); err != nil && err != zk.ErrNodeExists {
		t.Fatalf("create %s: %v", path, err)
	}
}

// TestIntegration_ConsoleBrowser drives the console of a real zkd in
// headless Chromium: a go-zk lock's holder and waiter on the Locks page,
// the waiter becoming holder when the holder's session ends, a deep znode
// readable by the console's identity alone, paging of a directory, the
// Sessions, Ensemble and Metrics pages, with a screenshot of each.
func TestIntegration_ConsoleBrowser(t *testing.T) {
	ctx := browser(t)
	srv := zkproc.StartZkd(t, zkproc.Options{
		AdminServer: true,
		ExtraCfg: map[string]string{
			"zkd.console.identity":         "digest:" + consoleIdentity,
			"zkd.console.sampleIntervalMs": "250",
		},
	})
	base := "http://" + srv.AdminAddr + "/console/"
	waitFor(t, "the admin server", func() bool {
		res, err := http.Get(base)
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == 200
	})

	// A deep znode only the console's identity may read, in a directory
	// of 150 children (two pages of 100).
	admin := connect(t, srv.Addr)
	user, pw, _ := strings.Cut(consoleIdentity, ":")
	if err := admin.AddAuth("digest", []byte(consoleIdentity)); err != nil {
		t.Fatal(err)
	}
	deep := "/app/orders/eu/west/shard-42/config"
	parts := strings.Split(deep, "/")[1:]
	for i := range parts[:len(parts)-1] {
		mustCreate(t, admin, "/"+strings.Join(parts[:i+1], "/"), "", zk.WorldACL(zk.PermAll))
	}
	for i := range 150 {
		mustCreate(t, admin, fmt.Sprintf("/app/orders/eu/west/shard-%d", i), "", zk.WorldACL(zk.PermAll))
	}
	mustCreate(t, admin, deep, `{"region":"eu-west","replicas":3,"leader":"db-7"}`, zk.DigestACL(zk.PermAll, user, pw))

	// The lock: holder first, then a waiter blocked behind it.
	holder, waiter := connect(t, srv.Addr), connect(t, srv.Addr)
	if err := zk.NewLock(holder, "/locks/orders-db", zk.WorldACL(zk.PermAll)).Lock(); err != nil {
		t.Fatal(err)
	}
	acquired := make(chan error, 1)
	go func() { acquired <- zk.NewLock(waiter, "/locks/orders-db", zk.WorldACL(zk.PermAll)).Lock() }()

	lockSel := `.lock[data-path="/locks/orders-db"]`
	row := func(role string, c *zk.Conn) string {
		return fmt.Sprintf(`%s tr.%s[data-session="0x%x"]`, lockSel, role, uint64(c.SessionID()))
	}
	run(t, ctx, "the Locks page shows the holder and its waiter",
		chromedp.Navigate(base+"#/locks"),
		chromedp.WaitVisible(chromedp.CSS(row("holder", holder))),
		chromedp.WaitVisible(chromedp.CSS(row("waiter", waiter))))
	shoot(t, ctx, "locks")

	// The holder's session ends: the page, without a reload, shows the
	// waiter holding.
	holder.Close()
	run(t, ctx, "the waiter becomes the holder on the Locks page",
		chromedp.WaitVisible(chromedp.CSS(row("holder", waiter))),
		chromedp.WaitNotPresent(chromedp.CSS(row("holder", holder))))
	select {
	case err := <-acquired:
		if err != nil {
			t.Fatalf("waiter's Lock: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter's go-zk Lock did not return")
	}
	shoot(t, ctx, "locks-handover")

	// The deep znode: JSON data and its ACL with the digest hash hidden.
	run(t, ctx, "browse the deep znode",
		chromedp.Navigate(base+"#/tree?path="+deep+"&format=json"),
		chromedp.WaitVisible(chromedp.CSS("#data")))
	data := value(t, ctx, "the data", chromedp.Text(chromedp.CSS("#data")))
	acl := value(t, ctx, "the ACL", chromedp.Text(chromedp.CSS("#acl")))
	if !strings.Contains(data, `"region": "eu-west"`) {
		t.Errorf("data shown as %q, want indented JSON", data)
	}
	if !strings.Contains(acl, "ops:x") || strings.Contains(acl, pw) {
		t.Errorf("ACL shown as %q, want ops:x and no secret", acl)
	}
	shoot(t, ctx, "tree")

	// Paging: the directory's first page has 100 children and a next
	// page with the rest.
	count := chromedp.Evaluate[int](`document.querySelectorAll("#children li").length`)
	run(t, ctx, "page a directory of 150 children",
		chromedp.Navigate(base+"#/tree?path=/app/orders/eu/west"),
		chromedp.WaitVisible(chromedp.CSS(`#children li[data-name="shard-0"]`)))
	n := value(t, ctx, "count children", count)
	if n != 100 {
		t.Errorf("first page shows %d children, want 100", n)
	}
	shoot(t, ctx, "tree-directory")
	run(t, ctx, "the next page",
		chromedp.Click(chromedp.CSS("#next-page")),
		chromedp.WaitVisible(chromedp.CSS(`#children li[data-name="shard-99"]`)))
	n = value(t, ctx, "count children", count)
	if n != 50 {
		t.Errorf("second page shows %d children, want 50", n)
	}

	run(t, ctx, "the Sessions page lists the waiter's session",
		chromedp.Navigate(base+"#/sessions"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#sessions tr[data-session="0x%x"]`, uint64(waiter.SessionID())))))
	shoot(t, ctx, "sessions")

	run(t, ctx, "the Ensemble page",
		chromedp.Navigate(base+"#/ensemble"),
		chromedp.WaitVisible(chromedp.CSS(`.banner.ok`)))
	shoot(t, ctx, "ensemble")

	// Some load, so the plots have a shape, then wait for 40 samples.
	for i := range 200 {
		if _, _, err := waiter.Get(fmt.Sprintf("/app/orders/eu/west/shard-%d", i%150)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "40 metrics samples", func() bool {
		res, err := http.Get(base + "api/metrics")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		var m struct{ Samples []json.RawMessage }
		return json.NewDecoder(res.Body).Decode(&m) == nil && len(m.Samples) >= 40
	})
	run(t, ctx, "the Metrics page draws 8 plots",
		chromedp.Navigate(base+"#/metrics"),
		chromedp.WaitVisible(chromedp.CSS(`#plots .plot:nth-child(8) polyline`)))
	shoot(t, ctx, "metrics")
}

// TestIntegration_ConsoleEnsembleMemberDown watches member 1's Ensemble
// page of a 3-member ensemble while the other two are killed: it lists
// the three members and their leader, keeps serving with one down, and
// says it cannot reach the others once both are down.
func TestIntegration_ConsoleEnsembleMemberDown(t *testing.T) {
	ctx := browser(t)
	members := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{AdminServer: true, TickTime: 200})
	base := "http://" + members[0].AdminAddr + "/console/"
	run(t, ctx, "the Ensemble page lists three members and a leader",
		chromedp.Navigate(base+"#/ensemble"),
		chromedp.WaitVisible(chromedp.CSS(`#members tr[data-member="3"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.banner.ok`)))
	// Every member's applied zxid, as the leader knows it, reaches this
	// member's page: a write's zxid shows on all three rows, all ready.
	c := connect(t, members[0].Addr)
	if _, err := c.Create("/progress", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Get("/progress")
	if err != nil {
		t.Fatal(err)
	}
	rows := func() string {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		s, _ := chromedp.Run(tctx, chromedp.Evaluate[string](
			`[...document.querySelectorAll("#members tr[data-member]")].map(r => r.dataset.member + " " +
			  r.querySelector('[data-col=zxid]').textContent + " " + r.querySelector('[data-col=lag]').textContent + " " +
			  r.querySelector('[data-col=ready]').textContent).join("; ")`))
		return s
	}
	var got string
	want := func(zxid int64) string {
		z := fmt.Sprintf("0x%x", zxid)
		return fmt.Sprintf("1 %s 0 ready; 2 %s 0 ready; 3 %s 0 ready", z, z, z)
	}
	// A later write (a session's) may move them on: any zxid at least
	// the create's, the same on all three rows.
	waitFor(t, "all three members ready at the create's zxid or later", func() bool {
		got = rows()
		var z int64
		n, _ := fmt.Sscanf(got, "1 0x%x", &z)
		return n == 1 && z >= st.Mzxid && got == want(z)
	})
	t.Logf("members: %s", got)
	// The leader computes the table and the followers relay its copy:
	// every member's replication command shows the three at that zxid.
	for _, m := range members {
		waitFor(t, "member "+m.AdminAddr+"'s replication table", func() bool {
			res, err := http.Get("http://" + m.AdminAddr + "/commands/replication")
			if err != nil {
				return false
			}
			defer res.Body.Close()
			var r struct {
				Known   bool
				Members []struct {
					Zxid  string
					Ready bool
				}
			}
			if json.NewDecoder(res.Body).Decode(&r) != nil || !r.Known || len(r.Members) != 3 {
				return false
			}
			for _, mp := range r.Members {
				var z int64
				if _, err := fmt.Sscanf(mp.Zxid, "0x%x", &z); err != nil || z < st.Mzxid || !mp.Ready {
					return false
				}
			}
			return true
		})
	}
	shoot(t, ctx, "ensemble-3")

	members[2].Kill()
	run(t, ctx, "still serving with one member down",
		chromedp.WaitVisible(chromedp.CSS(`.banner.ok`)))
	// Member 3 may have been the leader: the new leader, which member 3
	// never reported to, then shows it as never reported.
	waitFor(t, "member 3 shown as not in touch (or never reported, had it led)", func() bool {
		got = rows()
		return strings.Contains(got, "; 3 ") && (strings.HasSuffix(got, "not in touch") || strings.HasSuffix(got, "never reported"))
	})
	t.Logf("members with 3 down: %s", got)
	members[1].Kill()
	// The banner may first say the member knows no leader (the leader
	// went first) and only later, once this member stops serving, that it
	// cannot reach the others: wait for the second.
	var text string
	waitFor(t, "the banner to say this member cannot reach the others", func() bool {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		s, err := chromedp.Run(tctx, chromedp.Evaluate[string](
			`(document.querySelector(".banner.bad") || {textContent: ""}).textContent`))
		text = s
		return err == nil && strings.Contains(s, "cannot reach the other members")
	})
	t.Logf("banner %q", text)
	shoot(t, ctx, "ensemble-down")
}
