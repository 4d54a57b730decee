package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dcm-router/dcm/internal/testkit"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// testOptions keeps the integration tests quick and off the default address
// range, so that a demo running on the same machine does not get in the way.
func testOptions() Options {
	return Options{
		ReadinessDelay: 50 * time.Millisecond,
		// Long enough that a terminating pod's draining state reaches the
		// slices even when two busy cores delay the writer.
		PreStopDelay:     600 * time.Millisecond,
		TerminationGrace: 5 * time.Second,
		AddrPrefix:       "127.81.",
		Seed:             1,
	}
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() && os.Getenv("DEMO_DEBUG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// endpointView is one EndpointSlice endpoint as the tests look at it.
type endpointView struct {
	slice                       string
	addr                        string
	ready, serving, terminating bool
}

// recorder remembers every condition combination an endpoint was seen in.
type recorder struct {
	mu   sync.Mutex
	seen map[string]map[[3]bool]bool // pod → {ready, serving, terminating}
}

func (r *recorder) observe(obj any) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ep := range es.Endpoints {
		if ep.TargetRef == nil {
			continue
		}
		c := [3]bool{deref(ep.Conditions.Ready), deref(ep.Conditions.Serving), deref(ep.Conditions.Terminating)}
		if r.seen[ep.TargetRef.Name] == nil {
			r.seen[ep.TargetRef.Name] = map[[3]bool]bool{}
		}
		r.seen[ep.TargetRef.Name][c] = true
	}
}

func (r *recorder) sawDraining(pod string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[pod][[3]bool{false, true, true}]
}

// seenAs lists the {ready, serving, terminating} combinations pod was seen in.
func (r *recorder) seenAs(pod string) [][3]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Keys(r.seen[pod]))
}

// harness runs a Cluster for one test and checks, when the test ends, that
// Run returned promptly and left no server or goroutine behind.
type harness struct {
	t       *testing.T
	c       *Cluster
	rec     *recorder
	http    *http.Client
	addrsMu sync.Mutex
	addrs   map[string]bool // every pod address seen
	// stop cancels Run, checks that nothing is left behind and says how
	// long Run took to return; it runs once, at the latest when the test ends.
	stop func() time.Duration
}

func startCluster(t *testing.T, opts Options) *harness {
	t.Helper()
	baseline := runtime.NumGoroutine()
	c, err := New(opts, testLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h := &harness{
		t: t, c: c,
		rec:   &recorder{seen: map[string]map[[3]bool]bool{}},
		http:  &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
		addrs: map[string]bool{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- c.Run(ctx) }()

	factory := informers.NewSharedInformerFactory(c.Client(), 0)
	inf := factory.Discovery().V1().EndpointSlices().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    h.rec.observe,
		UpdateFunc: func(_, obj any) { h.rec.observe(obj) },
	}); err != nil {
		t.Fatalf("watch slices: %v", err)
	}
	factory.Start(ctx.Done())

	h.stop = sync.OnceValue(func() time.Duration {
		cancel()
		start := time.Now()
		select {
		case err := <-runDone:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(stopTimeout + 5*time.Second):
			t.Fatalf("Run did not return after its context ended")
		}
		took := time.Since(start)
		t.Logf("Run returned %v after cancel", took.Round(time.Millisecond))
		factory.Shutdown()
		for _, p := range c.Pods("", "") {
			t.Errorf("pod %s still known after Run returned", p.Name)
		}
		h.addrsMu.Lock()
		for addr := range h.addrs {
			if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				conn.Close()
				t.Errorf("%s still accepts connections after Run returned", addr)
			}
		}
		h.addrsMu.Unlock()
		checkGoroutines(t, baseline)
		return took
	})
	t.Cleanup(func() { h.stop() })
	return h
}

// checkGoroutines waits for the goroutine count to drop back to what it was
// before the cluster started.
func checkGoroutines(t *testing.T, baseline int) {
	t.Helper()
	err := testkit.Poll(5*time.Second, func() error {
		if n := runtime.NumGoroutine(); n > baseline {
			return fmt.Errorf("%d goroutines now, %d before the cluster started", n, baseline)
		}
		return nil
	})
	if err != nil {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Errorf("%v:\n%s", err, buf[:n])
	}
}

func (h *harness) remember(addr string) {
	h.addrsMu.Lock()
	h.addrs[addr] = true
	h.addrsMu.Unlock()
}

// endpoints reads a Service's slices from the API and checks what every slice
// must look like whatever the moment.
func (h *harness) endpoints(ns, svcName string) (map[string]endpointView, []*discoveryv1.EndpointSlice) {
	h.t.Helper()
	ctx := context.Background()
	svc, err := h.c.Client().CoreV1().Services(ns).Get(ctx, svcName, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("get service: %v", err)
	}
	list, err := h.c.Client().DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + svcName,
	})
	if err != nil {
		h.t.Fatalf("list slices: %v", err)
	}
	out := map[string]endpointView{}
	var slices []*discoveryv1.EndpointSlice
	for i := range list.Items {
		es := &list.Items[i]
		slices = append(slices, es)
		if es.Labels[discoveryv1.LabelManagedBy] != managedBy {
			h.t.Errorf("slice %s: managed-by %q", es.Name, es.Labels[discoveryv1.LabelManagedBy])
		}
		if !strings.HasPrefix(es.Name, svcName+"-") || len(es.Name) != len(svcName)+6 {
			h.t.Errorf("slice name %q: want %s-<5 random>", es.Name, svcName)
		}
		if es.AddressType != discoveryv1.AddressTypeIPv4 {
			h.t.Errorf("slice %s: address type %q", es.Name, es.AddressType)
		}
		if len(es.OwnerReferences) != 1 || es.OwnerReferences[0].Kind != "Service" || es.OwnerReferences[0].UID != svc.UID || svc.UID == "" {
			h.t.Errorf("slice %s: owner references %+v, want the service %s", es.Name, es.OwnerReferences, svc.UID)
		}
		if len(es.Endpoints) > 0 {
			if len(es.Ports) != 1 || deref(es.Ports[0].Name) != "http" || deref(es.Ports[0].Port) != 8080 || deref(es.Ports[0].Protocol) != corev1.ProtocolTCP {
				h.t.Errorf("slice %s: ports %+v, want http/8080/TCP", es.Name, es.Ports)
			}
		}
		for _, ep := range es.Endpoints {
			c := ep.Conditions
			if c.Ready == nil || c.Serving == nil || c.Terminating == nil {
				h.t.Errorf("slice %s: conditions not all set: %+v", es.Name, c)
				continue
			}
			if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || ep.TargetRef.UID == "" || deref(ep.NodeName) != nodeName || len(ep.Addresses) != 1 {
				h.t.Errorf("slice %s: endpoint %+v", es.Name, ep)
				continue
			}
			addr := net.JoinHostPort(ep.Addresses[0], "8080")
			h.remember(addr)
			out[ep.TargetRef.Name] = endpointView{slice: es.Name, addr: addr, ready: *c.Ready, serving: *c.Serving, terminating: *c.Terminating}
		}
	}
	return out, slices
}

// settled waits until the app has exactly n pods, all ready and none
// terminating, and the slices, Pod objects and Deployment status agree.
func (h *harness) settled(ns, app string, n int) map[string]endpointView {
	h.t.Helper()
	var eps map[string]endpointView
	// Generous: on two busy cores 150 pods take well over 10 s to start.
	testkit.Eventually(h.t, fmt.Sprintf("%s/%s to settle at %d ready pods", ns, app, n), 45*time.Second, func() error {
		var slices []*discoveryv1.EndpointSlice
		eps, slices = h.endpoints(ns, app)
		pods := h.c.Pods(ns, app)
		var ready []string
		for _, p := range pods {
			if p.Ready && !p.Terminating {
				ready = append(ready, p.Name)
			}
		}
		state := fmt.Errorf("endpoints %v, pods %+v", eps, pods)
		if len(pods) != n || len(ready) != n || len(eps) != n {
			return state
		}
		for _, name := range ready {
			ep, ok := eps[name]
			if !ok || !ep.ready || !ep.serving || ep.terminating {
				return state
			}
		}
		if n == 0 && (len(slices) != 1 || len(slices[0].Endpoints) != 0) {
			return fmt.Errorf("want one empty placeholder slice, got %d slices", len(slices))
		}
		objs, err := h.c.Client().CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: appLabel + "=" + app})
		if err != nil {
			return err
		}
		if len(objs.Items) != n {
			return fmt.Errorf("%d Pod objects", len(objs.Items))
		}
		d, err := h.c.Client().AppsV1().Deployments(ns).Get(context.Background(), app, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.ReadyReplicas != int32(n) || d.Status.Replicas != int32(n) || deref(d.Status.TerminatingReplicas) != 0 {
			return fmt.Errorf("deployment status %+v", d.Status)
		}
		return nil
	})
	for name, ep := range eps {
		h.checkAnswers(ep.addr, name)
	}
	return eps
}

// checkAnswers sends a plain GET to a pod and expects its name back.
func (h *harness) checkAnswers(addr, pod string) {
	h.t.Helper()
	resp, err := h.http.Get("http://" + addr + "/")
	if err != nil {
		h.t.Errorf("GET %s (pod %s): %v", addr, pod, err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != pod+"\n" || resp.Header.Get("X-Pod") != pod {
		h.t.Errorf("GET %s: %d %q X-Pod %q, want 200 %q", addr, resp.StatusCode, body, resp.Header.Get("X-Pod"), pod)
	}
}

func (h *harness) scale(ns, name string, n int32) {
	h.t.Helper()
	ctx := context.Background()
	deployments := h.c.Client().AppsV1().Deployments(ns)
	sc, err := deployments.GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("GetScale: %v", err)
	}
	sc.Spec.Replicas = n
	out, err := deployments.UpdateScale(ctx, name, sc, metav1.UpdateOptions{})
	if err != nil {
		h.t.Fatalf("UpdateScale: %v", err)
	}
	if out.Spec.Replicas != n {
		h.t.Fatalf("UpdateScale answered %d replicas, want %d", out.Spec.Replicas, n)
	}
}

// draining waits until a deleted pod's endpoint is terminating but still
// serving; the simulator learns of the delete through its watch, as a
// kubelet would, so this is not immediate.
func (h *harness) draining(ns, svc, pod string) {
	h.t.Helper()
	testkit.Eventually(h.t, pod+" to drain", 5*time.Second, func() error {
		eps, _ := h.endpoints(ns, svc)
		ep, ok := eps[pod]
		// On a busy machine the draining window can close between two
		// polls; the watch recorder below has seen every write.
		if ok && !ep.ready && ep.serving && ep.terminating || h.rec.sawDraining(pod) {
			return nil
		}
		return fmt.Errorf("endpoint %+v", ep)
	})
	// The watch delivers the same write a moment after a List returns it.
	testkit.Eventually(h.t, "the slice watch to see "+pod+" draining", 2*time.Second, h.sawDraining(pod))
}

func (h *harness) refuses(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return true
	}
	conn.Close()
	return false
}

// sawDraining checks that the slice watch has seen pod ready=false,
// serving=true, terminating=true.
func (h *harness) sawDraining(pod string) func() error {
	return func() error {
		if !h.rec.sawDraining(pod) {
			return fmt.Errorf("the watch has seen %s as %v", pod, h.rec.seenAs(pod))
		}
		return nil
	}
}

type slowResult struct {
	pod, addr string
	status    int
	body      string
	err       error
}

// slowRequests starts one /slow request per endpoint and returns once the
// pods have them in hand (the requests are in flight).
func (h *harness) slowRequests(eps map[string]endpointView, d time.Duration) <-chan slowResult {
	out := make(chan slowResult, len(eps))
	for pod, ep := range eps {
		go func() {
			r := slowResult{pod: pod, addr: ep.addr}
			resp, err := h.http.Get(fmt.Sprintf("http://%s/slow?ms=%d", ep.addr, d.Milliseconds()))
			if err != nil {
				r.err = err
			} else {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				r.status, r.body = resp.StatusCode, string(b)
			}
			out <- r
		}()
	}
	// A request the pod's server has not read yet dies with its listener:
	// each must be in its pod's handler before the test goes on.
	testkit.Eventually(h.t, fmt.Sprintf("%d slow requests in their pods' handlers", len(eps)), 5*time.Second, func() error {
		inFlight := map[string]int{}
		for _, p := range h.c.Pods("", "") {
			inFlight[p.Name] = p.InFlight
		}
		for pod := range eps {
			if inFlight[pod] == 0 {
				return fmt.Errorf("requests in flight by pod: %v", inFlight)
			}
		}
		return nil
	})
	return out
}

func TestScaleThroughScaleSubresource(t *testing.T) {
	start := time.Now()
	h := startCluster(t, testOptions())
	const ns, app = "demo", "web"

	eps := h.settled(ns, app, 2)
	h.settled(ns, "shop", 2)
	h.settled(ns, "api", 1)
	for _, p := range h.c.Pods("", "") {
		if !strings.HasPrefix(p.IP, "127.81.1.") {
			t.Errorf("pod %s got address %s, want 127.81.1.x", p.Name, p.IP)
		}
		if !podNameRE.MatchString(p.Name) {
			t.Errorf("pod name %q does not look like a Deployment's", p.Name)
		}
	}

	steps := []struct {
		replicas int32
		slow     bool // a slow request to every pod is in flight during the step
	}{
		{replicas: 5},
		{replicas: 1, slow: true},
		{replicas: 0, slow: true},
		{replicas: 3},
	}
	for _, step := range steps {
		before := eps
		var slow <-chan slowResult
		if step.slow {
			slow = h.slowRequests(before, 800*time.Millisecond)
		}
		h.scale(ns, app, step.replicas)
		eps = h.settled(ns, app, int(step.replicas))
		t.Logf("%d → %d at %v", len(before), step.replicas, time.Since(start).Round(time.Millisecond))

		for pod, ep := range before {
			if _, kept := eps[pod]; kept {
				continue
			}
			testkit.Eventually(t, fmt.Sprintf("scale to %d: the slice watch to have seen removed pod %s draining", step.replicas, pod),
				2*time.Second, h.sawDraining(pod))
			testkit.Eventually(t, ep.addr+" to stop listening", 5*time.Second, func() error {
				if !h.refuses(ep.addr) {
					return errors.New("it accepts connections")
				}
				return nil
			})
		}
		if slow != nil {
			for range before {
				r := <-slow
				if r.err != nil || r.status != http.StatusOK || r.body != r.pod+"\n" {
					t.Errorf("slow request to %s (%s) during scale to %d: %d %q %v", r.pod, r.addr, step.replicas, r.status, r.body, r.err)
				}
			}
		}
	}

	t.Run("graceful delete is replaced", func(t *testing.T) {
		victim := slices.Sorted(maps.Keys(eps))[0]
		pods := h.c.Client().CoreV1().Pods(ns)
		if err := pods.Delete(context.Background(), victim, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete pod: %v", err)
		}
		obj, err := pods.Get(context.Background(), victim, metav1.GetOptions{})
		if err != nil || obj.DeletionTimestamp == nil {
			t.Errorf("a graceful delete should leave the Pod with a deletionTimestamp until it stopped: %v", err)
		}
		h.draining(ns, app, victim)
		after := h.settled(ns, app, 3)
		if _, ok := after[victim]; ok {
			t.Errorf("deleted pod %s still an endpoint", victim)
		}
		if _, err := pods.Get(context.Background(), victim, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Pod %s should be gone once stopped: %v", victim, err)
		}
		if !h.refuses(eps[victim].addr) {
			t.Errorf("deleted pod %s still listening", victim)
		}
		eps = after
	})

	t.Run("forced delete still terminates gracefully", func(t *testing.T) {
		victim := slices.Sorted(maps.Keys(eps))[0]
		slow := h.slowRequests(map[string]endpointView{victim: eps[victim]}, 400*time.Millisecond)
		err := h.c.Client().CoreV1().Pods(ns).Delete(context.Background(), victim, metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))})
		if err != nil {
			t.Fatalf("delete pod: %v", err)
		}
		h.draining(ns, app, victim)
		after := h.settled(ns, app, 3)
		if _, ok := after[victim]; ok {
			t.Errorf("deleted pod %s still an endpoint", victim)
		}
		if r := <-slow; r.err != nil || r.status != http.StatusOK {
			t.Errorf("slow request during forced delete: %d %v", r.status, r.err)
		}
	})

	t.Run("Scale helper", func(t *testing.T) {
		if err := h.c.Scale(context.Background(), ns, "api", 2); err != nil {
			t.Fatalf("Scale: %v", err)
		}
		h.settled(ns, "api", 2)
		if err := h.c.Scale(context.Background(), ns, "nope", 2); !apierrors.IsNotFound(err) {
			t.Errorf("Scale of a missing deployment: %v, want NotFound", err)
		}
	})

	t.Run("template change replaces pods", func(t *testing.T) {
		before := h.settled(ns, "shop", 2)
		deployments := h.c.Client().AppsV1().Deployments(ns)
		d, err := deployments.Get(context.Background(), "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Labels["version"] = "2"
		if _, err := deployments.Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update deployment: %v", err)
		}
		testkit.Eventually(t, "shop's pods to be replaced", 10*time.Second, func() error {
			pods := h.c.Pods(ns, "shop")
			for _, p := range pods {
				if _, old := before[p.Name]; old {
					return fmt.Errorf("old pod %s still there: %+v", p.Name, pods)
				}
			}
			return nil
		})
		after := h.settled(ns, "shop", 2)
		for name := range after {
			old := slices.Sorted(maps.Keys(before))[0]
			if name[:len("shop-")+10] == old[:len("shop-")+10] {
				t.Errorf("new pod %s has the old template hash of %s", name, old)
			}
		}
		rs, err := h.c.Client().AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=shop"})
		if err != nil || len(rs.Items) != 2 {
			t.Fatalf("want the old and the new ReplicaSet: %v, %v", rs, err)
		}
		for _, r := range rs.Items {
			if r.Status.Replicas != *r.Spec.Replicas || (*r.Spec.Replicas != 0) != (r.Labels["version"] == "2") {
				t.Errorf("replicaset %s: spec %d status %d labels %v", r.Name, *r.Spec.Replicas, r.Status.Replicas, r.Labels)
			}
		}
	})

	t.Run("deleting Service and Deployment", func(t *testing.T) {
		ctx := context.Background()
		client := h.c.Client()
		if err := client.CoreV1().Services(ns).Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "api's slices to go", 5*time.Second, func() error {
			l, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=api"})
			if err != nil || len(l.Items) != 0 {
				return fmt.Errorf("slices %v, %v", l, err)
			}
			return nil
		})
		if err := client.AppsV1().Deployments(ns).Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "api's pods and replicasets to go", 5*time.Second, func() error {
			pods, err1 := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=api"})
			rs, err2 := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=api"})
			if err1 != nil || err2 != nil || len(pods.Items) != 0 || len(rs.Items) != 0 || len(h.c.Pods(ns, "api")) != 0 {
				return fmt.Errorf("pods %v, replicasets %v (%v, %v)", pods, rs, err1, err2)
			}
			return nil
		})
	})
	t.Logf("scenario took %v", time.Since(start).Round(time.Millisecond))
}

// TestSpillOver checks through the real path (pods, watches, writes) what
// TestPlanSlices checks in isolation: more than 100 endpoints take more
// slices, and scaling back in gives the extra slices up.
func TestSpillOver(t *testing.T) {
	opts := testOptions()
	opts.Apps = []App{{Namespace: "big", Name: "many", Host: "many.localhost", Path: "/", Replicas: 150}}
	h := startCluster(t, opts)
	h.settled("big", "many", 150)
	_, sl := h.endpoints("big", "many")
	var sizes []int
	for _, es := range sl {
		sizes = append(sizes, len(es.Endpoints))
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{50, 100}) {
		t.Errorf("150 endpoints in slices of %v, want [50 100]", sizes)
	}
	// Like the real controller, the simulator does not rebalance slices:
	// the survivors may stay spread over both, but no slice stays empty.
	h.scale("big", "many", 10)
	h.settled("big", "many", 10)
	_, sl = h.endpoints("big", "many")
	if len(sl) > 2 {
		t.Errorf("10 endpoints in %d slices", len(sl))
	}
	for _, es := range sl {
		if len(es.Endpoints) == 0 {
			t.Errorf("empty slice %s kept next to non-empty ones", es.Name)
		}
	}
}

func TestRunTwice(t *testing.T) {
	h := startCluster(t, testOptions())
	h.settled("demo", "web", 2)
	if err := h.c.Run(context.Background()); err == nil {
		t.Errorf("second Run: want an error")
	}
}

func TestStopWithRequestsInFlight(t *testing.T) {
	opts := testOptions()
	opts.Apps = []App{{Namespace: "ns1", Name: "solo", Host: "solo.localhost", Path: "/", Replicas: 1}}
	h := startCluster(t, opts)
	eps := h.settled("ns1", "solo", 1)
	// A request far longer than Run may take to stop: Run waits for it for
	// its stop bound, then cuts it off.
	slow := h.slowRequests(eps, 50*time.Second)
	took := h.stop()
	if took < stopTimeout-500*time.Millisecond || took > stopTimeout+2*time.Second {
		t.Errorf("Run returned %v after cancel with a request in flight, want about %v", took, stopTimeout)
	}
	select {
	case r := <-slow:
		if r.err == nil && r.status == http.StatusOK {
			t.Errorf("a 50 s request cannot have completed")
		}
	case <-time.After(5 * time.Second):
		t.Errorf("slow request still running after Run returned")
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"prefix with three octets", Options{AddrPrefix: "127.0.1."}},
		{"prefix without dot", Options{AddrPrefix: "127.0"}},
		{"prefix not a number", Options{AddrPrefix: "127.x."}},
		{"port", Options{PodPort: 70000}},
		{"negative delay", Options{PreStopDelay: -time.Second}},
		{"app name", Options{Apps: []App{{Namespace: "demo", Name: "Web", Path: "/"}}}},
		{"app namespace", Options{Apps: []App{{Namespace: "", Name: "web", Path: "/"}}}},
		{"app path", Options{Apps: []App{{Namespace: "demo", Name: "web", Path: "api"}}}},
		{"app host", Options{Apps: []App{{Namespace: "demo", Name: "web", Host: "a_b", Path: "/"}}}},
		{"app replicas", Options{Apps: []App{{Namespace: "demo", Name: "web", Path: "/", Replicas: -1}}}},
		{"duplicate app", Options{Apps: []App{{Namespace: "demo", Name: "web", Path: "/"}, {Namespace: "demo", Name: "web", Path: "/x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.opts, nil); err == nil {
				t.Errorf("New(%+v): want an error", tt.opts)
			}
		})
	}
}

func TestSeededObjects(t *testing.T) {
	c, err := New(Options{}, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx := context.Background()
	client := c.Client()
	for _, app := range DefaultApps() {
		d, err := client.AppsV1().Deployments(app.Namespace).Get(ctx, app.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("deployment %s: %v", app.Name, err)
		}
		if *d.Spec.Replicas != app.Replicas || d.Spec.Selector.MatchLabels["app"] != app.Name || d.Spec.Template.Labels["app"] != app.Name || d.UID == "" {
			t.Errorf("deployment %s: %+v", app.Name, d.Spec)
		}
		svc, err := client.CoreV1().Services(app.Namespace).Get(ctx, app.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("service %s: %v", app.Name, err)
		}
		p := svc.Spec.Ports
		if len(p) != 1 || p[0].Name != "http" || p[0].Port != 80 || p[0].TargetPort.StrVal != "http" ||
			svc.Spec.Selector["app"] != app.Name || svc.Annotations["dcm.io/workload"] != "Deployment/"+app.Name {
			t.Errorf("service %s: %+v %v", app.Name, svc.Spec, svc.Annotations)
		}
		ing, err := client.NetworkingV1().Ingresses(app.Namespace).Get(ctx, app.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ingress %s: %v", app.Name, err)
		}
		r := ing.Spec.Rules
		if deref(ing.Spec.IngressClassName) != "dcm" || len(r) != 1 || r[0].Host != app.Host || len(r[0].HTTP.Paths) != 1 ||
			r[0].HTTP.Paths[0].Path != app.Path || *r[0].HTTP.Paths[0].PathType != "Prefix" ||
			r[0].HTTP.Paths[0].Backend.Service.Name != app.Name || r[0].HTTP.Paths[0].Backend.Service.Port.Name != "http" {
			t.Errorf("ingress %s: %+v", app.Name, ing.Spec)
		}
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, "demo", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace: %v", err)
	}
	// Before Run there are no pods, and Scale already works.
	if got := c.Pods("", ""); len(got) != 0 {
		t.Errorf("pods before Run: %v", got)
	}
	if err := c.Scale(ctx, "demo", "web", 4); err != nil {
		t.Fatalf("Scale: %v", err)
	}
	sc, err := client.AppsV1().Deployments("demo").GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || sc.Spec.Replicas != 4 || sc.Status.Selector != "app=web" {
		t.Errorf("GetScale after Scale: %+v %v", sc, err)
	}
}
