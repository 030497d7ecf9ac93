package console_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zkd/zkd/compat/zkproc"
)

// The figures of issue 23's closing note, at the sizes these flags give
// (`make console-figures` passes the issue's: 1M znodes, 10k sessions,
// 60 s idle). The defaults are small, so that `make bench` stays short.
var (
	figZnodes   = flag.Int("figures.znodes", 2000, "BenchmarkConsoleFigures: znodes in /big")
	figSessions = flag.Int("figures.sessions", 100, "BenchmarkConsoleFigures: idle sessions, one watch each")
	figIdle     = flag.Duration("figures.idle", 3*time.Second, "BenchmarkConsoleFigures: idle window for the console's RSS and CPU")
	figRuns     = flag.Int("figures.runs", 3, "BenchmarkConsoleFigures: runs of each timing")
)

// BenchmarkConsoleFigures measures the console of a real standalone zkd:
// API answer times (loopback HTTP) and page load times (headless
// Chromium, from navigation until the page's content is visible) with
// -figures.znodes children in one directory, then with -figures.sessions
// idle sessions on top; then the RSS and CPU of an idle, empty member
// with the console on against one with zkd.console.enabled=false over
// -figures.idle. It prints a table; it asserts nothing about the times.
// The load comes from zkbench (fill and sessions workloads), built here.
func BenchmarkConsoleFigures(b *testing.B) {
	ctx := browser(b)
	zkbench := filepath.Join(b.TempDir(), "zkbench")
	if out, err := exec.Command("go", "build", "-o", zkbench, "../../cmd/zkbench").CombinedOutput(); err != nil {
		b.Fatalf("build zkbench: %v\n%s", err, out)
	}
	s := zkproc.StartZkd(b, zkproc.Options{AdminServer: true, ExtraCfg: map[string]string{"maxClientCnxns": "0"}})
	base := "http://" + s.AdminAddr + "/console/"
	n := *figZnodes
	t0 := time.Now()
	if out, err := exec.Command(zkbench, "-servers", s.Addr, "-workload", "fill", "-count", strconv.Itoa(n),
		"-root", "/big", "-size", "16", "-clients", "16").CombinedOutput(); err != nil {
		b.Fatalf("zkbench fill: %v\n%s", err, out)
	}
	fmt.Printf("filled /big with %d znodes of 16 bytes in %v\n\n", n, time.Since(t0).Round(time.Millisecond))
	child := func(i int) string { return fmt.Sprintf("n%08d", i) }
	mid := child(n / 2)

	var rows [][3]string
	measure := func(what, api, page, visible string) {
		row := [3]string{what, "—", "—"}
		if api != "" {
			row[1] = spread(b, *figRuns, func() time.Duration { return apiTime(b, base+"api/"+api) })
		}
		if page != "" {
			row[2] = spread(b, *figRuns, func() time.Duration { return pageTime(b, ctx, base+page, visible) })
		}
		rows = append(rows, row)
	}
	measure("Tree of /", "tree?path=/", "#/tree?path=/", `#children li[data-name="big"]`)
	measure(fmt.Sprintf("Tree of /big, %d children, first page of 100", n), "tree?path=/big",
		"#/tree?path=/big", fmt.Sprintf(`#children li[data-name="%s"]`, child(0)))
	measure("Tree of /big, a page from the middle (after=)", "tree?path=/big&after="+mid,
		"#/tree?path=/big&after="+mid, fmt.Sprintf(`#children li[data-name="%s"]`, child(n/2+1)))
	measure("Tree of /big, name-prefix search", "tree?path=/big&prefix="+url.QueryEscape(child(n / 2)[:7]), "", "")
	measure("Locks", "locks", "#/locks", "#no-locks")
	measure("Metrics", "metrics", "#/metrics", "#plots .plot:nth-child(8)")
	measure("Ensemble", "ensemble", "#/ensemble", ".banner.ok")

	// Idle sessions on top, held by zkbench until it is stopped.
	sessions := exec.Command(zkbench, "-servers", s.Addr, "-workload", "sessions", "-clients", strconv.Itoa(*figSessions),
		"-watches", "1", "-warmup", "0s", "-duration", "24h")
	sessions.Stdout, sessions.Stderr = io.Discard, io.Discard
	if err := sessions.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { sessions.Process.Kill(); sessions.Wait() }()
	deadline := time.Now().Add(10 * time.Minute)
	for sessionTotal(base) < *figSessions {
		if time.Now().After(deadline) {
			b.Fatalf("the console does not list %d sessions after 10 minutes", *figSessions)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, sort := range []string{"id", "heard"} {
		measure(fmt.Sprintf("Sessions, %d sessions, 100 a page, sorted by %s", *figSessions, sort), "sessions?sort="+sort,
			"#/sessions?sort="+sort, "#sessions tr[data-session]")
	}
	measure(fmt.Sprintf("Ensemble, %d sessions", *figSessions), "ensemble", "#/ensemble", ".banner.ok")

	fmt.Printf("| what | API answer (min / median / max of %d) | page load |\n| --- | ---: | ---: |\n", *figRuns)
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s |\n", r[0], r[1], r[2])
	}
	sessions.Process.Kill()
	s.Stop()

	// An idle, empty member with the console and one without, side by
	// side over the same window.
	on := zkproc.StartZkd(b, zkproc.Options{AdminServer: true})
	off := zkproc.StartZkd(b, zkproc.Options{AdminServer: true, ExtraCfg: map[string]string{"zkd.console.enabled": "false"}})
	// Let both finish starting (Pebble's and raft's first background
	// work) before the window opens.
	time.Sleep(min(*figIdle, 10*time.Second))
	onStart, offStart := procUsage(b, on.PID()), procUsage(b, off.PID())
	time.Sleep(*figIdle) // the measured window itself
	onEnd, offEnd := procUsage(b, on.PID()), procUsage(b, off.PID())
	fmt.Printf("\nidle over %v: console on RSS %.1f MiB, CPU %v; console off RSS %.1f MiB, CPU %v (CPU resolution 10 ms)\n",
		*figIdle, onEnd.rssMiB, onEnd.cpu-onStart.cpu, offEnd.rssMiB, offEnd.cpu-offStart.cpu)
	b.ReportMetric(onEnd.rssMiB-offEnd.rssMiB, "MiB-console-rss")
}

// spread runs f runs times and formats min / median / max.
func spread(b *testing.B, runs int, f func() time.Duration) string {
	ds := make([]time.Duration, max(runs, 1))
	for i := range ds {
		ds[i] = f()
	}
	slices.Sort(ds)
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) }
	return ms(ds[0]) + " / " + ms(ds[len(ds)/2]) + " / " + ms(ds[len(ds)-1]) + " ms"
}

// apiTime is one GET of u, body read, on a fresh connection.
func apiTime(b *testing.B, u string) time.Duration {
	c := http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	t0 := time.Now()
	res, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil || res.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: status %d, %v", u, res.StatusCode, err)
	}
	return time.Since(t0)
}

// pageTime loads u from a blank page and waits until visible is.
func pageTime(b *testing.B, ctx context.Context, u, visible string) time.Duration {
	run(b, ctx, "blank page", chromedp.Navigate("about:blank"))
	t0 := time.Now()
	run(b, ctx, "load "+u, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS(visible)))
	return time.Since(t0)
}

// sessionTotal is the number of sessions the console lists, 0 on error.
func sessionTotal(base string) int {
	res, err := http.Get(base + "api/sessions?limit=1")
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	var v struct{ Total int }
	json.NewDecoder(res.Body).Decode(&v)
	return v.Total
}

// usage is a process's resident memory and CPU time so far.
type usage struct {
	rssMiB float64
	cpu    time.Duration
}

// procUsage reads pid's VmRSS and utime+stime from /proc.
func procUsage(b *testing.B, pid int) usage {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	var u usage
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			u.rssMiB = kb / 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command's closing parenthesis: utime and stime are
	// the 12th and 13th, in clock ticks (100 a second on Linux).
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ut, _ := strconv.ParseInt(rest[11], 10, 64)
	st, _ := strconv.ParseInt(rest[12], 10, 64)
	u.cpu = time.Duration(ut+st) * 10 * time.Millisecond
	return u
}
