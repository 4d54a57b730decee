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
	rep := Report{Config: cfg, Command: os.Getenv("DCM_BENCH_CMD"), Date: began, LoadBefore: loadAvg()}
	if rep.Command == "" {
		rep.Command = "go test -tags bench -run TestCompareModes ./e2e/bench/"
	}
	for _, mode := range Modes() {
		t.Run(mode.Test, func(t *testing.T) {
			res := RunMode(t, cfg, mode, script)
			t.Logf("%s: reloads %v, p50 %.1f ms p99 %.1f ms max %.1f ms (%d timed, %d gave up), PSS peak %.0f MB end %.0f MB, old workers peak %d, failed %d (%v), streams cut %d (%v), CPU %.1f s (baseline %.1f), HAProxy CPU %.1f s, commands %d (%d changes)",
				mode.Name, res.Reloads, pct(res.Latencies, .5), pct(res.Latencies, .99), pct(res.Latencies, 1), len(res.Latencies), res.ProbeTimeouts,
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

	// What the issue asks dcm to show.
	dyn := rep.Results[len(rep.Results)-1]
	if n := dyn.endpointReloads(); n != 0 {
		t.Errorf("dynamic: %d reloads for endpoint changes, want 0", n)
	}
	// Old workers come only from reloads; dynamic reloads only for routes
	// (pool-exhausted), which docs/bench.md then spells out.
	if dyn.PeakOld != 0 && dyn.ReloadCount() == 0 {
		t.Errorf("dynamic: %d old workers at the peak without a reload, want 0", dyn.PeakOld)
	}
	if dyn.Failed != 0 {
		t.Errorf("dynamic: %d failed requests (%v), want 0", dyn.Failed, dyn.FailReasons)
	}
}
