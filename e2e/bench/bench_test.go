//go:build bench

package bench

import (
	"os"
	"testing"
	"time"
)

// TestCompareModes is make bench's comparison: the same churn through dcm in
// each mode, then docs/bench.md, its SVGs and README's headline. It is built
// only with -tags bench (make bench), so go test ./... leaves it out rather
// than skipping it; BENCH_QUICK=1 shortens it.
func TestCompareModes(t *testing.T) {
	began := time.Now()
	cfg := configFor(os.Getenv("BENCH_QUICK") != "")
	script := MakeScript(cfg.Workload)
	certs := makeCerts(t, script)
	rep := Report{Config: cfg, Command: os.Getenv("DCM_BENCH_CMD"), Date: began, LoadBefore: loadAvg()}
	for _, name := range script.Order {
		if script.Edge[name] {
			rep.EdgeRoutes++
		}
	}
	if rep.Command == "" {
		rep.Command = "go test -tags bench -run TestCompareModes ./e2e/bench/"
	}
	for _, mode := range Modes() {
		t.Run(mode.Test, func(t *testing.T) {
			res := RunMode(t, cfg, mode, script, certs)
			t.Logf("%s: reloads %v, p50 %.1f ms p99 %.1f ms max %.1f ms (%d timed, %d gave up), certificate rotation p50 %.1f ms max %.1f ms (%d timed, %d gave up), PSS peak %.0f MB end %.0f MB, old workers peak %d, failed %d (%v), streams cut %d (%v), CPU %.1f s (baseline %.1f), HAProxy CPU %.1f s, commands %d (%d changes)",
				mode.Name, res.Reloads, pct(res.Latencies, .5), pct(res.Latencies, .99), pct(res.Latencies, 1), len(res.Latencies), res.ProbeTimeouts,
				pct(res.CertLatencies, .5), pct(res.CertLatencies, 1), len(res.CertLatencies), res.CertTimeouts,
				res.PeakPSSMB, res.EndPSSMB, res.PeakOld, res.Failed, res.FailReasons, res.StreamsCut, res.StreamReasons, res.CPU, res.CPUBaseline, res.HAProxyCPU, res.Commands, res.Changes)
			rep.Results = append(rep.Results, res)
		})
	}
	if t.Failed() || len(rep.Results) != len(Modes()) {
		t.Fatal("a mode failed: docs/bench.md is left as it was")
	}
	t.Run("micro", func(t *testing.T) { rep.Micro = RunMicro(t, cfg.Quick) })
	rep.Elapsed = time.Since(began)
	rep.LoadAfter = loadAvg()
	dir, readme := "../../docs", "../../README.md"
	if d := os.Getenv("DCM_BENCH_OUT"); d != "" { // elsewhere than the repository, e.g. to try it out
		dir, readme = d, ""
	}
	if err := rep.Write(dir, readme); err != nil {
		t.Fatal(err)
	}

	// What the issue asks dcm to show: no reload at all (endpoint changes
	// and certificates at runtime, routes into spares that deletes give
	// back), so no old worker, and no failed request.
	dyn := rep.Results[len(rep.Results)-1]
	if n := dyn.endpointReloads(); n != 0 {
		t.Errorf("dynamic: %d reloads for endpoint changes, want 0", n)
	}
	if n := dyn.ReloadCount(); n != 0 || len(dyn.Reloads) > 0 {
		t.Errorf("dynamic: reloads %v, want none", dyn.Reloads)
	}
	if dyn.PeakOld != 0 {
		t.Errorf("dynamic: %d old workers at the peak, want 0", dyn.PeakOld)
	}
	if dyn.Failed != 0 {
		t.Errorf("dynamic: %d failed requests (%v), want 0", dyn.Failed, dyn.FailReasons)
	}
	if dyn.CertTimeouts != 0 || len(dyn.CertLatencies) != dyn.Events[CertRotate] {
		t.Errorf("dynamic: %d of %d rotated certificates served, %d not within %s",
			len(dyn.CertLatencies), dyn.Events[CertRotate], dyn.CertTimeouts, cfg.ProbeLimit)
	}
}
