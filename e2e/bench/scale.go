package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm/routing"
	"github.com/dcm-router/dcm/e2e/harness"
)

// ScaleConfig sizes make bench's scale section: one run at two cluster
// sizes, each route with Endpoints endpoints, the figures compared as the
// large size against the small one.
type ScaleConfig struct {
	Quick     bool
	Sizes     [2]int // routes, small then large
	Endpoints int    // per route
	Changes   int    // endpoint changes timed from informer to HAProxy
	RouteOps  int    // routes added, then deleted, one after the other
	Grow      int    // routes the cluster grows by
	GrowStep  int    // routes created at once while it grows
	// Conns keep-alive connections send the throughput load, in Rounds
	// windows of Window per stack, the two stacks alternating.
	Conns       int
	Window      time.Duration
	Rounds      int
	MaxRequests int // per window: the load is bounded in count as in time
	// ReadyWithin bounds a start, and each wait for HAProxy to serve.
	ReadyWithin time.Duration
	Listeners   int // real pod servers, shared by every route's endpoints
}

// ScaleSizes parses BENCH_SCALE_ROUTES ("1000,2000"): the two sizes a run
// uses instead of the default ones.
func ScaleSizes(s string) ([2]int, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return [2]int{}, fmt.Errorf("BENCH_SCALE_ROUTES=%q: want two sizes, small,large", s)
	}
	var out [2]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 20 {
			return [2]int{}, fmt.Errorf("BENCH_SCALE_ROUTES=%q: %q is not a number of routes of at least 20", s, p)
		}
		out[i] = n
	}
	if out[0] >= out[1] {
		return [2]int{}, fmt.Errorf("BENCH_SCALE_ROUTES=%q: the second size must be the larger", s)
	}
	return out, nil
}

// ScaleResult is what one size measured. A start that failed leaves
// everything but StartErr empty; a phase that could not finish says why in
// Notes and leaves its figures empty.
type ScaleResult struct {
	Routes   int
	StartErr string
	Notes    []string

	// Startup: from the informers' start until dcm is ready, and until a
	// request for every route's host reached its pods.
	Ready, Served time.Duration
	// DCMRSSMB is the growth of the bench process's RSS over dcm's start
	// (dcm runs in it), DCMPeakMB the growth of its peak, DCMHeapMB of
	// the Go heap's live objects after a collection.
	DCMRSSMB, DCMPeakMB, DCMHeapMB float64
	// BaseHeapMB is the live heap before dcm started: the fake clientset's
	// objects, the pods, the bench. The collector lets the heap grow to
	// twice what is live, so the RSS growth can exceed what dcm alone
	// would hold by up to as much.
	BaseHeapMB   float64
	HAProxyPSSMB float64 // master and workers, once every route serves
	Spares       int     // free spare backends at the start
	// TCPSpares are the passthrough ones among Spares: each keeps its
	// route's rules and costs HAProxy about twice an HTTP spare.
	TCPSpares int

	Event []time.Duration // informer event → HAProxy acknowledged, sorted

	Add, Delete               []time.Duration // API write → served / 503, sorted
	AddChanges, DeleteChanges int             // admin commands that change HAProxy, all adds / deletes
	AddVerbs, DeleteVerbs     map[string]int
	RouteOpsReloads           int // reloads while routes were added and deleted

	// Throughput spreads the load over all routes, Lookup over 10 of them
	// (runThroughput says why both).
	Throughput, Lookup Throughput

	Grown       int // routes the growth added
	GrowTook    time.Duration
	GrowReloads int
	GrowReasons map[string]int
	// GrowPeakSpares is the most free spares seen after a growth step (a
	// burst after a pool-exhausted reload), GrowEndSpares those left at
	// its end, GrowPSSMB HAProxy's PSS then (master + workers, old ones
	// included).
	GrowPeakSpares, GrowEndSpares int
	GrowPSSMB                     float64

	ResyncWrite   time.Duration // writing every EndpointSlice
	ResyncFirst   time.Duration // first write → HAProxy acknowledged every change
	ResyncLast    time.Duration // last write → the same
	ResyncReloads int
}

// Median is the median round's ratio, NaN with none.
func (tp Throughput) Median() float64 { return quantile(tp.Ratios, 0.5) }

// quantile of sorted values, NaN for none.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// Throughput is requests through HAProxy at the size against 10 routes,
// measured side by side.
type Throughput struct {
	RPS, BaseRPS        float64
	Requests, BaseReqs  int
	NewConns, BaseConns int // connections HAProxy opened to the pods meanwhile
	// Ratios are each window's requests per second at the size over those
	// at 10 routes, sorted. On two shared cores a window's ratio swings
	// either way by half (two stacks of 10 routes measured so gave medians
	// 0.97–1.05), so the figure is their median.
	Ratios      []float64
	Failed      int
	FailReasons map[string]int
}

// RunScale measures one size: dcm on a fresh cluster of routes routes, then
// each phase in turn. Goals that are not met are results, never failures;
// a wrong answer through HAProxy fails the test.
func RunScale(t *testing.T, cfg ScaleConfig, routes int, farm *podFarm) ScaleResult {
	res := ScaleResult{Routes: routes}
	ctx := context.Background()
	farm.reset()
	p := farm.shared(cfg.Listeners, cfg.Endpoints)
	k := NewKubeCluster(routes, cfg.Endpoints, farm.port, p.addr)
	s, ok := startScale(t, cfg, k, farm, &res)
	if !ok {
		return res
	}
	// The throughput first, while dcm is quiet: after the endpoint changes
	// it would poll HAProxy for the removed servers until they are idle.
	t.Run("throughput", func(t *testing.T) { res.Throughput, res.Lookup = runThroughput(t, cfg, s.Stack, routes, farm) })
	profiled(t, routes, "event", func() {
		lat, err := k.EventToHAProxy(ctx, s.Engine, s.src, routes, cfg.Changes)
		if err != nil {
			res.note("event → HAProxy: %v after %d changes", err, len(lat))
		}
		res.Event = sorted(lat)
	})
	profiled(t, routes, "routes", func() { routeOps(t, cfg, k, s.Stack, farm, &res) })
	profiled(t, routes, "resync", func() { resync(t, cfg, k, s.Stack, &res) })
	profiled(t, routes, "grow", func() { grow(t, cfg, k, s.Stack, farm, &res) })
	heapProfile(t, routes, "end")
	return res
}

// scaleStack is a started stack and the kube source it reads.
type scaleStack struct {
	*harness.Stack
	src *SeenSource
}

// startScale starts dcm on k and fills in the startup figures; false when
// dcm did not start (res says why).
func startScale(t *testing.T, cfg ScaleConfig, k *KubeCluster, farm *podFarm, res *ScaleResult) (scaleStack, bool) {
	base := memBaseline()
	heapProfile(t, res.Routes, "before")
	began := time.Now()
	defer logCollections(t, began)()
	src := k.Source(t)
	s, err := harness.TryStart(t, harness.Options{Source: src, ReadyWithin: cfg.ReadyWithin})
	if err != nil {
		res.StartErr = fmt.Sprintf("after %s, %v", time.Since(began).Round(100*time.Millisecond), err)
		t.Logf("%d routes: %s", res.Routes, res.StartErr)
		return scaleStack{}, false
	}
	res.Ready = time.Since(began)
	if err := servesAll(context.Background(), s.HTTPAddr, res.Routes, farm.shared(cfg.Listeners, cfg.Endpoints), began.Add(cfg.ReadyWithin)); err != nil {
		t.Fatalf("%d routes: dcm ready after %s, but: %v", res.Routes, res.Ready, err)
	}
	res.Served = time.Since(began)
	res.DCMRSSMB, res.DCMPeakMB, res.DCMHeapMB = base.growth()
	res.BaseHeapMB = float64(base.heap) / (1 << 20)
	heapProfile(t, res.Routes, "started")
	procs, err := s.Driver.Procs(context.Background())
	if err != nil {
		t.Fatalf("show proc: %v", err)
	}
	hs, err := sampleHAProxy(procs.Master.PID)
	if err != nil {
		t.Fatal(err)
	}
	res.HAProxyPSSMB = float64(hs.pssKB) / 1024
	pool := s.Engine.Snapshot().Pool
	res.Spares = len(pool)
	for _, name := range pool {
		if routing.TCPSpare(name) {
			res.TCPSpares++
		}
	}
	return scaleStack{Stack: s, src: src}, true
}

func (r *ScaleResult) note(format string, a ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, a...))
}

// memStart is the bench process's memory just before dcm starts, after a
// collection that returned what it could to the OS, with the peak reset.
type memStart struct{ rssKB, heap int64 }

func memBaseline() memStart {
	runtime.GC()
	debug.FreeOSMemory()
	// 5 resets the process's peak RSS (VmHWM) to its current RSS.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	rss, _ := selfStatus()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memStart{rssKB: rss, heap: int64(ms.HeapAlloc)}
}

// growth is what dcm added to the process since the baseline: RSS now, the
// peak RSS meanwhile, and the live heap after a collection (MB).
func (m memStart) growth() (rss, peak, heap float64) {
	rssKB, hwmKB := selfStatus()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(rssKB-m.rssKB) / 1024, float64(hwmKB-m.rssKB) / 1024, float64(int64(ms.HeapAlloc)-m.heap) / (1 << 20)
}

// heapProfile writes the heap profile to DCM_BENCH_HEAPPROFILE (unset:
// nothing), the size and the moment inserted before its extension
// (/tmp/heap.pprof → /tmp/heap-10000-started.pprof). "before" is taken
// just before dcm starts, "started" once every route serves, "end" after
// the last phase, all after a collection: inuse_space of "started" is
// what dcm keeps, alloc_space against "before" (pprof -base) what its
// start allocated, "end" what it keeps after the churn.
func heapProfile(tb testing.TB, routes int, moment string) {
	path := os.Getenv("DCM_BENCH_HEAPPROFILE")
	if path == "" {
		return
	}
	ext := filepath.Ext(path)
	path = fmt.Sprintf("%s-%d-%s%s", strings.TrimSuffix(path, ext), routes, moment, ext)
	runtime.GC() // inuse_space is as of the last collection
	f, err := os.Create(path)
	if err != nil {
		tb.Fatalf("heap profile: %v", err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		tb.Fatalf("heap profile %s: %v", path, err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, hwm := selfStatus()
	tb.Logf("heap profile %s: heap in use %d MB, next collection at %d MB, stacks %d MB, %d goroutines, VmRSS %d MB (peak %d MB)", path,
		ms.HeapInuse>>20, ms.NextGC>>20, ms.StackInuse>>20, runtime.NumGoroutine(), rss>>10, hwm>>10)
}

// logCollections logs, with DCM_BENCH_HEAPPROFILE set, the live heap each
// collection found and the heap goal it set, until the returned function
// is called: the RSS follows the largest goal, which a moment of the start
// with much alive at once sets.
func logCollections(tb testing.TB, began time.Time) (stop func()) {
	if os.Getenv("DCM_BENCH_HEAPPROFILE") == "" {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		samples := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}}
		var last uint64
		for {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			metrics.Read(samples)
			if n := samples[0].Value.Uint64(); n != last {
				last = n
				rss, _ := selfStatus()
				tb.Logf("collection %d at %.2fs: live %d MB, goal %d MB, VmRSS %d MB", n, time.Since(began).Seconds(),
					samples[1].Value.Uint64()>>20, samples[2].Value.Uint64()>>20, rss>>10)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// selfStatus reads VmRSS and VmHWM (kB) of this process; 0 when unreadable.
func selfStatus() (rss, hwm int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if key == "VmRSS" {
			rss = kb
		} else {
			hwm = kb
		}
	}
	return rss, hwm
}

func sorted(d []time.Duration) []time.Duration {
	out := slices.Clone(d)
	slices.Sort(out)
	return out
}
