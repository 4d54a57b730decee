//go:build bench

package bench

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestScale is make bench's scale section: dcm at two cluster sizes (1,000
// and 10,000 routes; 200 and 2,000 with BENCH_QUICK=1; BENCH_SCALE_ROUTES=a,b
// for others), written into docs/bench.md between its scale markers. Goals
// that are not met are reported, not failed; a wrong answer through
// HAProxy fails the test and leaves the page as it was. Built only with
// -tags bench; make bench runs it after the comparison, make bench-scale
// alone.
func TestScale(t *testing.T) {
	began := time.Now()
	cfg := scaleConfigFor(os.Getenv("BENCH_QUICK") != "")
	if s := os.Getenv("BENCH_SCALE_ROUTES"); s != "" {
		sizes, err := ScaleSizes(s)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Sizes = sizes
	}
	rep := ScaleReport{Config: cfg, Command: os.Getenv("DCM_BENCH_CMD"), Date: began, Cores: runtime.NumCPU(), LoadBefore: loadAvg()}
	if rep.Command == "" {
		rep.Command = "go test -tags bench -run TestScale ./e2e/bench/"
	}
	farm := startPodFarm(t, cfg.Listeners+cfg.Endpoints) // the last ones for the throughput's 10 routes
	t.Run("control", func(t *testing.T) {
		rep.Control = throughputControl(t, cfg, farm)
		t.Logf("throughput control, %d routes against %d: %.0f vs %.0f req/s, median round %.2f", baseRoutes, baseRoutes,
			rep.Control.RPS, rep.Control.BaseRPS, rep.Control.Median())
	})
	for i, n := range cfg.Sizes {
		t.Run(fmt.Sprintf("routes-%d", n), func(t *testing.T) {
			r := RunScale(t, cfg, n, farm)
			rep.Results[i] = r
			if r.StartErr != "" {
				return
			}
			t.Logf("%d routes: event → HAProxy p50 %.1f ms p99 %.1f ms; add p99 %.1f ms, %d commands for %d; delete p99 %.1f ms, %d commands for %d; "+
				"throughput %.0f req/s vs %.0f at %d routes (median round %.2f; over %d routes of each %.2f); ready %s, serving %s, dcm RSS +%.0f MB (peak +%.0f, heap +%.0f), HAProxy %.0f MB PSS, %d spares (%d passthrough); "+
				"growth by %d: %d reloads %v; resync %s from the last write, %s from the first (writes %s); notes %q",
				n, pct(r.Event, .5), pct(r.Event, .99), pct(r.Add, .99), r.AddChanges, len(r.Add), pct(r.Delete, .99), r.DeleteChanges, len(r.Delete),
				r.Throughput.RPS, r.Throughput.BaseRPS, baseRoutes, r.Throughput.Median(), baseRoutes, r.Lookup.Median(), r.Ready, r.Served, r.DCMRSSMB, r.DCMPeakMB, r.DCMHeapMB, r.HAProxyPSSMB, r.Spares, r.TCPSpares,
				r.Grown, r.GrowReloads, r.GrowReasons, r.ResyncLast, r.ResyncFirst, r.ResyncWrite, r.Notes)
		})
	}
	if t.Failed() {
		t.Fatal("a size failed: docs/bench.md is left as it was")
	}
	rep.Elapsed, rep.LoadAfter = time.Since(began), loadAvg()
	dir := "../../docs"
	if d := os.Getenv("DCM_BENCH_OUT"); d != "" { // elsewhere than the repository, e.g. to try it out
		dir = d
	}
	if err := rep.WriteScale(dir); err != nil {
		t.Fatal(err)
	}
}

// TestPodFarmProcess is the scale section's pods when TestScale starts
// the test binary again for them (PodFarmEnv set; see podFarm): it serves
// until its standard input ends.
func TestPodFarmProcess(t *testing.T) {
	v := os.Getenv(PodFarmEnv)
	if v == "" {
		t.Skip("the scale section's pods: TestScale runs it in a process of its own")
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", PodFarmEnv, v, err)
	}
	if err := ServePodFarm(n, os.Stdin, os.Stdout); err != nil {
		t.Fatal(err)
	}
}
