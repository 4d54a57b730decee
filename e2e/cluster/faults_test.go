package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
)

// apiOutage is how long TestAPIServerRestart keeps the API server away:
// long enough for every client's watch to fail over and over, so their
// reflectors back off to the maximum (30 s) before it returns.
const apiOutage = 30 * time.Second

// TestAPIServerRestart: the control plane (etcd, kube-apiserver and the
// controllers) stops for 30 s and starts again on the same data. Meanwhile
// dcm stays ready and HAProxy serves, under load, without a failed request,
// though one of the two pods crashes 5 s into the outage (HAProxy's
// redispatch takes its requests to the other). Right after the restart the
// Deployment is scaled out: a change dcm can only learn by relisting, as it
// learns of the crash (the kubelet reports the pod Failed once the API
// server answers, and the ReplicaSet replaces it). Then the other original
// pod is deleted and replaced. dcm converges: HAProxy's servers end exactly
// the EndpointSlices' endpoints, none lost, none twice, without a reload.
func TestAPIServerRestart(t *testing.T) {
	ns, host, s := served(t, "restart", 2)
	backend := dcm.BackendName(dcm.KindHTTP, ns, "restart")
	pid, reloads := s.WorkerPID(), s.Reloads()
	before, err := readyPods(ns, "restart")()
	if err != nil {
		t.Fatal(err)
	}
	crashed, deleted := before[1], before[0]
	t.Cleanup(func() {
		if t.Failed() {
			dumpPods(t, ns)
		}
	})
	load := s.StartLoad(host, "/")

	if err := env.cp.Stop(); err != nil {
		t.Logf("stop: %v", err)
	}
	down := time.Now()
	serving := before
	for time.Since(down) < apiOutage {
		if !s.Engine.Ready() {
			t.Fatal("dcm stopped being ready while the API server was down")
		}
		if len(serving) == 2 && time.Since(down) > 5*time.Second {
			if !env.kubelet.Kill(ns, crashed) {
				t.Fatalf("pod %s is not running", crashed)
			}
			serving = []string{deleted}
			time.Sleep(100 * time.Millisecond)
		}
		got, err := s.Served(host, "/", 6)
		if err != nil {
			t.Fatalf("%s into the outage: %v", time.Since(down).Round(time.Second), err)
		}
		for pod := range got {
			if !slices.Contains(serving, pod) {
				t.Fatalf("%s into the outage: served by %s, pods alive %v", time.Since(down).Round(time.Second), pod, serving)
			}
		}
		time.Sleep(time.Second)
	}
	if err := env.cp.Restart(context.Background()); err != nil {
		t.Fatalf("restart the control plane: %v", err)
	}
	up := time.Now()
	t.Logf("API server down for %s", up.Sub(down).Round(100*time.Millisecond))

	scale(t, ns, "restart", 4)
	// The reflectors (dcm's, the test kubelet's) retry after their backoff,
	// up to 30 s plus jitter after such an outage; then the kubelet reports
	// the crash and starts the new pods, and the endpointslice controller
	// publishes them.
	s.ConvergeWithin = 2 * time.Minute
	s.Serves(host, "/", 4, func() ([]string, error) {
		pods, err := readyPods(ns, "restart")()
		if slices.Contains(pods, crashed) {
			return nil, errors.New("the crashed pod is still ready")
		}
		return pods, err
	})
	t.Logf("scaled out and the crash replaced %s after the restart", time.Since(up).Round(100*time.Millisecond))
	// Not earlier: with the crash not reported yet, the deleted pod would be
	// the route's only live one, drained, and the route would answer 503 —
	// as it would through kube-proxy, which takes ready endpoints only.
	if err := env.admin.CoreV1().Pods(ns).Delete(context.Background(), deleted, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Serves(host, "/", 4, func() ([]string, error) {
		pods, err := readyPods(ns, "restart")()
		if slices.Contains(pods, deleted) {
			return nil, errors.New("the deleted pod is still ready")
		}
		return pods, err
	})
	s.Eventually("HAProxy's servers are the EndpointSlices' endpoints", time.Minute, func() error {
		return sameAsSlices(s, ns, "restart", backend)
	})
	t.Logf("converged %s after the restart", time.Since(up).Round(100*time.Millisecond))

	ok, fail, last := load.Finish()
	t.Logf("load: %d requests ok, %d failed", ok, fail)
	if fail > 0 {
		t.Errorf("%d of %d requests failed across the API server's outage (last: %s)", fail, ok+fail, last)
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v: HAProxy reloaded across the outage", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}

// sameAsSlices compares a backend's servers in HAProxy (read back over the
// admin socket, every server whatever its state) with the endpoints of the
// Service's EndpointSlices: the same addresses, each once, ready where the
// endpoint is ready, drain where it is terminating but serving (ready
// while no endpoint is: dcm.ServeTerminating), maint where it is listed but
// not ready; no server for an address no slice lists.
func sameAsSlices(s *harness.Stack, ns, svc, backend string) error {
	ctx := context.Background()
	list, err := env.admin.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return err
	}
	var want []string
	ready := false
	for _, sl := range list.Items {
		for _, ep := range sl.Endpoints {
			ready = ready || ep.Conditions.Ready == nil || *ep.Conditions.Ready
		}
	}
	for _, sl := range list.Items {
		for _, ep := range sl.Endpoints {
			c := ep.Conditions
			state := dcm.StateMaint
			switch {
			case c.Ready == nil || *c.Ready:
				state = dcm.StateReady
			case (c.Serving == nil || *c.Serving) && c.Terminating != nil && *c.Terminating && ready:
				state = dcm.StateDrain
			case (c.Serving == nil || *c.Serving) && c.Terminating != nil && *c.Terminating:
				state = dcm.StateReady
			}
			for _, p := range sl.Ports {
				for _, a := range ep.Addresses[:min(1, len(ep.Addresses))] {
					want = append(want, fmt.Sprintf("%s:%d %s", a, *p.Port, state))
				}
			}
		}
	}
	obs, err := s.Driver.Observe(ctx)
	if err != nil {
		return err
	}
	var got, addrs []string
	for _, sv := range obs[backend] {
		got = append(got, fmt.Sprintf("%s:%d %s", sv.Addr, sv.Port, sv.State))
		addrs = append(addrs, fmt.Sprintf("%s:%d", sv.Addr, sv.Port))
	}
	slices.Sort(want)
	slices.Sort(got)
	slices.Sort(addrs)
	if len(slices.Compact(addrs)) != len(got) {
		return fmt.Errorf("HAProxy has an address twice: %v", got)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("HAProxy has %v, the EndpointSlices %v", got, want)
	}
	return nil
}

// TestEndpointSliceStorm: 1,000 EndpointSlice updates through the real API
// server within seconds (ten slices of one Service, each rewritten 100
// times by its own writer). dcm coalesces them: fewer syncs than updates,
// the heap back near where it was, and HAProxy's servers end exactly equal
// to the final slices, with traffic reaching exactly their ready endpoints.
func TestEndpointSliceStorm(t *testing.T) {
	const (
		nSlices  = 10
		perSlice = 2   // endpoints each slice may list
		rewrites = 100 // per slice
	)
	ns := kapitest.Namespace(t, env.admin)
	host := "storm." + ns + ".test"
	createService(t, ns, "storm", nil)
	createIngress(t, ns, "storm", host, "/", "storm")
	backends := make([]testkit.Backend, nSlices*perSlice)
	for i := range backends {
		backends[i] = startPod(t, 251, byte(i+1), 8080, fmt.Sprintf("storm-%02d", i))
	}
	client := env.admin.DiscoveryV1().EndpointSlices(ns)
	current := make([]*discoveryv1.EndpointSlice, nSlices)
	for i := range current {
		sl := stormSlice(ns, i, backends[i*perSlice:(i+1)*perSlice], 0)
		created, err := client.Create(context.Background(), sl, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		current[i] = created
	}
	s := harness.Start(t, dcmOptions(t, ns))
	backend := dcm.BackendName(dcm.KindHTTP, ns, "storm")
	names := func(bs []testkit.Backend) []string {
		var out []string
		for _, b := range bs {
			out = append(out, b.Name)
		}
		return out
	}
	s.Serves(host, "/", len(backends), func() ([]string, error) { return names(backends), nil })
	pid, reloads := s.WorkerPID(), s.Reloads()

	heap0, rss0 := settledMemory()
	syncs0, cmds0 := s.Counter("dcm_updates_total"), len(s.Commands())
	var peakHeap uint64
	stopSampling := sampleHeap(&peakHeap)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, nSlices)
	for i := range nSlices {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			sl := current[i]
			for range rewrites {
				next := stormSlice(ns, i, backends[i*perSlice:(i+1)*perSlice], rng.IntN(4))
				next.ResourceVersion = sl.ResourceVersion
				updated, err := client.Update(context.Background(), next, metav1.UpdateOptions{})
				if err != nil {
					errs <- fmt.Errorf("slice %d: %w", i, err)
					return
				}
				sl = updated
			}
			current[i] = sl
		})
	}
	wg.Wait()
	written := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.Eventually("HAProxy's servers are the final slices' ready endpoints", time.Minute, func() error {
		return sameAsSlices(s, ns, "storm", backend)
	})
	converged := time.Since(start)
	stopSampling()
	heap1, rss1 := settledMemory()
	syncs := int(s.Counter("dcm_updates_total") - syncs0)
	commands := len(s.Commands()) - cmds0
	updates := nSlices * rewrites

	var ready []string
	for i, sl := range current {
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				ready = append(ready, backendNamed(backends[i*perSlice:(i+1)*perSlice], ep.Addresses[0]))
			}
		}
	}
	if err := s.ServesExactly(host, "/", ready, 4*len(ready)); err != nil {
		t.Errorf("after the storm: %v", err)
	}
	t.Logf("storm: %d updates written in %s (%.0f/s), HAProxy equal to the final slices %s after the first write; "+
		"%d syncs (%.2f per update), %d admin-socket commands; heap in use after GC %.1f → %.1f MB (peak during the storm %.1f MB), RSS %.1f → %.1f MB",
		updates, written.Round(10*time.Millisecond), float64(updates)/written.Seconds(), converged.Round(10*time.Millisecond),
		syncs, float64(syncs)/float64(updates), commands, mb(heap0), mb(heap1), mb(peakHeap), mb(rss0), mb(rss1))

	if syncs >= updates {
		t.Errorf("%d syncs for %d updates: not coalesced", syncs, updates)
	}
	// The heap holds the informers' caches (ten small slices) and the
	// engine's state; 1,000 updates must not leave anything behind.
	if heap1 > heap0+16<<20 {
		t.Errorf("heap in use grew from %.1f to %.1f MB across the storm", mb(heap0), mb(heap1))
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v: the storm reloaded HAProxy", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}

// stormSlice is slice i of the storm Service listing its backends in one of
// four shapes: both ready; only the first; only the second; both, the
// second not ready.
func stormSlice(ns string, i int, bs []testkit.Backend, shape int) *discoveryv1.EndpointSlice {
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("storm-%d", i), Labels: map[string]string{
			discoveryv1.LabelServiceName: "storm", discoveryv1.LabelManagedBy: "e2e.dcm.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
	}
	add := func(b testkit.Backend, ready bool) {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{b.Addr},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: b.Name},
		})
	}
	switch shape {
	case 0:
		add(bs[0], true)
		add(bs[1], true)
	case 1:
		add(bs[0], true)
	case 2:
		add(bs[1], true)
	default:
		add(bs[0], true)
		add(bs[1], false)
	}
	return sl
}

func backendNamed(bs []testkit.Backend, addr string) string {
	for _, b := range bs {
		if b.Addr == addr {
			return b.Name
		}
	}
	return "?" + addr
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// settledMemory is this process's heap in use after a full collection and
// its resident set (dcm runs in the test process, with its clients).
func settledMemory() (heap, rss uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, residentBytes()
}

func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// sampleHeap records the peak heap in use every 50 ms until stopped.
func sampleHeap(peak *uint64) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			*peak = max(*peak, m.HeapInuse)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-stopped }
}
