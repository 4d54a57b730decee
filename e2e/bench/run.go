package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// Mode is one of the strategies compared.
type Mode struct {
	Name string // as the table heads it
	Test string // the subtest's name: it names directories, so no spaces or '='
	// Flags are the mode's flags, as the dcm binary would be given them.
	Flags func(*system.Config)
}

// Modes are the four runs, in the order they run: the router without DCM,
// the classic DCM as the seed's tech preview sets it and with more slots,
// and dcm with its defaults.
func Modes() []Mode {
	return []Mode{
		{"reload", "reload", func(c *system.Config) { c.Mode = dcm.ModeReload }},
		{"slots --slots=1", "slots-1", func(c *system.Config) { c.Mode, c.Slots = dcm.ModeSlots, 1 }},
		{"slots --slots=8", "slots-8", func(c *system.Config) { c.Mode, c.Slots = dcm.ModeSlots, 8 }},
		{"dynamic", "dynamic", func(*system.Config) {}},
	}
}

// Config is one comparison run.
type Config struct {
	Workload
	Quick       bool
	LoadRate    int // requests per second through HAProxy
	Streams     int // long-lived connections
	StreamLife  [2]time.Duration
	Calibrate   time.Duration // load without churn, to size the bench process's own CPU
	ProbeLimit  time.Duration // an event not served by then counts as a probe timeout
	SampleEvery time.Duration
}

// Sample is HAProxy's processes at an offset from the start of the churn.
type Sample struct {
	At         time.Duration
	PSSMB      float64
	OldWorkers int
}

// Result is what one mode did with the script.
type Result struct {
	Mode          string
	Events        map[EventKind]int
	Reloads       map[string]int // by reason: a reload with two reasons counts under each
	ReloadsDone   int            // reloads (dcm_reload_duration_seconds samples)
	Latencies     []time.Duration
	ProbeTimeouts int
	// CertLatencies: from a rotation's API write until a TLS handshake
	// for the route's host gets the new certificate.
	CertLatencies []time.Duration
	CertTimeouts  int
	Samples       []Sample
	PeakPSSMB     float64
	EndPSSMB      float64
	PeakOld       int
	OK, Expected  int
	Failed        int
	FailReasons   map[string]int
	StreamsDone   int
	StreamsCut    int
	StreamReasons map[string]int
	CPU           float64 // seconds of the bench process during the churn
	CPUBaseline   float64 // its share without churn (load, pods, dcm idle), same length of time
	HAProxyCPU    float64 // seconds, master and all workers
	Commands      int     // admin socket commands sent during the churn
	Changes       int     // of which change HAProxy (not show …)
	ByVerb        map[string]int
	Churn         time.Duration
}

// DCMCPU is the bench process's CPU during the churn above what the same
// process spends on the same load without churn: dcm's syncs plus the
// churn's own pod starts and probes (which every mode pays alike).
func (r Result) DCMCPU() float64 { return max(r.CPU-r.CPUBaseline, 0) }

// ReloadCount counts every reload once, whatever its reasons.
func (r Result) ReloadCount() int { return r.ReloadsDone }

func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// byLabel sums a counter's or a histogram's sample count per value of one label.
func byLabel(reg *prometheus.Registry, name, label string) (map[string]float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather: %w", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label {
					key = lp.GetValue()
				}
			}
			switch {
			case m.GetCounter() != nil:
				out[key] += m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[key] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out, nil
}

func delta(after, before map[string]float64) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := int(v - before[k]); d > 0 {
			out[k] = d
		}
	}
	return out
}

// RunMode runs the script through dcm in one mode, with the real haproxy.
func RunMode(t *testing.T, cfg Config, mode Mode, script Script, certs *certs) Result {
	res := Result{Mode: mode.Name, Events: map[EventKind]int{}}
	src := harness.NewStaticSource(dcm.Desired{})
	cl := newCluster(src.Set, certs)
	t.Cleanup(func() {
		if err := cl.close(); err != nil {
			t.Logf("stopping pods: %v", err)
		}
	})
	for _, name := range script.Order {
		if _, err := cl.addPods(name, script.Initial[name]); err != nil {
			t.Fatal(err)
		}
	}
	cl.publish()
	// harness.Start waits until the first complete state is served.
	s := harness.Start(t, harness.Options{Source: src, Config: mode.Flags, Certs: certs.store()})
	ctx := context.Background()
	procs, err := s.Driver.Procs(ctx)
	if err != nil {
		t.Fatalf("show proc: %v", err)
	}
	master := procs.Master.PID

	stable := script.Order[:cfg.Stable]
	tg := newTargets(script.Order)
	stats := newLoadStats()
	loadCtx, stopLoad := context.WithCancel(ctx)
	var loadWG sync.WaitGroup
	loadWG.Go(func() { runLoad(loadCtx, s.HTTPAddr, cfg.LoadRate, tg, stats, cfg.Seed) })
	loadWG.Go(func() {
		runStreams(loadCtx, s.HTTPAddr, cfg.Streams, stable, cfg.StreamLife[0], cfg.StreamLife[1], stats, cfg.Seed)
	})
	defer func() { stopLoad(); loadWG.Wait() }()

	// Calibration: the same load, no churn.
	time.Sleep(cfg.Calibrate / 4) // connections open
	c0 := processCPU()
	time.Sleep(cfg.Calibrate)
	baseRate := (processCPU() - c0) / cfg.Calibrate.Seconds()
	stats.mu.Lock()
	stats.ok, stats.failed, stats.expected503 = 0, 0, 0
	stats.failReasons = map[string]int{}
	stats.mu.Unlock()

	reloads0, err := byLabel(s.Registry, "dcm_reloads_total", "reason")
	if err != nil {
		t.Fatal(err)
	}
	done0, err := byLabel(s.Registry, "dcm_reload_duration_seconds", "")
	if err != nil {
		t.Fatal(err)
	}
	cmds0, err := byLabel(s.Registry, "dcm_runtime_command_duration_seconds", "command")
	if err != nil {
		t.Fatal(err)
	}
	h0, err := sampleHAProxy(master)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cpu0 := processCPU()

	// HAProxy's memory and old workers over time.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampleWG sync.WaitGroup
	var samples []Sample
	sampleWG.Go(func() {
		tick := time.NewTicker(cfg.SampleEvery)
		defer tick.Stop()
		for {
			if hs, err := sampleHAProxy(master); err == nil {
				samples = append(samples, Sample{At: time.Since(start), PSSMB: float64(hs.pssKB) / 1024, OldWorkers: hs.oldWorkers})
			}
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
		}
	})

	var probeWG sync.WaitGroup
	var latMu sync.Mutex
	measure := func(host string, pods []*pod, written time.Time, then func()) {
		probeWG.Go(func() {
			lat, missed := probe(s.HTTPAddr, host, pods, written, cfg.ProbeLimit)
			latMu.Lock()
			defer latMu.Unlock()
			res.Latencies = append(res.Latencies, lat...)
			res.ProbeTimeouts += missed
			if missed > 0 {
				t.Logf("%s: %s: %d new pods got no request within %s", mode.Name, host, missed, cfg.ProbeLimit)
			}
		})
		if then != nil {
			probeWG.Go(func() {
				// A new route joins the load once any of its pods answers.
				client := newProbeClient()
				for time.Since(written) < cfg.ProbeLimit {
					if code, _, err := get(ctx, client, s.HTTPAddr, host, "/"); err == nil && code == 200 {
						then()
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
	}

	measureCert := func(host string, leaf testkit.Leaf, written time.Time) {
		probeWG.Go(func() {
			for time.Since(written) < cfg.ProbeLimit {
				got, err := testkit.ServedLeaf(s.HTTPSAddr, host, certs.ca.Pool())
				if err == nil && got.SerialNumber.Cmp(leaf.Cert.SerialNumber) == 0 {
					latMu.Lock()
					res.CertLatencies = append(res.CertLatencies, time.Since(written))
					latMu.Unlock()
					return
				}
				time.Sleep(min(time.Millisecond+time.Since(written)/20, 10*time.Millisecond))
			}
			latMu.Lock()
			res.CertTimeouts++
			latMu.Unlock()
			t.Logf("%s: %s: the new certificate was not served within %s", mode.Name, host, cfg.ProbeLimit)
		})
	}

	for _, ev := range script.Events {
		time.Sleep(time.Until(start.Add(ev.At)))
		res.Events[ev.Kind]++
		switch ev.Kind {
		case ScaleOut:
			names, err := cl.addPods(ev.Route, ev.N)
			if err != nil {
				t.Fatal(err)
			}
			written := time.Now()
			cl.publish()
			measure(host(ev.Route), names, written, nil)
		case ScaleIn, Replace:
			victims := cl.terminate(ev.Route, ev.Victims)
			names, err := cl.addPods(ev.Route, ev.NewPods())
			if err != nil {
				t.Fatal(err)
			}
			written := time.Now()
			cl.publish()
			measure(host(ev.Route), names, written, nil)
			// Terminating pods drain for a second, then their endpoints go;
			// the pods themselves stop two seconds later, as a grace period.
			route := ev.Route
			time.AfterFunc(time.Second, func() { cl.remove(route, victims, 2*time.Second) })
		case RouteAdd:
			names, err := cl.addPods(ev.Route, ev.N)
			if err != nil {
				t.Fatal(err)
			}
			written := time.Now()
			cl.publish()
			route := ev.Route
			measure(host(ev.Route), names[:1], written, func() { tg.add(route) })
		case CertRotate:
			leaf := cl.rotate(ev.Route)
			written := time.Now()
			cl.publish()
			measureCert(host(ev.Route), leaf, written)
		case RouteDelete:
			tg.retire(ev.Route)
			route := ev.Route
			time.AfterFunc(200*time.Millisecond, func() { cl.deleteRoute(route, 3*time.Second) })
		}
	}
	probeWG.Wait()
	time.Sleep(4 * time.Second) // the last removals (1 s) and pod stops (2–3 s later) settle
	res.Churn = time.Since(start)
	res.CPU = processCPU() - cpu0
	res.CPUBaseline = baseRate * res.Churn.Seconds()
	h1, err := sampleHAProxy(master)
	if err != nil {
		t.Fatal(err)
	}
	res.HAProxyCPU = float64(h1.cpuTicks-h0.cpuTicks) / clockTick
	reloads1, err := byLabel(s.Registry, "dcm_reloads_total", "reason")
	if err != nil {
		t.Fatal(err)
	}
	done1, err := byLabel(s.Registry, "dcm_reload_duration_seconds", "")
	if err != nil {
		t.Fatal(err)
	}
	res.ReloadsDone = int(done1[""] - done0[""])
	cmds1, err := byLabel(s.Registry, "dcm_runtime_command_duration_seconds", "command")
	if err != nil {
		t.Fatal(err)
	}
	res.Reloads = delta(reloads1, reloads0)
	res.ByVerb = delta(cmds1, cmds0)
	for verb, n := range res.ByVerb {
		res.Commands += n
		if len(verb) < 4 || verb[:4] != "show" {
			res.Changes += n
		}
	}
	stopSampling()
	sampleWG.Wait()
	res.Samples = samples
	for _, sm := range samples {
		res.PeakPSSMB = max(res.PeakPSSMB, sm.PSSMB)
		res.PeakOld = max(res.PeakOld, sm.OldWorkers)
	}
	res.EndPSSMB = float64(h1.pssKB) / 1024
	stopLoad()
	loadWG.Wait()
	stats.mu.Lock()
	res.OK, res.Expected, res.Failed = stats.ok, stats.expected503, stats.failed
	res.FailReasons, res.StreamReasons = stats.failReasons, stats.streamReasons
	res.StreamsDone, res.StreamsCut = stats.streamsDone, stats.streamsCut
	stats.mu.Unlock()
	slices.Sort(res.Latencies)
	slices.Sort(res.CertLatencies)
	return res
}
