package bench

import (
	"context"
	"errors"
	"fmt"
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
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/engine"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/internal/testkit"
)

// kubeNS is the namespace of a KubeCluster's objects.
const kubeNS = "bench"

// KubeCluster is a cluster of routes held by client-go's fake clientset and
// read by dcm's real kube Source: route r is a Service, an EndpointSlice of
// Endpoints endpoints and an Ingress for KubeHost(r), health checks off.
// BenchmarkEventToHAProxy (e2e) and the scale section (TestScale) share it.
type KubeCluster struct {
	// Client is the simple fake clientset: NewClientset's field management
	// builds a REST mapper for every Create (1.5 ms each, 50 s for 10,000
	// routes' 30,000 objects), and dcm reads no managed fields.
	Client    *fake.Clientset
	Endpoints int
	// Addr is the address of a route's endpoint, in 127.0.0.0/8.
	Addr func(route, endpoint int) string
	Port int32

	mu       sync.Mutex
	firstOut map[int]bool // routes whose endpoint 0 is not ready
}

// NewKubeCluster holds routes 0 … routes-1, every endpoint ready.
func NewKubeCluster(routes, endpoints int, port int32, addr func(route, endpoint int) string) *KubeCluster {
	// The fake's watches buffer DefaultChanSize events (100) and panic
	// beyond: an update of every EndpointSlice at once (a full resync)
	// outruns the informer. An API server's watch cache holds them; so
	// does a buffer of twice the routes here (the watches are made when
	// the informers start, after this).
	watch.DefaultChanSize = max(watch.DefaultChanSize, int32(2*routes))
	k := &KubeCluster{Endpoints: endpoints, Addr: addr, Port: port, firstOut: map[int]bool{}}
	objs := make([]runtime.Object, 0, 3*routes)
	for r := range routes {
		objs = append(objs, k.objects(r)...)
	}
	k.Client = fake.NewSimpleClientset(objs...)
	return k
}

// KubeName names route r's Service, EndpointSlice owner and Ingress.
func KubeName(r int) string { return fmt.Sprintf("app%04d", r) }

// KubeHost is route r's host.
func KubeHost(r int) string { return KubeName(r) + ".bench" }

// KubePod is the pod behind endpoint e of route r.
func KubePod(r, e int) string { return fmt.Sprintf("%s-%d", KubeName(r), e) }

// objects are route r's Service, EndpointSlice (every endpoint ready) and
// Ingress, in the order a deployment creates them.
func (k *KubeCluster) objects(r int) []runtime.Object {
	name := KubeName(r)
	return []runtime.Object{
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: kubeNS, Name: name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
		},
		k.Slice(r, true),
		&networkingv1.Ingress{
			// Health checks off: the endpoints' readiness is what the slice
			// says, and at 10,000 routes HAProxy would probe 100,000 servers.
			ObjectMeta: metav1.ObjectMeta{Namespace: kubeNS, Name: name, Annotations: map[string]string{kube.AnnotationHealthCheck: "false"}},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
				Host: KubeHost(r),
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: name, Port: networkingv1.ServiceBackendPort{Name: "http"}}},
				}}}},
			}}},
		},
	}
}

// Slice is route r's EndpointSlice; its endpoint 0 is ready or not as said.
func (k *KubeCluster) Slice(r int, firstReady bool) *discoveryv1.EndpointSlice {
	name := KubeName(r)
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: kubeNS, Name: name + "-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(k.Port)}},
	}
	for e := range k.Endpoints {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{k.Addr(r, e)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(e != 0 || firstReady)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: kubeNS, Name: KubePod(r, e)},
		})
	}
	return sl
}

// AddRoute creates route r: its Service and EndpointSlice, then its
// Ingress, which makes it a route. It returns when the Ingress was written.
func (k *KubeCluster) AddRoute(ctx context.Context, r int) (written time.Time, err error) {
	objs := k.objects(r)
	if _, err := k.Client.CoreV1().Services(kubeNS).Create(ctx, objs[0].(*corev1.Service), metav1.CreateOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("create service %s: %w", KubeName(r), err)
	}
	if _, err := k.Client.DiscoveryV1().EndpointSlices(kubeNS).Create(ctx, objs[1].(*discoveryv1.EndpointSlice), metav1.CreateOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("create endpointslice of %s: %w", KubeName(r), err)
	}
	if _, err := k.Client.NetworkingV1().Ingresses(kubeNS).Create(ctx, objs[2].(*networkingv1.Ingress), metav1.CreateOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("create ingress %s: %w", KubeName(r), err)
	}
	return time.Now(), nil
}

// DeleteRoute deletes route r's Ingress, which ends the route, then its
// Service and EndpointSlice. It returns when the Ingress was deleted.
func (k *KubeCluster) DeleteRoute(ctx context.Context, r int) (written time.Time, err error) {
	name := KubeName(r)
	if err := k.Client.NetworkingV1().Ingresses(kubeNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("delete ingress %s: %w", name, err)
	}
	written = time.Now()
	if err := k.Client.CoreV1().Services(kubeNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return written, fmt.Errorf("delete service %s: %w", name, err)
	}
	if err := k.Client.DiscoveryV1().EndpointSlices(kubeNS).Delete(ctx, name+"-abcde", metav1.DeleteOptions{}); err != nil {
		return written, fmt.Errorf("delete endpointslice of %s: %w", name, err)
	}
	return written, nil
}

// SetFirstReady writes route r's EndpointSlice with endpoint 0 ready or not.
func (k *KubeCluster) SetFirstReady(ctx context.Context, r int, ready bool) error {
	if _, err := k.Client.DiscoveryV1().EndpointSlices(kubeNS).Update(ctx, k.Slice(r, ready), metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update endpointslice of %s: %w", KubeName(r), err)
	}
	k.mu.Lock()
	k.firstOut[r] = !ready
	k.mu.Unlock()
	return nil
}

// FirstReady reports whether route r's endpoint 0 is ready, as last written.
func (k *KubeCluster) FirstReady(r int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.firstOut[r]
}

// Source runs dcm's kube Source (as system.New builds it, without status
// writes) on the cluster until the test ends, behind a SeenSource.
func (k *KubeCluster) Source(tb testing.TB) *SeenSource {
	src := &SeenSource{Source: kube.NewSource(k.Client, kube.Options{}, nil, testkit.Logger(tb))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = src.Source.Run(ctx) }()
	tb.Cleanup(func() { cancel(); <-done })
	return src
}

// SeenSource passes the kube source through and keeps, for each change the
// engine takes, when an informer first saw it and when the engine took it,
// so a benchmark can measure from the one and match the applied event
// that follows the other.
type SeenSource struct {
	*kube.Source
	mu   sync.Mutex
	seen []seenChange
}

type seenChange struct{ seen, taken time.Time }

func (s *SeenSource) Desired() (dcm.Desired, time.Time) {
	d, seen := s.Source.Desired()
	if !seen.IsZero() {
		s.mu.Lock()
		s.seen = append(s.seen, seenChange{seen: seen, taken: time.Now()})
		s.mu.Unlock()
	}
	return d, seen
}

// Forget drops the changes taken so far.
func (s *SeenSource) Forget() {
	s.mu.Lock()
	s.seen = nil
	s.mu.Unlock()
}

// acknowledged removes and returns the informer times of the changes the
// engine took before an event published at t: the changes that event
// acknowledges. A sync publishes its event after it took its change, so an
// event of an earlier sync (a server deleted once idle) that the reader
// receives late acknowledges nothing taken after it.
func (s *SeenSource) acknowledged(t time.Time) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	keep := s.seen[:0]
	for _, c := range s.seen {
		if c.taken.After(t) {
			keep = append(keep, c)
			continue
		}
		out = append(out, c.seen)
	}
	s.seen = keep
	return out
}

// acknowledges reports whether an engine event says HAProxy has the state
// of a sync: its ops applied, or a reload done.
func acknowledges(ev *dcm.Event) bool {
	return ev.Type == dcm.EventApplied || (ev.Type == dcm.EventReload && ev.Reload != nil && ev.Reload.Error == "")
}

// errNoAck is a change HAProxy did not acknowledge in time.
var errNoAck = errors.New("not acknowledged within 30s")

// EventToHAProxy makes n endpoint changes, one after the other, and returns
// for each the time from an informer seeing it to the engine's event that
// HAProxy acknowledged it (dcm_event_to_applied_seconds, seen from outside).
// Change i takes endpoint 0 of route (i % routes) out of its slice on the
// first pass over the routes and puts it back on the second.
func (k *KubeCluster) EventToHAProxy(ctx context.Context, e *engine.Engine, src *SeenSource, routes, n int) ([]time.Duration, error) {
	_, _, sub := e.Hub().Subscribe(e.Hub().Seq(), 1000)
	defer sub.Close()
	src.Forget()
	latencies := make([]time.Duration, 0, n)
	for i := range n {
		r := i % routes
		if err := k.SetFirstReady(ctx, r, i/routes%2 == 1); err != nil {
			return latencies, err
		}
		deadline := time.After(30 * time.Second)
		for acked := false; !acked; {
			select {
			case ev := <-sub.C:
				if !acknowledges(ev) {
					continue
				}
				for _, seen := range src.acknowledged(ev.Time) {
					latencies = append(latencies, ev.Time.Sub(seen))
					acked = true
				}
			case <-sub.Done():
				return latencies, fmt.Errorf("change %d: the engine's hub dropped the subscription: %s", i, sub.Reason())
			case <-deadline:
				return latencies, fmt.Errorf("change %d (%s): %w", i, KubeName(r), errNoAck)
			}
		}
	}
	return latencies, nil
}
