package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func msec(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// scaleRun is a report of a run at 1,000 routes and a failed start at
// 10,000, as TestScale writes it.
func scaleRun() ScaleReport {
	small := ScaleResult{Routes: 1000, Event: []time.Duration{msec(1.5), msec(3), msec(12)},
		Add: []time.Duration{msec(9), msec(30)}, AddChanges: 2040, AddVerbs: map[string]int{"add map": 2020, "add server": 20},
		Delete: []time.Duration{msec(8), msec(15)}, DeleteChanges: 60, DeleteVerbs: map[string]int{"del server": 20, "show servers": 7},
		Throughput: Throughput{RPS: 5000, BaseRPS: 8000, Requests: 10000, BaseReqs: 16000, Ratios: []float64{0.5, 0.6, 0.7, 0.9}},
		Lookup:     Throughput{RPS: 7000, BaseRPS: 8000, Requests: 14000, BaseReqs: 16000, Ratios: []float64{0.5, 0.6, 0.7, 0.9}},
		Ready:      2 * time.Second, Served: 2500 * time.Millisecond, DCMRSSMB: 80, DCMPeakMB: 90, DCMHeapMB: 40, HAProxyPSSMB: 100,
		Spares: 140, TCPSpares: 20, Grown: 1000, GrowReloads: 1, GrowReasons: map[string]int{"pool-exhausted": 1},
		GrowPeakSpares: 1000, GrowEndSpares: 120, GrowPSSMB: 150,
		ResyncWrite: msec(200), ResyncFirst: msec(260), ResyncLast: msec(60),
	}
	large := ScaleResult{Routes: 10000, StartErr: "after 65.2s, dcm stopped before it was ready: engine: start haproxy: initial configuration: validate: run haproxy -c: signal: killed"}
	return ScaleReport{Config: scaleConfigFor(false), Command: "make bench", Date: time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC),
		Elapsed: 3 * time.Minute, Cores: 2, LoadBefore: "1.00 1.00 1.00", LoadAfter: "2.00 2.00 2.00",
		Results: [2]ScaleResult{small, large}, Control: Throughput{Ratios: []float64{0.9, 1, 1.1}}}
}

// TestScaleMarkdown: every row has its goal, both sizes and their ratio,
// and says whether the goal is met at each; a size that did not start
// reads "—" and says why; the goals are listed in words.
func TestScaleMarkdown(t *testing.T) {
	md := scaleRun().Markdown()
	if !strings.HasPrefix(md, scaleStart) || !strings.HasSuffix(md, scaleEnd) {
		t.Fatalf("section without its markers:\n%s", md)
	}
	for _, want := range []string{
		"## Scale: 1,000 and 10,000 routes\n",
		"Written by `make bench` (full run) on 2026-12-04 18:00 UTC, 3m0s in all",
		"| # | figure | goal | 1,000 routes | 10,000 routes | 10,000 vs 1,000 | goal met today |\n",
		"| 1 | event → HAProxy acknowledged, p50 | ≤ 2 ms | 3.0 ms | — | — | **not met** at 1,000, not measured at 10,000 |\n",
		"| 2 | route add: commands that change HAProxy, per route | ≤ 50 | 1,020 | — | — |",
		"| 2 | route delete: commands that change HAProxy, per route | ≤ 50 | 30 | — | — | met at 1,000, not measured at 10,000 |\n",
		"| 3 | throughput at the size ÷ at 10 routes, all routes, median round | — | 0.70 (middle half of 4 rounds 0.60–0.90) |",
		"| 3 | throughput at the size ÷ at 10 routes, 10 routes of each, median round | ≥ 0.90 (within 10 %) | 0.70 (middle half of 4 rounds 0.60–0.90) |",
		"| 4 | startup: HAProxy serves every route | ≤ 10 s | 2.5 s | — |",
		"| 5 | reloads while the cluster grows by 1,000 routes | ≤ 1 | 1 (pool-exhausted 1) | — | — | met at 1,000, not measured at 10,000 |\n",
		"| 5 | spares at the growth's peak (a pool-exhausted reload's burst) | — | 1,000 | — |",
		// 980 × 12,120 + 20 × 23,400 bytes = 12,345,600 of 100 MiB.
		"| 5 | spares' memory at the growth's peak, share of HAProxy's at the start | — | 11.77 % |",
		// 100 × 12,120 + 20 × 23,400 bytes = 1,680,000 of 150 MiB.
		"| 5 | spares' memory at the growth's end, share of HAProxy's then | ≤ 2 % | 1.07 % |",
		// 120 × 12,120 + 20 × 23,400 bytes = 1,922,400 of 100 MiB.
		"| 5 | spares' memory, share of HAProxy's | ≤ 2 % | 1.83 % (120 HTTP × 12,120 + 20 passthrough × 23,400 bytes of 100 MB) |",
		"an empty\n   backend's cost measured on HAProxy 2.6 (`dcm.HAProxy26MemoryCosts`: 12,120 bytes an HTTP one, 23,400 a passthrough\n   one,",
		"| 6 | full resync: last write → HAProxy acknowledged all | < 100 ms | 60.0 ms | — | — | met at 1,000, not measured at 10,000 |\n",
		"(writing the 1,000 slices took 200.0 ms)",
		"gave a median round of 1.00 (middle\nhalf 0.90–1.10)",
		"when it is more than 10 %, the throughput goal is not judged.\n",
		"Goals met today at both sizes (1,000 and 10,000 routes):\n\n- none\n",
		"- **10,000 routes**: dcm did not start (after 65.2s, dcm stopped before it was ready: engine: start haproxy: initial configuration: validate: run haproxy -c: signal: killed).",
		"Goals met where measured, but not measured at both sizes:\n\n- route delete: commands that change HAProxy, per route (≤ 50): met at 1,000, not measured at 10,000\n",
		"commands per add: add map 1010, add server 10; per delete: del server 10;",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in:\n%s", want, md)
		}
	}
}

// TestScaleThroughputUnjudged: when two equal stacks read more than 10 %
// apart, the throughput's goal is left unjudged, and the page says why.
func TestScaleThroughputUnjudged(t *testing.T) {
	rep := scaleRun()
	rep.Control.Ratios = []float64{1.2, 1.38, 1.5}
	md := rep.Markdown()
	for _, want := range []string{
		"(middle half of 4 rounds 0.60–0.90) | — | — | not judged: two equal stacks read 1.38 in this run |\n",
		"Goals this run cannot judge:\n\n- throughput at the size ÷ at 10 routes, 10 routes of each, median round (≥ 0.90 (within 10 %)): not judged: two equal stacks read 1.38 in this run\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in:\n%s", want, md)
		}
	}
	if strings.Contains(md, "- throughput at the size ÷ at 10 routes, 10 routes of each, median round (≥ 0.90 (within 10 %)): **not met**") {
		t.Error("the throughput listed as not met")
	}
}

// TestScaleRatios: the ratio column is the large size over the small one,
// and a goal is judged at each size.
func TestScaleRatios(t *testing.T) {
	row := scaleRow{vals: [2]float64{2, 30}, format: fmtMS, meets: atMost(10)}
	if got := row.ratio(); got != "15×" {
		t.Errorf("ratio %q", got)
	}
	if got := row.verdict([2]int{1000, 10000}); got != "met at 1,000, **not met** at 10,000" {
		t.Errorf("verdict %q", got)
	}
	row.vals = [2]float64{math.NaN(), 3}
	if got, v := row.ratio(), row.verdict([2]int{200, 2000}); got != "—" || v != "not measured at 200, met at 2,000" {
		t.Errorf("ratio %q verdict %q", got, v)
	}
	row.vals = [2]float64{0, 0}
	if got := row.ratio(); got != "=" {
		t.Errorf("ratio of zeros %q", got)
	}
}

// TestScaleSectionKept: the comparison rewrites docs/bench.md but keeps the
// scale section, the scale run replaces only its section, and a page
// without one gets a placeholder.
func TestScaleSectionKept(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bench.md")
	read := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if err := lastRun().Write(dir, ""); err != nil {
		t.Fatal(err)
	}
	if page := read(); !strings.HasSuffix(page, "\n"+scaleStart+"## Scale\n\nNot run yet: `make bench` runs it after the comparison, `make bench-scale` alone.\n\n"+scaleEnd) {
		t.Fatalf("no placeholder at the end:\n%s", page)
	}
	scale := scaleRun()
	if err := scale.WriteScale(dir); err != nil {
		t.Fatal(err)
	}
	page := read()
	if !strings.Contains(page, scale.Markdown()) || strings.Contains(page, "Not run yet") || !strings.HasPrefix(page, "# dcm against") {
		t.Fatalf("scale section not in place:\n%s", page)
	}
	if err := lastRun().Write(dir, ""); err != nil {
		t.Fatal(err)
	}
	if again := read(); again != page {
		t.Errorf("the comparison changed the page around the kept section:\n%s", again)
	}
}

// TestScaleSizes: BENCH_SCALE_ROUTES names two sizes, the smaller first.
func TestScaleSizes(t *testing.T) {
	if got, err := ScaleSizes("1000, 2000"); err != nil || got != [2]int{1000, 2000} {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"1000", "2000,1000", "a,b", "10,100", "1,2,3"} {
		if _, err := ScaleSizes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
