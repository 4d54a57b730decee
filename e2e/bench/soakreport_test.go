//go:build soak

package bench

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// SoakReport is one soak run, as docs/soak.md shows it.
type SoakReport struct {
	Config                SoakConfig
	Command               string
	Date                  time.Time
	Elapsed, Churn        time.Duration
	LoadBefore, LoadAfter string
	Events                map[EventKind]int
	// Samples: the first before the churn (initial routes served, load
	// running), then every SampleEvery, the last after the churn settled.
	Samples              []SoakSample
	OK, Expected, Failed int
	FailReasons          map[string]int
	Mismatch             []string       // HAProxy's servers against the EndpointSlices at the end
	Updates              int            // dcm_updates_total
	Reloads              map[string]int // dcm_reloads_total by reason
	Seq                  uint64         // the event hub's last sequence number
	Commands             int            // admin-socket commands
	LeftAfterExit        []string       // HAProxy processes alive after dcm exited
	Problems             []string       // what check found
}

// warm is the reference for "flat": the sample a tenth into the churn (at
// least 30 s), once caches, connection pools and HAProxy's spares are in
// use; the very first sample is before any churn, when dcm has seen little.
func (r SoakReport) warm() SoakSample {
	ref := max(r.Churn/10, 30*time.Second)
	for _, s := range r.Samples {
		if s.At >= ref {
			return s
		}
	}
	return r.Samples[0]
}

func (r SoakReport) end() SoakSample { return r.Samples[len(r.Samples)-1] }

func (r SoakReport) peak() SoakSample {
	var p SoakSample
	for _, s := range r.Samples {
		p.Goroutines = max(p.Goroutines, s.Goroutines)
		p.RSSMB = max(p.RSSMB, s.RSSMB)
		p.HeapMB = max(p.HeapMB, s.HeapMB)
		p.FDs = max(p.FDs, s.FDs)
		p.HAProxy = max(p.HAProxy, s.HAProxy)
	}
	return p
}

// Bounds of "flat" between the warm sample and the end. A leak of one
// goroutine, file or a few KB per event would exceed them over the run's
// hundreds of events; the slack is for what moves with the moment (a sync
// in progress, connections of the load and of this test's scrapes, the
// garbage collector's timing).
const (
	soakGoroutineSlack = 10
	soakFDSlack        = 10
	soakRSSGrowth      = 1.25 // × warm, plus soakRSSSlackMB
	soakRSSSlackMB     = 16
)

// check records and reports every way the run failed.
func (r *SoakReport) check(t *testing.T) {
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		r.Problems = append(r.Problems, msg)
		t.Error(msg)
	}
	w, e := r.warm(), r.end()
	if r.Failed != 0 {
		fail("%d failed requests through HAProxy (%v)", r.Failed, r.FailReasons)
	}
	if r.OK == 0 {
		fail("no request succeeded: the load did not run")
	}
	if e.Goroutines > w.Goroutines+soakGoroutineSlack {
		fail("dcm's goroutines grew from %d to %d", w.Goroutines, e.Goroutines)
	}
	if e.FDs > w.FDs+soakFDSlack {
		fail("dcm's open files grew from %d to %d", w.FDs, e.FDs)
	}
	if e.RSSMB > w.RSSMB*soakRSSGrowth+soakRSSSlackMB {
		fail("dcm's RSS grew from %.1f MB to %.1f MB", w.RSSMB, e.RSSMB)
	}
	if e.HAProxy != 2 {
		fail("%d HAProxy processes after the churn settled, want 2 (master and one worker)", e.HAProxy)
	}
	if len(r.LeftAfterExit) > 0 {
		fail("HAProxy processes left after dcm exited: %v", r.LeftAfterExit)
	}
	for _, m := range r.Mismatch {
		fail("HAProxy and the EndpointSlices differ: %s", m)
	}
}

// Summary is the run in one line, for the test log.
func (r SoakReport) Summary() string {
	w, e, p := r.warm(), r.end(), r.peak()
	return fmt.Sprintf("soak %s: %d events %v; requests ok %d, expected 404/503 %d, failed %d; goroutines %d→%d (peak %d), RSS %.1f→%.1f MB (peak %.1f), heap %.1f→%.1f MB, fds %d→%d, HAProxy processes end %d (peak %d), left after exit %d; updates %d, reloads %v, commands %d, hub events %d; mismatches %d",
		r.Churn.Round(time.Second), r.total(), r.Events, r.OK, r.Expected, r.Failed, w.Goroutines, e.Goroutines, p.Goroutines,
		w.RSSMB, e.RSSMB, p.RSSMB, w.HeapMB, e.HeapMB, w.FDs, e.FDs, e.HAProxy, p.HAProxy, len(r.LeftAfterExit),
		r.Updates, r.Reloads, r.Commands, r.Seq, len(r.Mismatch))
}

func (r SoakReport) total() int {
	n := 0
	for _, v := range r.Events {
		n += v
	}
	return n
}

// Write writes docs/soak.md.
func (r SoakReport) Write(path string) error {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w, e, pk, first := r.warm(), r.end(), r.peak(), r.Samples[0]
	verdict := "passed"
	if len(r.Problems) > 0 {
		verdict = "FAILED: " + strings.Join(r.Problems, "; ")
	}
	p("# Soak\n\n")
	p("Written by `%s` (e2e/bench, TestSoak) on %s, %s. Do not edit by hand.\n\n", r.Command, r.Date.UTC().Format("2006-01-02 15:04 MST"), verdict)
	p("The dcm binary (`--kubeconfig`, one namespace, dynamic mode, default pool) against the real control plane of\n")
	p("e2e/kapi (etcd, kube-apiserver, the deployment, replicaset and endpointslice controllers) and the test kubelet,\n")
	p("whose pods are real HTTP servers, with the real haproxy binary. For %s, %.0f change a second drawn from seed %d:\n",
		r.Config.Duration, r.Config.Rate, r.Config.Seed)
	p("Deployments scaled out and in, pods deleted (their ReplicaSet replaces them), apps (Deployment, Service, Ingress)\n")
	p("added and deleted; %d routes at the start with %d–%d pods each. Meanwhile %d requests a second through HAProxy to\n",
		r.Config.Routes, r.Config.MinEndpoints, r.Config.MaxEndpoints, r.Config.LoadRate)
	p("random live routes (a new route joins once it answers; a route leaves the load 200 ms before its Ingress is\n")
	p("deleted, and a 404/503 for it is expected). At least %d pods a route: a single pod replaced leaves its route\n", r.Config.MinEndpoints)
	p("with no ready endpoint until the new one is ready, and dcm drains a terminating endpoint (kube-proxy instead\n")
	p("falls back to serving-terminating endpoints when none is ready): a 503 window, not measured here. Machine: %d cores shared with other work; load average %s before, %s after.\n\n",
		runtime.NumCPU(), r.LoadBefore, r.LoadAfter)
	p("Run it with `make soak` (10 minutes) or `make soak SOAK_DURATION=1m`.\n\n")
	p("## Result\n\n")
	p("| | |\n|---|---|\n")
	p("| churn | %s, %d events (%s) |\n", r.Churn.Round(time.Second), r.total(), r.eventList())
	p("| requests | %d ok, %d failed%s, %d expected 404/503 for deleted routes |\n", r.OK, r.Failed, r.reasons(), r.Expected)
	p("| HAProxy vs EndpointSlices at the end | %s |\n", r.mismatchText())
	p("| dcm | %d updates, reloads: %s; %d admin-socket commands, %d events published |\n", r.Updates, r.reloadText(), r.Commands, r.Seq)
	p("| HAProxy processes | %d at the end (master + worker), peak %d, %d left after dcm exited |\n", e.HAProxy, pk.HAProxy, len(r.LeftAfterExit))
	p("\n## dcm's process, flat?\n\n")
	p("\"warm\" is the sample %s into the churn (a tenth of it, at least 30 s), once caches and spares are in use;\n", w.At.Round(time.Second))
	p("\"end\" is after the churn and %s of settling. Bounds: goroutines and open files +%d, RSS ×%.2f + %d MB.\n\n",
		r.Config.Settle, soakGoroutineSlack, soakRSSGrowth, soakRSSSlackMB)
	p("The event hub keeps the last events (with their ops and backend states) for feed clients that resume, and\n")
	p("grows until it is full: the soak runs dcm with `--event-history %d` (default 10,000), so the ring is full\n", soakEventHistory)
	p("before the warm sample and growth after it is not the history filling; this run published %d.\n\n", r.Seq)
	p("| | before churn | warm | end | peak |\n|---|---:|---:|---:|---:|\n")
	p("| goroutines | %d | %d | %d | %d |\n", first.Goroutines, w.Goroutines, e.Goroutines, pk.Goroutines)
	p("| RSS (MB) | %.1f | %.1f | %.1f | %.1f |\n", first.RSSMB, w.RSSMB, e.RSSMB, pk.RSSMB)
	p("| Go heap in use (MB) | %.1f | %.1f | %.1f | %.1f |\n", first.HeapMB, w.HeapMB, e.HeapMB, pk.HeapMB)
	p("| open files | %d | %d | %d | %d |\n", first.FDs, w.FDs, e.FDs, pk.FDs)
	p("\n## Samples\n\n| t | goroutines | RSS (MB) | heap (MB) | fds | HAProxy processes |\n|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Samples {
		p("| %s | %d | %.1f | %.1f | %d | %d |\n", s.At.Round(time.Second), s.Goroutines, s.RSSMB, s.HeapMB, s.FDs, s.HAProxy)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func (r SoakReport) eventList() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.Events)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.Events[k]))
	}
	return strings.Join(parts, ", ")
}

func (r SoakReport) reasons() string {
	if len(r.FailReasons) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%v)", r.FailReasons)
}

func (r SoakReport) mismatchText() string {
	if len(r.Mismatch) == 0 {
		return "equal: every routed Service's ready endpoints are exactly its backend's ready servers"
	}
	return strings.Join(r.Mismatch, "; ")
}

func (r SoakReport) reloadText() string {
	if len(r.Reloads) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.Reloads)) {
		parts = append(parts, fmt.Sprintf("%d for %s", r.Reloads[k], k))
	}
	return strings.Join(parts, ", ")
}
