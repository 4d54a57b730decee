package kube

import (
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
)

func weightedIngress(weights string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{AnnotationWeights: weights}},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{httpRule("web.example.com",
			httpPath("/", prefix, svcBackend("web", "http")),
			httpPath("/other", prefix, svcBackend("other", "http")))}},
	}
}

func TestIngressRoutesWeights(t *testing.T) {
	routes, err := IngressRoutes(weightedIngress("web=80, canary=20"))
	if err != nil {
		t.Fatal(err)
	}
	var got [][]dcm.ServiceRef
	for _, r := range routes {
		got = append(got, r.Services)
	}
	slices.SortFunc(got, func(a, b []dcm.ServiceRef) int { return len(a) - len(b) })
	want := [][]dcm.ServiceRef{
		{{Name: "other", Port: "http", Weight: 1}},
		{{Name: "web", Port: "http", Weight: 80}, {Name: "canary", Port: "http", Weight: 20}},
	}
	if len(got) != 2 || !slices.Equal(got[0], want[0]) || !slices.Equal(got[1], want[1]) {
		t.Errorf("services %v, want %v", got, want)
	}
}

func TestIngressRoutesWeightsRejected(t *testing.T) {
	const field = "metadata.annotations[" + AnnotationWeights + "]"
	for _, tc := range []struct{ value, reason string }{
		{"", dcm.RejectInvalidValue},
		{"web", dcm.RejectInvalidValue},
		{"web=80,canary", dcm.RejectInvalidValue},
		{"web=257,canary=20", dcm.RejectInvalidValue},
		{"web=-1,canary=20", dcm.RejectInvalidValue},
		{"web=080,canary=20", dcm.RejectInvalidValue},
		{"web=1e2,canary=20", dcm.RejectInvalidValue},
		{"web=80,Canary=20", dcm.RejectInvalidName},
		{"web=80,can ary=20", dcm.RejectInvalidName},
		{"web=80,canary=20;", dcm.RejectInvalidValue},
		{"web=80,web=20", dcm.RejectConflict},
		{"web=1,a=1,b=1,c=1,d=1", dcm.RejectUnsupported},
		{"canary=20,web=80", dcm.RejectInvalidValue}, // no path routes to the primary
	} {
		t.Run(tc.value, func(t *testing.T) {
			_, err := IngressRoutes(weightedIngress(tc.value))
			checkRefusal(t, err, tc.reason, field)
		})
	}
}

// TestBackendForWeights: the servers of a split route carry weights that
// keep the services' shares as pods come and go; pods that are not ready
// do not count, and a pod in both services is served once, as the primary's.
func TestBackendForWeights(t *testing.T) {
	r := dcm.Route{Namespace: "demo", Name: "web", Kind: dcm.KindHTTP, Services: []dcm.ServiceRef{
		{Name: "web", Port: "http", Weight: 80}, {Name: "canary", Port: "http", Weight: 20}}}
	view := func(eps ...epSpec) *serviceView {
		return &serviceView{svc: service("x", v4, httpPort), slices: []*discoveryv1.EndpointSlice{
			slice("x-a", discoveryv1.AddressTypeIPv4, map[string]int32{"http": 8080}, eps...)}}
	}
	notReady := epSpec{pod: "web-9", addr: "10.0.0.9", ready: ptr(false)}
	b := backendFor(r, []*serviceView{
		view(ready("web-1", "10.0.0.1"), ready("web-2", "10.0.0.2"), ready("web-3", "10.0.0.3"), notReady),
		view(ready("canary-1", "10.0.1.1"), ready("web-1", "10.0.0.1")),
	})
	weights := map[string]int{}
	for _, e := range b.Endpoints {
		weights[e.Pod] = e.Weight
	}
	// web: 80/3 per pod, canary: 20/1 (web-1 counts once, for web):
	// 26.67 : 20 = 4 : 3.
	want := map[string]int{"web-1": 256, "web-2": 256, "web-3": 256, "web-9": 256, "canary-1": 192}
	if len(weights) != len(want) {
		t.Fatalf("endpoints %v, want %v", weights, want)
	}
	for pod, w := range want {
		if weights[pod] != w {
			t.Errorf("%s: weight %d, want %d (all: %v)", pod, weights[pod], w, weights)
		}
	}
	if !slices.IsSortedFunc(b.Endpoints, func(a, b dcm.Endpoint) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("endpoints not sorted by name")
	}
}

func TestIngressRoutesSticky(t *testing.T) {
	for _, tc := range []struct {
		value  string
		sticky bool
	}{{"true", true}, {"false", false}} {
		ing := weightedIngress("web=1")
		ing.Annotations[AnnotationSticky] = tc.value
		routes, err := IngressRoutes(ing)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range routes {
			if r.Sticky != tc.sticky {
				t.Errorf("%s=%q: route %s sticky %v", AnnotationSticky, tc.value, r.Name, r.Sticky)
			}
		}
	}
	ing := weightedIngress("web=1")
	ing.Annotations[AnnotationSticky] = "yes please"
	_, err := IngressRoutes(ing)
	checkRefusal(t, err, dcm.RejectInvalidValue, "metadata.annotations["+AnnotationSticky+"]")
}
