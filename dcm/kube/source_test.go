package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// recorder is a Reporter that keeps what it heard.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Rejected(obj dcm.ObjectRef, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("rejected %s %s: %s", obj, reason, message))
}

func (r *recorder) Accepted(obj dcm.ObjectRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "accepted "+obj.String())
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) count(prefix string) int {
	n := 0
	for _, e := range r.list() {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// heard checks that the recorder heard prefix exactly n times: a wait for
// a report checks it in one go with how many there were.
func (r *recorder) heard(prefix string, n int) func() error {
	return func() error {
		if got := r.count(prefix); got != n {
			return fmt.Errorf("heard %q %d times, want %d (heard %q)", prefix, got, n, r.list())
		}
		return nil
	}
}

// is checks that get says want.
func is(get func() string, want string) func() error {
	return func() error {
		if got := get(); got != want {
			return fmt.Errorf("%q, want %q", got, want)
		}
		return nil
	}
}

// backendCount checks that Desired has n backends.
func backendCount(s *Source, n int) func() error {
	return func() error {
		if d, _ := s.Desired(); len(d.Backends) != n {
			return fmt.Errorf("backends %v, want %d", backendNames(d), n)
		}
		return nil
	}
}

// waitLimit bounds the waits for the source, which works on its own
// goroutines.
const waitLimit = 15 * time.Second

func waitChanged(t *testing.T, s *Source) {
	t.Helper()
	select {
	case <-s.Changed():
	case <-time.After(15 * time.Second):
		t.Fatal("timed out waiting for Changed")
	}
}

// noSignalAfter runs touch, a write that changes nothing the source reads,
// and waits until the source has synced since. Then no signal may be
// waiting: not one for the write, nor a late second one for what came
// before, whose sync ran first (syncs take turns under syncMu).
func noSignalAfter(t *testing.T, s *Source, touch func()) {
	t.Helper()
	before := s.syncs.Load()
	touch()
	testkit.Eventually(t, "a sync after the write that changes nothing", waitLimit, func() error {
		if s.syncs.Load() == before {
			return errors.New("no sync yet")
		}
		return nil
	})
	// The sync sends its signal, if it does, before it lets go of syncMu:
	// reading under the lock waits for it.
	signalled := func() bool {
		s.syncMu.Lock()
		defer s.syncMu.Unlock()
		select {
		case <-s.Changed():
			return true
		default:
			return false
		}
	}()
	if signalled {
		t.Fatal("unexpected Changed signal")
	}
}

func testIngress(name, host string, created time.Time, paths ...networkingv1.HTTPIngressPath) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{httpRule(host, paths...)}},
	}
}

func testService(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name},
		Spec: corev1.ServiceSpec{
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

func testSlice(svc, name string, eps ...epSpec) *discoveryv1.EndpointSlice {
	sl := slice(name, discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, eps...)
	sl.Labels[discoveryv1.LabelServiceName] = svc
	return sl
}

func backend(t *testing.T, s *Source, name string) dcm.DesiredBackend {
	t.Helper()
	d, _ := s.Desired()
	b, ok := d.Backend(name)
	if !ok {
		t.Fatalf("backend %s missing; have %v", name, backendNames(d))
	}
	return *b
}

func backendNames(d dcm.Desired) []string {
	var names []string
	for _, b := range d.Backends {
		names = append(names, b.Name)
	}
	return names
}

func endpointNames(b dcm.DesiredBackend) []string {
	var out []string
	for _, e := range b.Endpoints {
		out = append(out, e.Name+"="+string(e.State))
	}
	return out
}

func TestSource(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	old := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	client := fake.NewClientset(
		testIngress("web", "web.example.com", old, httpPath("/", prefix, svcBackend("web", "http"))),
		testIngress("api", "api.example.com", old,
			httpPath("/v1", prefix, numBackend("api", 80)),
			httpPath("/v2", exact, numBackend("api", 80))),
		testService("web"), testService("api"),
		testSlice("web", "web-abc", ready("web-7d9f8c6b5-aaaaa", "10.0.0.1"), ready("web-7d9f8c6b5-bbbbb", "10.0.0.2")),
		testSlice("api", "api-abc", ready("api-0", "10.0.1.1")),
	)
	rec := &recorder{}
	s := NewSource(client, Options{}, rec, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	waitChanged(t, s)
	if !s.Synced() {
		t.Fatal("Changed before Synced")
	}
	d, since := s.Desired()
	v1 := "be_http:demo:" + RouteName("api", "api.example.com", "/v1", dcm.PathPrefix)
	v2 := "be_http:demo:" + RouteName("api", "api.example.com", "/v2", dcm.PathExact)
	want := []string{v1, v2, "be_http:demo:web"}
	slices.Sort(want)
	if got := backendNames(d); !slices.Equal(got, want) {
		t.Fatalf("backends %v, want %v", got, want)
	}
	if !since.IsZero() {
		t.Errorf("initial state reports an event time %v", since)
	}
	web := backend(t, s, "be_http:demo:web")
	if got := endpointNames(web); !slices.Equal(got, []string{"web-7d9f8c6b5-aaaaa:http=ready", "web-7d9f8c6b5-bbbbb:http=ready"}) {
		t.Errorf("web endpoints %v", got)
	}
	if web.Route.Workload == nil || *web.Route.Workload != (dcm.WorkloadRef{Kind: WorkloadDeployment, Name: "web"}) {
		t.Errorf("web workload %+v", web.Route.Workload)
	}
	if api := backend(t, s, v1); api.Route.Workload == nil || api.Route.Workload.Kind != WorkloadStatefulSet || len(api.Endpoints) != 1 {
		t.Errorf("api backend %+v", api)
	}

	slicesAPI := client.DiscoveryV1().EndpointSlices("demo")
	t.Run("slice update is one signal", func(t *testing.T) {
		f, tr := ptr(false), ptr(true)
		sl := testSlice("web", "web-abc",
			ready("web-7d9f8c6b5-aaaaa", "10.0.0.1"),
			epSpec{pod: "web-7d9f8c6b5-bbbbb", addr: "10.0.0.2", ready: f, serving: tr, terminating: tr},
			epSpec{pod: "web-7d9f8c6b5-ccccc", addr: "10.0.0.3", ready: f, serving: f})
		before := time.Now()
		if _, err := slicesAPI.Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitChanged(t, s)
		_, since := s.Desired()
		if since.Before(before) || since.After(time.Now()) {
			t.Errorf("event time %v not within the update", since)
		}
		want := []string{"web-7d9f8c6b5-aaaaa:http=ready", "web-7d9f8c6b5-bbbbb:http=drain", "web-7d9f8c6b5-ccccc:http=maint"}
		if got := endpointNames(backend(t, s, "be_http:demo:web")); !slices.Equal(got, want) {
			t.Errorf("web endpoints %v, want %v", got, want)
		}
		if _, since := s.Desired(); !since.IsZero() {
			t.Errorf("event time not reset: %v", since)
		}
		noSignalAfter(t, s, func() {
			sl.Labels["touched"] = "yes"
			if _, err := slicesAPI.Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	})

	t.Run("hostile ingress rejected alone, accepted when fixed", func(t *testing.T) {
		ings := client.NetworkingV1().Ingresses("demo")
		bad := testIngress("bad", "bad.example.com", time.Now(),
			httpPath("/ok", prefix, svcBackend("web", "http")),
			httpPath("/a;b", prefix, svcBackend("web", "http")))
		if _, err := ings.Create(ctx, bad, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "rejection", waitLimit, rec.heard("rejected Ingress demo/bad", 1))
		got := rec.list()
		msg := got[len(got)-1]
		if !strings.Contains(msg, "invalid-path") || !strings.Contains(msg, `spec.rules[0].http.paths[1].path "/a;b"`) {
			t.Errorf("rejection message %q", msg)
		}
		rej := s.Rejections()
		if len(rej) != 1 || rej[0].Object != (dcm.ObjectRef{Kind: KindIngress, Namespace: "demo", Name: "bad"}) {
			t.Errorf("Rejections() = %+v", rej)
		}
		d, _ := s.Desired()
		if got := backendNames(d); !slices.Equal(got, want) {
			t.Errorf("backends %v, want the unaffected %v", got, want)
		}
		// A resync-like no-op update must not report again.
		bad.Labels = map[string]string{"touched": "yes"}
		if _, err := ings.Update(ctx, bad, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		bad.Spec.Rules[0].HTTP.Paths[1].Path = "/ab"
		if _, err := ings.Update(ctx, bad, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "acceptance", waitLimit, rec.heard("accepted Ingress demo/bad", 1))
		if n := rec.count("rejected Ingress demo/bad"); n != 1 {
			t.Errorf("rejected reported %d times", n)
		}
		if rej := s.Rejections(); len(rej) != 0 {
			t.Errorf("Rejections() = %+v after fix", rej)
		}
		testkit.Eventually(t, "bad's routes served", waitLimit, backendCount(s, 5))
		web := backend(t, s, "be_http:demo:"+RouteName("bad", "bad.example.com", "/ab", dcm.PathPrefix))
		if len(web.Endpoints) != 3 {
			t.Errorf("fixed ingress endpoints %v", endpointNames(web))
		}
		if err := ings.Delete(ctx, "bad", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "bad's routes gone", waitLimit, backendCount(s, 3))
	})

	t.Run("hostile slice rejected alone", func(t *testing.T) {
		before := endpointNames(backend(t, s, "be_http:demo:web"))
		evil := testSlice("web", "web-evil", ready("evil;pod", "10.9.9.9"))
		if _, err := slicesAPI.Create(ctx, evil, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "slice rejection", waitLimit, rec.heard("rejected EndpointSlice demo/web-evil invalid-name", 1))
		if got := endpointNames(backend(t, s, "be_http:demo:web")); !slices.Equal(got, before) {
			t.Errorf("web endpoints changed to %v", got)
		}
		if err := slicesAPI.Delete(ctx, "web-evil", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "slice acceptance", waitLimit, rec.heard("accepted EndpointSlice demo/web-evil", 1))
	})

	t.Run("conflict: older wins, newer takes over when the older goes", func(t *testing.T) {
		ings := client.NetworkingV1().Ingresses("demo")
		dup := testIngress("dup", "web.example.com", time.Now(), httpPath("/", prefix, svcBackend("api", "http")))
		if _, err := ings.Create(ctx, dup, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "conflict", waitLimit, rec.heard("rejected Ingress demo/dup conflict", 1))
		if err := ings.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "dup accepted", waitLimit, rec.heard("accepted Ingress demo/dup", 1))
		testkit.Eventually(t, "dup served", waitLimit, func() error {
			d, _ := s.Desired()
			b, ok := d.Backend("be_http:demo:dup")
			_, webThere := d.Backend("be_http:demo:web")
			if !ok || webThere || len(b.Endpoints) != 1 || b.Endpoints[0].Addr != "10.0.1.1" {
				return fmt.Errorf("backends %v, dup's endpoints %+v", backendNames(d), b.Endpoints)
			}
			return nil
		})
	})

	t.Run("deleted service leaves an empty backend", func(t *testing.T) {
		if err := client.CoreV1().Services("demo").Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "empty api backend", waitLimit, func() error {
			d, _ := s.Desired()
			if b, ok := d.Backend(v1); !ok || len(b.Endpoints) != 0 || b.Endpoints == nil {
				return fmt.Errorf("backend %s there %v, endpoints %#v", v1, ok, b.Endpoints)
			}
			return nil
		})
	})
}

// TestSourceBurst feeds the informer a burst of watch events the way an API
// server streams them (the fake clientset's own writes are too slow to ever
// outrun a sync): the queue holds one key per Service, so the burst costs far
// fewer syncs than events and the result is exactly the last slice.
func TestSourceBurst(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const n = 200
	client := fake.NewClientset(
		testIngress("web", "web.example.com", time.Now(), httpPath("/", prefix, svcBackend("web", "http"))),
		testService("web"),
		testSlice("web", "web-abc", ready("web-0", "10.0.0.1")),
		testSlice("web", "web-def", ready("web-1", "10.0.0.2")),
	)
	w := watch.NewFakeWithChanSize(2*n, false)
	client.PrependWatchReactor("endpointslices", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, w, nil
	})
	s := NewSource(client, Options{}, nil, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitChanged(t, s)
	if got := endpointNames(backend(t, s, "be_http:demo:web")); !slices.Equal(got, []string{"web-0:http=ready", "web-1:http=ready"}) {
		t.Fatalf("initial endpoints %v", got)
	}

	syncsBefore := s.syncs.Load()
	first := time.Now()
	var last [2]*discoveryv1.EndpointSlice
	for i := range n {
		// Two slices of one Service, each rewritten n/2 times with a
		// changing set of pods.
		name := []string{"web-abc", "web-def"}[i%2]
		var eps []epSpec
		for j := range i%5 + 1 {
			eps = append(eps, ready(fmt.Sprintf("web-%d", 10*(i%2)+j), fmt.Sprintf("10.0.%d.%d", i%2, j+1)))
		}
		sl := testSlice("web", name, eps...)
		sl.ResourceVersion = strconv.Itoa(1000 + i)
		w.Modify(sl)
		last[i%2] = sl
	}
	want := endpointNames(dcm.DesiredBackend{Endpoints: ServiceEndpoints(testService("web"), last[:], "http")})
	signals := 0
	var since time.Time
	testkit.Eventually(t, "the last state of the burst", waitLimit, func() error {
		select {
		case <-s.Changed():
			signals++
		default:
		}
		d, at := s.Desired()
		if since.IsZero() {
			since = at
		}
		b, ok := d.Backend("be_http:demo:web")
		if !ok {
			return fmt.Errorf("no backend be_http:demo:web")
		}
		if got := endpointNames(*b); !slices.Equal(got, want) {
			return fmt.Errorf("endpoints %v, want %v", got, want)
		}
		return nil
	})
	syncs := s.syncs.Load() - syncsBefore
	t.Logf("%d events: %d syncs, %d signals seen; final %v", n, syncs, signals, want)
	if syncs > n/3 {
		t.Errorf("%d syncs for %d events: the queue did not coalesce", syncs, n)
	}
	if len(want) != 9 { // 199%5+1 pods in one slice, 198%5+1 in the other
		t.Errorf("expected 9 final endpoints, got %v", want)
	}
	if since.Before(first) || since.After(time.Now()) {
		t.Errorf("event time %v is not within the burst (started %v)", since, first)
	}
	// The burst's last state also shows up in its middle (the pods depend
	// on i%5 and i%2 alone): one more event, a pod added to the first
	// slice, comes after every event of the burst. Once it is in, nothing
	// of the burst is left to arrive, and the state must be the burst's
	// last plus that pod.
	marked := last[0].DeepCopy()
	marked.ResourceVersion = strconv.Itoa(1000 + n)
	marked.Endpoints = append(marked.Endpoints, testSlice("web", marked.Name, ready("web-marker", "10.0.9.9")).Endpoints...)
	w.Modify(marked)
	wantMarked := endpointNames(dcm.DesiredBackend{Endpoints: ServiceEndpoints(testService("web"), []*discoveryv1.EndpointSlice{marked, last[1]}, "http")})
	testkit.Eventually(t, "the event after the burst", waitLimit, is(func() string {
		return strings.Join(endpointNames(backend(t, s, "be_http:demo:web")), " ")
	}, strings.Join(wantMarked, " ")))
}

func TestSourceNamespacesAndClass(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	now := time.Now()
	other := testIngress("web", "other.example.com", now, httpPath("/", prefix, svcBackend("web", "http")))
	other.Namespace = "other"
	nginx := testIngress("nginx", "nginx.example.com", now, httpPath("/", prefix, svcBackend("web", "http")))
	nginx.Spec.IngressClassName = ptr("nginx")
	legacy := testIngress("legacy", "legacy.example.com", now, httpPath("/", prefix, svcBackend("web", "http")))
	legacy.Annotations = map[string]string{AnnotationIngressClass: "dcm"}
	mine := testIngress("mine", "mine.example.com", now, httpPath("/", prefix, svcBackend("web", "http")))
	mine.Spec.IngressClassName = ptr("dcm")
	client := fake.NewClientset(other, nginx, legacy, mine, testService("web"))
	s := NewSource(client, Options{IngressClass: "dcm", Namespaces: []string{"demo", "empty"}}, nil, nil)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitChanged(t, s)
	d, _ := s.Desired()
	if got, want := backendNames(d), []string{"be_http:demo:legacy", "be_http:demo:mine"}; !slices.Equal(got, want) {
		t.Errorf("backends %v, want %v", got, want)
	}
	// Leaving the class is like being deleted; joining it like being created.
	mine.Spec.IngressClassName = ptr("nginx")
	if _, err := client.NetworkingV1().Ingresses("demo").Update(ctx, mine, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	nginx.Spec.IngressClassName = ptr("dcm")
	if _, err := client.NetworkingV1().Ingresses("demo").Update(ctx, nginx, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "class change applied", waitLimit, func() error {
		d, _ := s.Desired()
		if got, want := backendNames(d), []string{"be_http:demo:legacy", "be_http:demo:nginx"}; !slices.Equal(got, want) {
			return fmt.Errorf("backends %v, want %v", got, want)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestRunCancelledBeforeSync(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("apiserver unreachable")
	})
	s := NewSource(client, Options{}, nil, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := s.Run(ctx); err == nil || !strings.Contains(err.Error(), "caches") {
		t.Fatalf("Run = %v, want an error about caches", err)
	}
	if s.Synced() {
		t.Error("Synced after a failed start")
	}
	if err := s.Run(t.Context()); err == nil {
		t.Error("second Run did not fail")
	}
}

// --- Source logic on plain indexers (no informers) ---------------------------

type cluster struct {
	ing, svc, eps cache.Indexer
}

func newTestSource(tb testing.TB, opts Options, rep Reporter) (*Source, *cluster) {
	tb.Helper()
	ns := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	c := &cluster{
		ing: cache.NewIndexer(cache.MetaNamespaceKeyFunc, ns),
		svc: cache.NewIndexer(cache.MetaNamespaceKeyFunc, ns),
		eps: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, indexByService: sliceServiceIndex}),
	}
	s := newSource(opts, rep, nil)
	s.listers[""] = listerSet{
		ingresses: networkinglisters.NewIngressLister(c.ing),
		services:  corelisters.NewServiceLister(c.svc),
		slices:    c.eps,
	}
	return s, c
}

func mustSync(tb testing.TB, s *Source, key string) {
	tb.Helper()
	if err := s.sync(key, time.Now()); err != nil {
		tb.Fatalf("sync %s: %v", key, err)
	}
}

// A claims x, B claims x and y, C claims y. Oldest first: A wins x, B loses,
// so y is free and C serves it. When A goes, B wins and C loses.
func TestConflictChain(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	a := testIngress("a", "x.example.com", t0, httpPath("/", prefix, svcBackend("web", "http")))
	b := testIngress("b", "x.example.com", t0.Add(time.Hour), httpPath("/", prefix, svcBackend("web", "http")))
	b.Spec.Rules = append(b.Spec.Rules, httpRule("y.example.com", httpPath("/", prefix, svcBackend("web", "http"))))
	c := testIngress("c", "y.example.com", t0.Add(2*time.Hour), httpPath("/", prefix, svcBackend("web", "http")))
	bX := "be_http:demo:" + RouteName("b", "x.example.com", "/", dcm.PathPrefix)
	bY := "be_http:demo:" + RouteName("b", "y.example.com", "/", dcm.PathPrefix)

	// Whatever order the Ingresses arrive in, the outcome is the same.
	for _, order := range [][]*networkingv1.Ingress{{a, b, c}, {c, b, a}, {b, c, a}, {b, a, c}} {
		rec := &recorder{}
		s, cl := newTestSource(t, Options{}, rec)
		for _, o := range []any{testService("web"), testSlice("web", "web-1", ready("web-0", "10.0.0.1"))} {
			if o, ok := o.(*corev1.Service); ok {
				_ = cl.svc.Add(o)
				continue
			}
			_ = cl.eps.Add(o)
		}
		for _, ing := range order {
			_ = cl.ing.Add(ing)
			mustSync(t, s, "ingress/demo/"+ing.Name)
		}
		d, _ := s.Desired()
		if got, want := backendNames(d), []string{"be_http:demo:a", "be_http:demo:c"}; !slices.Equal(got, want) {
			t.Errorf("order %s%s%s: backends %v, want %v", order[0].Name, order[1].Name, order[2].Name, got, want)
		}
		rej := s.Rejections()
		if len(rej) != 1 || rej[0].Object.Name != "b" || rej[0].Reason != dcm.RejectConflict ||
			!strings.Contains(rej[0].Message, `host "x.example.com" path "/" (Prefix) is already served by Ingress demo/a`) {
			t.Errorf("rejections %+v", rej)
		}

		_ = cl.ing.Delete(a)
		mustSync(t, s, "ingress/demo/a")
		d, _ = s.Desired()
		if got, want := backendNames(d), slices.Sorted(slices.Values([]string{bX, bY})); !slices.Equal(got, want) {
			t.Errorf("after deleting a: backends %v, want %v", got, want)
		}
		if rej := s.Rejections(); len(rej) != 1 || rej[0].Object.Name != "c" {
			t.Errorf("after deleting a: rejections %+v", rej)
		}
		if got := rec.list(); got[len(got)-2] != "accepted Ingress demo/b" || !strings.HasPrefix(got[len(got)-1], "rejected Ingress demo/c conflict") {
			t.Errorf("reports %q", got)
		}
	}
}

// The caller of Desired may read its snapshot while syncs go on.
func TestDesiredIsASnapshot(t *testing.T) {
	s, cl := newTestSource(t, Options{}, nil)
	_ = cl.ing.Add(testIngress("web", "web.example.com", time.Now(), httpPath("/", prefix, svcBackend("web", "http"))))
	_ = cl.svc.Add(testService("web"))
	sl := testSlice("web", "web-1", ready("web-0", "10.0.0.1"))
	_ = cl.eps.Add(sl)
	if err := s.initial(); err != nil {
		t.Fatal(err)
	}
	before, since := s.Desired()
	if !since.IsZero() {
		t.Errorf("initial since %v", since)
	}
	kept := fmt.Sprintf("%+v", before)

	sl = testSlice("web", "web-1", ready("web-0", "10.0.0.1"), ready("web-1", "10.0.0.2"))
	_ = cl.eps.Update(sl)
	seen := time.Now().Add(-time.Second)
	if err := s.sync("service/demo/web", seen); err != nil {
		t.Fatal(err)
	}
	if err := s.sync("service/demo/web", time.Now()); err != nil { // no change: time ignored
		t.Fatal(err)
	}
	after, since := s.Desired()
	if !since.Equal(seen) {
		t.Errorf("since %v, want %v", since, seen)
	}
	if got := fmt.Sprintf("%+v", before); got != kept {
		t.Errorf("earlier snapshot changed:\n%s\n%s", kept, got)
	}
	if len(after.Backends[0].Endpoints) != 2 {
		t.Errorf("after %+v", after)
	}
	if _, since := s.Desired(); !since.IsZero() {
		t.Errorf("since not reset: %v", since)
	}
}

// A Service key must only recompute the routes that use that Service.
func TestServiceIndex(t *testing.T) {
	s, cl := newTestSource(t, Options{}, nil)
	for _, name := range []string{"a", "b"} {
		_ = cl.ing.Add(testIngress(name, name+".example.com", time.Now(), httpPath("/", prefix, svcBackend(name, "http"))))
		_ = cl.svc.Add(testService(name))
		_ = cl.eps.Add(testSlice(name, name+"-1", ready(name+"-0", "10.0.0.1")))
	}
	if err := s.initial(); err != nil {
		t.Fatal(err)
	}
	t1 := newTxn()
	s.syncMu.Lock()
	err := s.syncService(t1, "demo", "a")
	s.syncMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if len(t1.backends) != 1 || t1.backends["be_http:demo:a"] == nil {
		t.Errorf("service a touched %v", t1.backends)
	}
	t2 := newTxn()
	s.syncMu.Lock()
	_ = s.syncService(t2, "demo", "unused")
	s.syncMu.Unlock()
	if len(t2.backends) != 0 || len(t2.views) != 0 {
		t.Errorf("unused service touched %v %v", t2.backends, t2.views)
	}
}

// BenchmarkDesired1000 measures what one EndpointSlice event costs with 1000
// Ingresses, Services and slices of 10 endpoints in the caches: the sync of
// its Service key and the Desired snapshot the engine then takes.
func BenchmarkDesired1000(b *testing.B) {
	s, cl := newTestSource(b, Options{}, nil)
	const n = 1000
	for i := range n {
		name := fmt.Sprintf("app-%04d", i)
		_ = cl.ing.Add(testIngress(name, name+".example.com", time.Now(), httpPath("/", prefix, svcBackend(name, "http"))))
		_ = cl.svc.Add(testService(name))
		var eps []epSpec
		for j := range 10 {
			eps = append(eps, ready(fmt.Sprintf("%s-7d9f8c6b5-%05d", name, j), fmt.Sprintf("10.%d.%d.%d", i/256, i%256, j+1)))
		}
		_ = cl.eps.Add(testSlice(name, name+"-abcde", eps...))
	}
	if err := s.initial(); err != nil {
		b.Fatal(err)
	}
	if d, _ := s.Desired(); len(d.Backends) != n {
		b.Fatalf("%d backends", len(d.Backends))
	}
	// Alternate two versions of one slice so every sync is a real change.
	sl := testSlice("app-0500", "app-0500-abcde")
	_ = cl.eps.Update(sl)
	versions := [2]*discoveryv1.EndpointSlice{}
	for v := range versions {
		var eps []epSpec
		for j := range 10 {
			e := ready(fmt.Sprintf("app-0500-7d9f8c6b5-%05d", j), fmt.Sprintf("10.1.244.%d", j+1))
			if j == v {
				e.ready = ptr(false)
			}
			eps = append(eps, e)
		}
		versions[v] = testSlice("app-0500", "app-0500-abcde", eps...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		_ = cl.eps.Update(versions[i%2])
		if err := s.sync("service/demo/app-0500", time.Now()); err != nil {
			b.Fatal(err)
		}
		d, _ := s.Desired()
		if len(d.Backends) != n {
			b.Fatal("lost backends")
		}
	}
}
