package metricsparity

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/zkd/zkd/compat/zkproc"
)

// dashboardFile is the Grafana dashboard shipped for zkd and ZooKeeper.
const dashboardFile = "../../docs/grafana/zookeeper.json"

var (
	// promQLNoise is what holds no metric name in an expression: label
	// matchers, range and subquery brackets, string literals, and the
	// label lists of by/without/on/ignoring.
	promQLNoise = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]|"[^"]*"|\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promQLIdent = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promQLWords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
)

// metricNames returns the metric names a PromQL expression selects:
// identifiers that are not functions, aggregations, keywords or numbers.
func metricNames(expr string) []string {
	clean := promQLNoise.ReplaceAllString(expr, " ")
	var out []string
	for _, loc := range promQLIdent.FindAllStringIndex(clean, -1) {
		name := clean[loc[0]:loc[1]]
		rest := strings.TrimLeft(clean[loc[1]:], " ")
		if strings.HasPrefix(rest, "(") || slices.Contains(promQLWords, strings.ToLower(name)) {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`znode_count{instance=~"$instance"}`, []string{"znode_count"}},
		{`rate(fsynctime_sum{instance=~"$instance"}[5m]) / rate(fsynctime_count{instance=~"$instance"}[5m])`, []string{"fsynctime_count", "fsynctime_sum"}},
		{`sum by (key) (rate(write_per_namespace_count{instance=~"a"}[5m]))`, []string{"write_per_namespace_count"}},
		{`updatelatency{quantile=~"0.5|0.99"} > bool 10`, []string{"updatelatency"}},
		{`histogram_quantile(0.9, sum without (le) (rate(x_bucket[1m]))) or vector(0)`, []string{"x_bucket"}},
	}
	for _, tc := range tests {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

// dashboardExprs returns every query of the dashboard's panels.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var exprs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no query", dashboardFile, p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	return exprs
}

// TestDashboardMetricsExported scrapes a standalone zkd after the workload
// and checks that every metric the Grafana dashboard queries is exported,
// a _sum or _count only as part of a summary, and that each is one of
// ZooKeeper 3.8's names (recorded in testdata), so that the dashboard
// works against ZooKeeper too.
func TestDashboardMetricsExported(t *testing.T) {
	port := zkproc.FreePort(t)
	srv := zkproc.StartZkd(t, zkproc.Options{ExtraCfg: prometheusCfg(port)})
	workload(t, []string{srv.Addr})
	fams := scrape(t, port)
	zkNames := map[string]bool{}
	for _, role := range roles {
		all := readRecorded(t, role)
		for _, k := range all {
			zkNames[metricOf(strings.TrimPrefix(k, "zk_"), all)] = true
		}
	}
	seen := 0
	for _, expr := range dashboardExprs(t) {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("dashboard query %q selects no metric", expr)
		}
		for _, name := range names {
			seen++
			base, fam := name, fams[name]
			if fam == nil {
				for _, suffix := range []string{"_sum", "_count"} {
					if b, ok := strings.CutSuffix(name, suffix); ok && fams[b] != nil && fams[b].GetType() == dto.MetricType_SUMMARY {
						base, fam = b, fams[b]
					}
				}
			}
			if fam == nil {
				t.Errorf("dashboard query %q: zkd does not export %s", expr, name)
			}
			if !zkNames[base] {
				t.Errorf("dashboard query %q: %s is not one of ZooKeeper 3.8's metrics", expr, base)
			}
		}
	}
	t.Logf("the dashboard's %d queries use metric names %d times", len(dashboardExprs(t)), seen)
}
