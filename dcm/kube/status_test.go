package kube

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
)

// The contention tracker takes back one change by someone else, backs off
// at the second within the window, tries again once the window has passed,
// and never counts its own write or a stale cache as contention.
func TestContention(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type step struct {
		write   bool   // dcm wrote want, making version
		version string // the object's version when dcm looks (or its write's)
		at      time.Duration
		want    time.Duration // hold's answer
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "first write", steps: []step{{version: "5", want: 0}}},
		{name: "one change by another is taken back", steps: []step{
			{write: true, version: "10"}, {version: "11", want: 0}}},
		{name: "a stale cache is not contention", steps: []step{
			{write: true, version: "10"}, {version: "9", want: 0}, {version: "9", want: 0}, {version: "9", want: 0}}},
		{name: "two changes within the window back off", steps: []step{
			{write: true, version: "10"}, {version: "11", want: 0},
			{write: true, version: "12"}, {version: "13", at: time.Second, want: time.Minute},
			{version: "13", at: 30 * time.Second, want: 31 * time.Second}}},
		{name: "after the window, writing again", steps: []step{
			{write: true, version: "10"}, {version: "11", want: 0},
			{write: true, version: "12"}, {version: "13", at: time.Second, want: time.Minute},
			{version: "13", at: time.Minute + 2*time.Second, want: 0}}},
		{name: "changes far apart are no fight", steps: []step{
			{write: true, version: "10"}, {version: "11", want: 0},
			{write: true, version: "12"}, {version: "13", at: 2 * time.Minute, want: 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newContention(time.Minute)
			for i, st := range tt.steps {
				now := t0.Add(st.at)
				if st.write {
					c.wrote("k", "mine", st.version, now)
					continue
				}
				if got := c.hold("k", "mine", st.version, now); got != st.want {
					t.Errorf("step %d: hold = %s, want %s", i, got, st.want)
				}
			}
		})
	}
}

// What dcm wants written changed (not what it wrote last): no contention.
func TestContentionNewWant(t *testing.T) {
	c := newContention(time.Minute)
	now := time.Unix(1000, 0)
	c.wrote("k", "old", "10", now)
	for v := range 5 {
		if got := c.hold("k", "new", string(rune('a'+v)), now); got != 0 {
			t.Fatalf("hold = %s for a new want", got)
		}
	}
}

func TestPublishedAddresses(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []networkingv1.IngressLoadBalancerIngress
	}{
		{"none", nil, []networkingv1.IngressLoadBalancerIngress{}},
		{"ip and hostname, sorted, deduplicated", []string{"lb.example.com", "192.0.2.1", "2001:db8::1", "192.0.2.1"},
			[]networkingv1.IngressLoadBalancerIngress{{Hostname: "lb.example.com"}, {IP: "192.0.2.1"}, {IP: "2001:db8::1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PublishedAddresses(tt.in); !sameLB(got, tt.want) || len(got) != len(tt.want) {
				t.Errorf("PublishedAddresses(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestServiceAddresses(t *testing.T) {
	lb := func(s *corev1.Service) *corev1.Service {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}, {Hostname: "elb.example.com"}}
		return s
	}
	tests := []struct {
		name string
		svc  *corev1.Service
		want []networkingv1.IngressLoadBalancerIngress
	}{
		{"load balancer wins", lb(&corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.5"}}),
			[]networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.7"}, {Hostname: "elb.example.com"}}},
		{"else its ClusterIPs", &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.5", ClusterIPs: []string{"10.0.0.5", "fd00::5"}}},
			[]networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.5"}, {IP: "fd00::5"}}},
		{"headless publishes nothing", &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}, nil},
		{"external name", &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "x.example.com"}},
			[]networkingv1.IngressLoadBalancerIngress{{Hostname: "x.example.com"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ServiceAddresses(tt.svc); !sameLB(got, tt.want) {
				t.Errorf("ServiceAddresses = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSameLB(t *testing.T) {
	a := []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}, {Hostname: "h"}}
	b := []networkingv1.IngressLoadBalancerIngress{{Hostname: "h", Ports: []networkingv1.IngressPortStatus{{Port: 80}}}, {IP: "192.0.2.1"}}
	if !sameLB(a, b) {
		t.Error("order and ports count")
	}
	if sameLB(a, a[:1]) || sameLB(nil, a) {
		t.Error("different lists are equal")
	}
	if !sameLB(nil, []networkingv1.IngressLoadBalancerIngress{}) {
		t.Error("nil and empty differ")
	}
}

// Ingress status: the published addresses on an Ingress dcm serves, no
// write when they are there already, cleared when the Ingress moves to
// another class; another controller's addresses are left alone; and a
// replica that does not lead writes nothing.
func TestWriteIngressStatus(t *testing.T) {
	ctx := t.Context()
	s, cl := newTestSource(t, Options{IngressClass: "dcm"}, nil)
	_ = cl.svc.Add(testService("web"))
	_ = cl.eps.Add(testSlice("web", "web-1", ready("web-0", "10.0.0.1")))
	class := func(ing *networkingv1.Ingress, c string) *networkingv1.Ingress {
		ing.Spec.IngressClassName = &c
		return ing
	}
	mine := class(testIngress("mine", "a.example.com", time.Now(), httpPath("/", prefix, svcBackend("web", "http"))), "dcm")
	other := class(testIngress("other", "b.example.com", time.Now(), httpPath("/", prefix, svcBackend("web", "http"))), "nginx")
	other.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "198.51.100.9"}}
	client := fake.NewClientset(mine, other)
	s.WriteIngressStatus(IngressStatusOptions{Client: client, Addresses: []string{"192.0.2.10", "lb.example.com"}})
	published := PublishedAddresses([]string{"192.0.2.10", "lb.example.com"})
	// The cache follows the API server, as the informer would.
	refresh := func(name string) {
		t.Helper()
		ing, err := client.NetworkingV1().Ingresses("demo").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = cl.ing.Update(ing)
		mustSync(t, s, "ingress/demo/"+name)
	}
	status := func(name string) []networkingv1.IngressLoadBalancerIngress {
		ing, err := client.NetworkingV1().Ingresses("demo").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ing.Status.LoadBalancer.Ingress
	}
	write := func(name string) {
		t.Helper()
		if err := s.writeIngressStatus(ctx, "demo/"+name); err != nil {
			t.Fatal(err)
		}
		refresh(name)
	}
	_ = cl.ing.Add(mine)
	_ = cl.ing.Add(other)
	mustSync(t, s, "ingress/demo/mine")
	mustSync(t, s, "ingress/demo/other")

	steps := []struct {
		name       string
		do         func()
		ingress    string
		want       []networkingv1.IngressLoadBalancerIngress
		wantWrites int64
	}{
		{"not leading: nothing", func() {}, "mine", nil, 0},
		{"leading: published", func() { s.leading.Store(true) }, "mine", published, 1},
		{"already equal: no write", func() {}, "mine", published, 1},
		{"another class's addresses are left alone", func() {}, "other", []networkingv1.IngressLoadBalancerIngress{{IP: "198.51.100.9"}}, 1},
		{"class changed: cleared", func() {
			ing, _ := client.NetworkingV1().Ingresses("demo").Get(ctx, "mine", metav1.GetOptions{})
			_, _ = client.NetworkingV1().Ingresses("demo").Update(ctx, class(ing, "nginx"), metav1.UpdateOptions{})
			refresh("mine")
		}, "mine", nil, 2},
		{"cleared once", func() {}, "mine", nil, 2},
	}
	for _, st := range steps {
		st.do()
		write(st.ingress)
		if got := status(st.ingress); !sameLB(got, st.want) {
			t.Errorf("%s: status %v, want %v", st.name, got, st.want)
		}
		if got := s.StatusWrites(); got != st.wantWrites {
			t.Errorf("%s: %d writes, want %d", st.name, got, st.wantWrites)
		}
	}
}

// An Ingress relabelled out of the shard leaves the cache (the informer's
// selector) as a delete: its published addresses are cleared all the same.
func TestIngressStatusLeavesShard(t *testing.T) {
	ctx := t.Context()
	s, cl := newTestSource(t, Options{RouteSelector: labels.SelectorFromSet(labels.Set{"shard": "a"})}, nil)
	_ = cl.svc.Add(testService("web"))
	_ = cl.eps.Add(testSlice("web", "web-1", ready("web-0", "10.0.0.1")))
	ing := testIngress("web", "a.example.com", time.Now(), httpPath("/", prefix, svcBackend("web", "http")))
	ing.Labels = map[string]string{"shard": "a"}
	client := fake.NewClientset(ing)
	s.WriteIngressStatus(IngressStatusOptions{Client: client, Addresses: []string{"192.0.2.10"}})
	s.leading.Store(true)
	_ = cl.ing.Add(ing)
	mustSync(t, s, "ingress/demo/web")
	if err := s.writeIngressStatus(ctx, "demo/web"); err != nil {
		t.Fatal(err)
	}
	got, err := client.NetworkingV1().Ingresses("demo").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || len(got.Status.LoadBalancer.Ingress) != 1 {
		t.Fatalf("published: %v %v", got.Status.LoadBalancer.Ingress, err)
	}
	// Relabelled: the API server's watch sends a delete with the new object.
	got.Labels = map[string]string{"shard": "b"}
	if got, err = client.NetworkingV1().Ingresses("demo").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = cl.ing.Delete(ing)
	s.ingressGone(got)
	mustSync(t, s, "ingress/demo/web")
	if err := s.writeIngressStatus(ctx, "demo/web"); err != nil {
		t.Fatal(err)
	}
	got, err = client.NetworkingV1().Ingresses("demo").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || len(got.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("not cleared: %v %v", got.Status.LoadBalancer.Ingress, err)
	}
	if w := s.StatusWrites(); w != 2 {
		t.Errorf("%d writes, want 2", w)
	}
}

// Two replicas on one Lease (client-go's fake keeps it): exactly one
// leads; when it stops, it releases the Lease and the other leads.
func TestElectLeader(t *testing.T) {
	client := fake.NewClientset()
	var srcs []*Source
	var cancels []context.CancelFunc
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range 2 {
		s := newSource(Options{}, nil, nil)
		err := s.ElectLeader(ElectionOptions{Client: client, Namespace: "dcm-system", Name: LeaseName(DefaultRouterName),
			Identity: fmt.Sprint("replica-", i), LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		srcs, cancels = append(srcs, s), append(cancels, cancel)
		wg.Go(func() { s.runElection(ctx) })
	}
	leaders := func() []int {
		var out []int
		for i, s := range srcs {
			if s.Leading() {
				out = append(out, i)
			}
		}
		return out
	}
	waitFor := func(what string, ok func([]int) bool) []int {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok(leaders()) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: leaders %v", what, leaders())
			}
			time.Sleep(20 * time.Millisecond)
		}
		return leaders()
	}
	first := waitFor("one leader", func(l []int) bool { return len(l) == 1 })[0]
	time.Sleep(300 * time.Millisecond)
	if l := leaders(); len(l) != 1 {
		t.Fatalf("leaders %v", l)
	}
	cancels[first]()
	waitFor("the other leads", func(l []int) bool { return len(l) == 1 && l[0] != first })
}
