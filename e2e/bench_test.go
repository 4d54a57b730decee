package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// seenSource passes the kube source through and keeps the informer time of
// each change the engine takes, so a benchmark can measure from it.
type seenSource struct {
	*kube.Source
	mu   sync.Mutex
	seen []time.Time
}

func (s *seenSource) Desired() (dcm.Desired, time.Time) {
	d, seen := s.Source.Desired()
	if !seen.IsZero() {
		s.mu.Lock()
		s.seen = append(s.seen, seen)
		s.mu.Unlock()
	}
	return d, seen
}

func (s *seenSource) take() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.seen
	s.seen = nil
	return out
}

func benchObjects(routes, endpoints int) []runtime.Object {
	var objs []runtime.Object
	for r := range routes {
		name := fmt.Sprintf("app%04d", r)
		objs = append(objs,
			&corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name},
				Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
			},
			benchSlice(name, r, endpoints, true),
			&networkingv1.Ingress{
				// Health checks off: 10,000 servers at loopback addresses nothing
				// listens on need no probing.
				ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name, Annotations: map[string]string{kube.AnnotationHealthCheck: "false"}},
				Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
					Host: name + ".bench",
					IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
						Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: name, Port: networkingv1.ServiceBackendPort{Name: "http"}}},
					}}}},
				}}},
			})
	}
	return objs
}

func benchSlice(svc string, r, endpoints int, firstReady bool) *discoveryv1.EndpointSlice {
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "bench", Name: svc + "-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
	}
	for e := range endpoints {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			// Loopback (127.120–127.159 for 10,000 routes): HAProxy is never
			// handed an address outside the host.
			Addresses:  []string{fmt.Sprintf("127.%d.%d.%d", 120+r/250, r%250, e+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(e != 0 || firstReady)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "bench", Name: fmt.Sprintf("%s-%d", svc, e)},
		})
	}
	return sl
}

// BenchmarkEventToHAProxy1000Routes: one endpoint of one of 1,000 routes
// (10 endpoints each) changes; measured from the informer seeing the change
// to HAProxy acknowledging the runtime command, with the real binary.
func BenchmarkEventToHAProxy1000Routes(b *testing.B) { benchEventToHAProxy(b, 1000) }

// BenchmarkEventToHAProxy10000Routes is the same at 10,000 routes: the cost
// of one change must not grow with the cluster (issue 18's goal).
func BenchmarkEventToHAProxy10000Routes(b *testing.B) { benchEventToHAProxy(b, 10000) }

func benchEventToHAProxy(b *testing.B, routes int) {
	const endpoints = 10
	// The simple clientset: NewClientset's field management builds a REST
	// mapper for every Create (1.5 ms each, 50 s for 10,000 routes' 30,000
	// objects), and dcm reads no managed fields.
	client := fake.NewSimpleClientset(benchObjects(routes, endpoints)...)
	ctx := context.Background()
	log := testkit.Logger(b)
	src := &seenSource{Source: kube.NewSource(client, kube.Options{}, nil, log)}
	runCtx, cancel := context.WithCancel(ctx)
	srcDone := make(chan struct{})
	go func() { defer close(srcDone); _ = src.Source.Run(runCtx) }()
	b.Cleanup(func() { cancel(); <-srcDone })
	s := harness.Start(b, harness.Options{Source: src, Config: func(c *system.Config) { c.ObserveEvery = benchObserveEvery() }})
	pid := s.WorkerPID()
	_, _, sub := s.Engine.Hub().Subscribe(s.Engine.Hub().Seq(), 1000)
	defer sub.Close()
	src.take()

	var latencies []time.Duration
	b.ResetTimer()
	for i := range b.N {
		r := i % routes
		name := fmt.Sprintf("app%04d", r)
		ready := i/routes%2 == 1 // first pass takes endpoint 0 out, second puts it back
		if _, err := client.DiscoveryV1().EndpointSlices("bench").Update(ctx, benchSlice(name, r, endpoints, ready), metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		for applied := false; !applied; {
			select {
			case ev := <-sub.C:
				if ev.Type != dcm.EventApplied {
					continue
				}
				applied = true
				for _, seen := range src.take() {
					latencies = append(latencies, ev.Time.Sub(seen))
				}
			case <-time.After(30 * time.Second):
				b.Fatalf("change %d not applied within 30s", i)
			}
		}
	}
	b.StopTimer()
	if s.WorkerPID() != pid {
		b.Error("HAProxy reloaded during the benchmark")
	}
	slices.Sort(latencies)
	if len(latencies) == 0 {
		b.Fatal("no latency measured")
	}
	q := func(p float64) float64 {
		return float64(latencies[min(len(latencies)-1, int(p*float64(len(latencies))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(latencies[len(latencies)-1].Microseconds())/1000, "max-ms")
}

func benchObserveEvery() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("DCM_BENCH_OBSERVE")); err == nil {
		return d
	}
	return 10 * time.Second // the production default
}
