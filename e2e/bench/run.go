package bench

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
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

// RunMode runs the script through dcm in one mode, with the real haproxy.
func RunMode(t *testing.T, cfg Config, mode Mode, script Script, certs *certs) Result {
	res := Result{Mode: mode.Name, Events: map[EventKind]int{}}
	s, cl, master := startMode(t, mode, script, certs)
	ctx := context.Background()

	tg := newTargets(script.Order)
	stats := newLoadStats()
	stopLoad := startLoad(ctx, s.HTTPAddr, cfg, script.Order[:cfg.Stable], tg, stats)
	defer stopLoad()
	baseRate := calibrate(cfg.Calibrate, stats)

	before := readCounters(t, s.Registry, master)
	start := time.Now()
	cpu0 := processCPU()
	samples := sampleFrom(ctx, master, cfg.SampleEvery, start)

	pr := &prober{t: t, mode: mode.Name, httpAddr: s.HTTPAddr, httpsAddr: s.HTTPSAddr, ca: certs.ca.Pool(), limit: cfg.ProbeLimit, res: &res}
	play(t, cl, tg, pr, script.Events, start, res.Events)
	pr.wg.Wait()
	time.Sleep(4 * time.Second) // the last removals (1 s) and pod stops (2–3 s later) settle
	res.Churn = time.Since(start)
	res.CPU = processCPU() - cpu0
	res.CPUBaseline = baseRate * res.Churn.Seconds()
	after := readCounters(t, s.Registry, master)
	res.countChurn(before, after)
	res.Samples = samples()
	for _, sm := range res.Samples {
		res.PeakPSSMB = max(res.PeakPSSMB, sm.PSSMB)
		res.PeakOld = max(res.PeakOld, sm.OldWorkers)
	}
	res.EndPSSMB = float64(after.haproxy.pssKB) / 1024
	stopLoad()
	stats.mu.Lock()
	res.OK, res.Expected, res.Failed = stats.ok, stats.expected503, stats.failed
	res.FailReasons, res.StreamReasons = stats.failReasons, stats.streamReasons
	res.StreamsDone, res.StreamsCut = stats.streamsDone, stats.streamsCut
	stats.mu.Unlock()
	slices.Sort(res.Latencies)
	slices.Sort(res.CertLatencies)
	return res
}

// startMode starts the script's initial pods and dcm in a mode on them,
// and returns once HAProxy serves the first complete state, with the
// master's PID.
func startMode(t *testing.T, mode Mode, script Script, certs *certs) (*harness.Stack, *cluster, int) {
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
	procs, err := s.Driver.Procs(context.Background())
	if err != nil {
		t.Fatalf("show proc: %v", err)
	}
	return s, cl, procs.Master.PID
}

// startLoad starts the constant load and the long-lived connections (to
// the stable routes); the function it returns stops them and waits.
func startLoad(ctx context.Context, addr string, cfg Config, stable []string, tg *targets, stats *loadStats) (stop func()) {
	loadCtx, stopLoad := context.WithCancel(ctx)
	var loadWG sync.WaitGroup
	loadWG.Go(func() { runLoad(loadCtx, addr, cfg.LoadRate, tg, stats, cfg.Seed) })
	loadWG.Go(func() {
		runStreams(loadCtx, addr, cfg.Streams, stable, cfg.StreamLife[0], cfg.StreamLife[1], stats, cfg.Seed)
	})
	return func() { stopLoad(); loadWG.Wait() }
}

// calibrate measures the bench process's CPU rate under the same load
// without churn, then zeroes the request counts so that they cover the
// churn alone.
func calibrate(d time.Duration, stats *loadStats) (cpuPerSecond float64) {
	time.Sleep(d / 4) // connections open
	c0 := processCPU()
	time.Sleep(d)
	baseRate := (processCPU() - c0) / d.Seconds()
	stats.mu.Lock()
	stats.ok, stats.failed, stats.expected503 = 0, 0, 0
	stats.failReasons = map[string]int{}
	stats.mu.Unlock()
	return baseRate
}

// play makes the script's changes at their offsets from start, counting
// them, and has pr time each one that starts pods or rotates a certificate.
func play(t *testing.T, cl *cluster, tg *targets, pr *prober, events []Event, start time.Time, counts map[EventKind]int) {
	for _, ev := range events {
		time.Sleep(time.Until(start.Add(ev.At)))
		counts[ev.Kind]++
		switch ev.Kind {
		case ScaleOut:
			names, err := cl.addPods(ev.Route, ev.N)
			if err != nil {
				t.Fatal(err)
			}
			written := time.Now()
			cl.publish()
			pr.measure(host(ev.Route), names, written, nil)
		case ScaleIn, Replace:
			victims := cl.terminate(ev.Route, ev.Victims)
			names, err := cl.addPods(ev.Route, ev.NewPods())
			if err != nil {
				t.Fatal(err)
			}
			written := time.Now()
			cl.publish()
			pr.measure(host(ev.Route), names, written, nil)
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
			pr.measure(host(ev.Route), names[:1], written, func() { tg.add(route) })
		case CertRotate:
			leaf := cl.rotate(ev.Route)
			written := time.Now()
			cl.publish()
			pr.measureCert(host(ev.Route), leaf, written)
		case RouteDelete:
			tg.retire(ev.Route)
			route := ev.Route
			time.AfterFunc(200*time.Millisecond, func() { cl.deleteRoute(route, 3*time.Second) })
		}
	}
}
