package bench

import (
	"strings"
	"testing"
	"time"
)

// lastRun is the report of the run of 2026-12-02 (docs/bench.md), as far as
// the README's excerpt reads it: one latency a mode stands for its p99.
func lastRun() Report {
	rep := Report{Config: configFor(false), Date: time.Date(2026, 12, 2, 19, 46, 0, 0, time.UTC)}
	figures := []struct {
		reloads int
		p99ms   float64
		peakMB  float64
		old     int
	}{{69, 3737.2, 1334, 24}, {69, 2614.8, 1325, 22}, {42, 4032.6, 1639, 16}, {0, 79.0, 68, 0}}
	for i, m := range Modes() {
		f := figures[i]
		rep.Results = append(rep.Results, Result{Mode: m.Name, ReloadsDone: f.reloads,
			Latencies: []time.Duration{time.Duration(f.p99ms * float64(time.Millisecond))}, PeakPSSMB: f.peakMB, PeakOld: f.old})
	}
	return rep
}

// TestHeadlineIsFiveLines: the README's excerpt is the run and four lines of
// dcm against the others, every number from the report.
func TestHeadlineIsFiveLines(t *testing.T) {
	want := "From `make bench` on 2026-12-02 (2 cores, 1,000 routes of 1–10 pods under churn and load; [docs/bench.md](docs/bench.md)):\n" +
		"- reloads: dcm 0; the router without DCM 69; the classic slot DCM 42–69\n" +
		"- event → serving p99: dcm 79 ms; the others 2.6–4.0 s\n" +
		"- HAProxy memory peak: dcm 68 MB; the others 1,325–1,639 MB, with up to 24 old workers\n" +
		"- failed requests: 0 in every mode; long-lived connections cut: 0 in every mode\n"
	if got := lastRun().Headline(2); got != want {
		t.Errorf("excerpt:\n%s\nwant:\n%s", got, want)
	}
}

// TestHeadlineSaysWhereModesDiffer: failures and old workers of dcm's own
// show, a quick run says so, and a figure no mode has reads "—".
func TestHeadlineSaysWhereModesDiffer(t *testing.T) {
	rep := lastRun()
	rep.Config = configFor(true)
	rep.Results[0].Failed = 3
	rep.Results[3].PeakOld = 1
	rep.Results[3].StreamsCut = 2
	rep.Results[1].ReloadsDone = 42
	for i := range rep.Results {
		rep.Results[i].Latencies = nil
	}
	got := rep.Headline(1)
	if n := strings.Count(got, "\n"); n != 5 || !strings.HasSuffix(got, "\n") {
		t.Errorf("%d lines, want 5:\n%s", n, got)
	}
	for _, want := range []string{
		"From `BENCH_QUICK=1 make bench` (quick run, indicative only) on 2026-12-02 (1 core, 200 routes of 1–6 pods",
		"the classic slot DCM 42\n",
		"- event → serving p99: dcm —; the others —\n",
		"dcm 68 MB, with 1 old worker; the others",
		"- failed requests: dcm 0; the others 0–3; long-lived connections cut: dcm 2; the others 0\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
}

// TestSpanUnits: a range writes its unit once, and both when the ends
// differ in unit.
func TestSpanUnits(t *testing.T) {
	for _, c := range []struct {
		vals []float64
		want string
	}{
		{[]float64{79.0}, "79 ms"},
		{[]float64{900, 1200}, "900 ms–1.2 s"},
		{[]float64{999.6, 1000}, "1.0 s"},
		{[]float64{20.4, 79}, "20–79 ms"},
	} {
		if got := span(c.vals, asLatency); got != c.want {
			t.Errorf("span(%v) = %q, want %q", c.vals, got, c.want)
		}
	}
}
