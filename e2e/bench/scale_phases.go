package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/engine"
	"github.com/dcm-router/dcm/e2e/harness"
)

// changeCommands counts the admin socket commands sent so far by verb
// (dcm_runtime_command_duration_seconds samples), and of them those that
// change HAProxy: all but show …, as the comparison counts them.
func changeCommands(t *testing.T, s *harness.Stack) (map[string]float64, int) {
	t.Helper()
	byVerb, err := byLabel(only(s.Engine.Metrics().RuntimeCommand), "dcm_runtime_command_duration_seconds", "command")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for verb, c := range byVerb {
		if !strings.HasPrefix(verb, "show") {
			n += int(c)
		}
	}
	return byVerb, n
}

// settleCommands waits until dcm has sent no command that changes HAProxy
// for 300 ms (at most 10 s): the sync that served a change may still be
// finishing its batch when the change is already served.
func settleCommands(t *testing.T, s *harness.Stack) {
	_, last := changeCommands(t, s)
	quiet := 0
	for deadline := time.Now().Add(10 * time.Second); quiet < 3 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		_, n := changeCommands(t, s)
		if n == last {
			quiet++
		} else {
			last, quiet = n, 0
		}
	}
}

// probeWait is the pause between two probe requests: 1 ms at first, backing
// off to 10 ms, as the comparison's probes do.
func probeWait(since time.Time) time.Duration {
	return min(time.Millisecond+time.Since(since)/20, 10*time.Millisecond)
}

// untilServed sends requests for route r's host through HAProxy, each on
// a new connection as a new client would, until one is answered by its
// pods; the latency ends when the first request for the host reached a pod
// (the pod records it).
func untilServed(addr string, r int, p pods, written time.Time, limit time.Duration) (time.Duration, error) {
	client := newProbeClient()
	for time.Since(written) < limit {
		code, body, err := get(context.Background(), client, addr, KubeHost(r), "/")
		if err == nil && code == http.StatusOK {
			if err := p.check(r, code, body); err != nil {
				return 0, err
			}
			first, _ := p.f.firstRequest(KubeHost(r))
			return first.Sub(written), nil
		}
		time.Sleep(probeWait(written))
	}
	return 0, fmt.Errorf("%s not served within %s", KubeHost(r), limit)
}

// until503 sends requests for a deleted route's host until HAProxy answers
// 503 (no route), and returns when that answer came.
func until503(addr string, r int, written time.Time, limit time.Duration) (time.Duration, error) {
	client := newProbeClient()
	for time.Since(written) < limit {
		code, _, err := get(context.Background(), client, addr, KubeHost(r), "/")
		if err == nil && code == http.StatusServiceUnavailable {
			return time.Since(written), nil
		}
		time.Sleep(probeWait(written))
	}
	return 0, fmt.Errorf("%s still served %s after its Ingress was deleted", KubeHost(r), limit)
}

// routeOps adds cfg.RouteOps routes one after the other, each once the last
// was served, then deletes them alike; it times each and counts the
// commands that change HAProxy over all adds, and over all deletes until
// the deleted routes' servers were deleted too (HAProxy lets dcm delete a
// server only once idle, which takes up to harness.RetireWait).
func routeOps(t *testing.T, cfg ScaleConfig, k *KubeCluster, s *harness.Stack, f *podFarm, res *ScaleResult) {
	ctx := context.Background()
	first := res.Routes
	added := make([]int, 0, cfg.RouteOps)
	reloads0 := reloadsDone(t, s)
	defer func() { res.RouteOpsReloads = reloadsDone(t, s) - reloads0 }()
	verbs0, n0 := changeCommands(t, s)
	for i := range cfg.RouteOps {
		r := first + i
		written, err := k.AddRoute(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		lat, err := untilServed(s.HTTPAddr, r, f.shared(cfg.Listeners, cfg.Endpoints), written, cfg.ReadyWithin)
		if err != nil {
			res.note("route add: %v", err)
			return
		}
		added = append(added, r)
		res.Add = append(res.Add, lat)
	}
	settleCommands(t, s)
	verbs1, n1 := changeCommands(t, s)
	res.AddChanges, res.AddVerbs = n1-n0, delta(verbs1, verbs0)
	for _, r := range added {
		written, err := k.DeleteRoute(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		lat, err := until503(s.HTTPAddr, r, written, cfg.ReadyWithin)
		if err != nil {
			res.note("route delete: %v", err)
			return
		}
		res.Delete = append(res.Delete, lat)
	}
	if err := retired(s, added); err != nil {
		res.note("route delete: %v; the commands counted are those sent until then", err)
	}
	settleCommands(t, s)
	verbs2, n2 := changeCommands(t, s)
	res.DeleteChanges, res.DeleteVerbs = n2-n1, delta(verbs2, verbs1)
	slices.Sort(res.Add)
	slices.Sort(res.Delete)
}

// retired waits until no backend of the deleted routes is left in dcm's
// state: their servers deleted, their spares back in the pool.
func retired(s *harness.Stack, routes []int) error {
	names := map[string]bool{}
	for _, r := range routes {
		names[KubeName(r)] = true
	}
	var left int
	for deadline := time.Now().Add(harness.RetireWait); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		left = 0
		for _, b := range s.Engine.Snapshot().Backends {
			if b.Route.Namespace == kubeNS && names[b.Route.Name] {
				left++
			}
		}
		if left == 0 {
			return nil
		}
	}
	return fmt.Errorf("%d deleted routes' backends still had servers after %s", left, harness.RetireWait)
}

// resync changes every route's endpoints at once, as a relist after a lost
// watch or a node's pods all moving would: every EndpointSlice written,
// endpoint 0 of each flipped between ready and not, by four writers. It
// times from the first write and from the last until HAProxy acknowledged
// every change (the engine's events say which backends they left how).
func resync(t *testing.T, cfg ScaleConfig, k *KubeCluster, s *harness.Stack, res *ScaleResult) {
	ctx := context.Background()
	routes := res.Routes
	want := make(map[string]bool, routes) // route → endpoint 0 ready after the resync
	for r := range routes {
		want[KubeName(r)] = !k.FirstReady(r)
	}
	hub := s.Engine.Hub()
	_, _, sub := hub.Subscribe(hub.Seq(), 100000)
	defer sub.Close()
	reloads0 := reloadsDone(t, s)

	began := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for w := range 4 {
		wg.Go(func() {
			for r := w; r < routes && errs[w] == nil; r += 4 {
				errs[w] = k.SetFirstReady(ctx, r, want[KubeName(r)])
			}
		})
	}
	wg.Wait()
	wrote := time.Now()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	res.ResyncWrite = wrote.Sub(began)
	acked, err := allAcknowledged(s, sub, want, began.Add(2*cfg.ReadyWithin))
	res.ResyncReloads = reloadsDone(t, s) - reloads0
	if err != nil {
		res.note("full resync: %v", err)
		return
	}
	res.ResyncFirst, res.ResyncLast = acked.Sub(began), acked.Sub(wrote)
}

// allAcknowledged reads the engine's events until every route's endpoint 0
// is as want says in HAProxy's acknowledged state, and returns the time of
// the event that completed it.
func allAcknowledged(s *harness.Stack, sub *engine.Subscription, want map[string]bool, deadline time.Time) (time.Time, error) {
	pending := make(map[string]bool, len(want))
	for name := range want {
		pending[name] = true
	}
	settle := func(b *dcm.Backend) {
		if b.Route.Namespace != kubeNS {
			return
		}
		w, ok := want[b.Route.Name]
		if !ok {
			return
		}
		ready := slices.ContainsFunc(b.Servers, func(sv dcm.Server) bool {
			return sv.Pod == b.Route.Name+"-0" && sv.State == dcm.StateReady
		})
		if ready == w {
			delete(pending, b.Route.Name)
		} else {
			pending[b.Route.Name] = true
		}
	}
	timeout := time.After(time.Until(deadline))
	for {
		select {
		case ev := <-sub.Events():
			switch {
			case ev.Type == dcm.EventApplied:
				for _, b := range ev.State {
					settle(b)
				}
			case acknowledges(ev): // a reload: its event carries no state
				for _, b := range s.Engine.Snapshot().Backends {
					settle(b)
				}
			default:
				continue
			}
			if len(pending) == 0 {
				return ev.Time, nil
			}
		case <-sub.Done():
			return time.Time{}, fmt.Errorf("the engine's hub dropped the subscription")
		case <-timeout:
			return time.Time{}, fmt.Errorf("%d of %d routes' changes not acknowledged in time", len(pending), len(want))
		}
	}
}

// grow adds cfg.Grow routes, cfg.GrowStep at a time, each step once the
// last was served, and counts the reloads meanwhile with their reasons:
// the spares dcm renders (a tenth of the routes of each kind, plan.PoolShare)
// take new routes until they run out, and the reload that follows renders
// the kind that ran out its burst (plan.PoolBurst).
func grow(t *testing.T, cfg ScaleConfig, k *KubeCluster, s *harness.Stack, f *podFarm, res *ScaleResult) {
	ctx := context.Background()
	before := readCounters(t, s.Registry, masterPID(t, s))
	began := time.Now()
	next := res.Routes + cfg.RouteOps
	var err error
	for err == nil && res.Grown < cfg.Grow {
		step := min(cfg.GrowStep, cfg.Grow-res.Grown)
		written := make([]time.Time, step)
		for i := range step {
			if written[i], err = k.AddRoute(ctx, next+i); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < step && err == nil; i++ {
			_, err = untilServed(s.HTTPAddr, next+i, f.shared(cfg.Listeners, cfg.Endpoints), written[i], cfg.ReadyWithin)
		}
		if err == nil {
			next += step
			res.Grown += step
		}
		res.GrowPeakSpares = max(res.GrowPeakSpares, len(s.Engine.Snapshot().Pool))
	}
	res.GrowTook = time.Since(began)
	res.GrowEndSpares = len(s.Engine.Snapshot().Pool)
	if procs, perr := s.Driver.Procs(ctx); perr == nil {
		if hs, herr := sampleHAProxy(procs.Master.PID); herr == nil {
			res.GrowPSSMB = float64(hs.pssKB) / 1024
		}
	}
	if err != nil {
		res.note("growth: after %d routes: %v", res.Grown, err)
	}
	after := readCounters(t, s.Registry, masterPID(t, s))
	res.GrowReloads = int(after.reloaded[""] - before.reloaded[""])
	res.GrowReasons = delta(after.reloads, before.reloads)
}

// only gathers c alone. The phases read dcm's metrics by gathering one
// collector, not the registry: a gather at 10,000 routes builds 170,000
// traffic samples, whose garbage the collector then marked and swept in
// the middle of the phase timed next (the full resync's).
func only(c prometheus.Collector) prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return reg
}

// reloadsDone counts the reloads done so far (dcm_reload_duration_seconds
// samples: a reload for two reasons is one), read from that one metric
// (see only).
func reloadsDone(t *testing.T, s *harness.Stack) int {
	t.Helper()
	var m dto.Metric
	if err := s.Engine.Metrics().ReloadDuration.Write(&m); err != nil {
		t.Fatal(err)
	}
	return int(m.GetHistogram().GetSampleCount())
}

func masterPID(t *testing.T, s *harness.Stack) int {
	procs, err := s.Driver.Procs(context.Background())
	if err != nil {
		t.Fatalf("show proc: %v", err)
	}
	return procs.Master.PID
}
