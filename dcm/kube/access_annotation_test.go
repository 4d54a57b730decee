package kube

import (
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
)

// TestIngressAllowlist: dcm.io/allowlist-source-range reaches every route
// of the Ingress, canonical, commas or spaces between entries; a bad
// entry refuses the Ingress on the annotation.
func TestIngressAllowlist(t *testing.T) {
	spec := networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
		httpRule("a.example.com", httpPath("/", prefix, svcBackend("web", "http")), httpPath("/api", prefix, svcBackend("api", "http")))}}
	for _, tt := range []struct {
		value string
		want  []string
	}{
		{"10.0.0.0/8, 192.168.1.10", []string{"10.0.0.0/8", "192.168.1.10"}},
		{"fd00::1/64 127.0.0.2,127.0.0.2", []string{"127.0.0.2", "fd00::/64"}},
		{"", nil},
	} {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web",
			Annotations: map[string]string{AnnotationAllowlist: tt.value}}, Spec: spec}
		routes, err := IngressRoutes(ing)
		if err != nil {
			t.Fatalf("%q: %v", tt.value, err)
		}
		for _, r := range routes {
			if !slices.Equal(r.Allowlist, tt.want) {
				t.Errorf("%q: route %s has %q, want %q", tt.value, r.Key(), r.Allowlist, tt.want)
			}
		}
	}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web",
		Annotations: map[string]string{AnnotationAllowlist: "10.0.0.0/8,example.com"}}, Spec: spec}
	_, err := IngressRoutes(ing)
	checkRefusal(t, err, dcm.RejectInvalidValue, annotationField(AnnotationAllowlist))
}

// TestIngressRateLimit: dcm.io/rate-limit-connections and its limits
// reach every route of the Ingress; a limit without the switch refuses it.
func TestIngressRateLimit(t *testing.T) {
	spec := networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{httpRule("a.example.com", httpPath("/", prefix, svcBackend("web", "http")))}}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{
		AnnotationRateLimit: "true", AnnotationRateConcurrent: "7", AnnotationRateTCP: "8"}}, Spec: spec}
	routes, err := IngressRoutes(ing)
	if err != nil {
		t.Fatal(err)
	}
	if l := routes[0].RateLimit; l == nil || *l != (dcm.RateLimit{ConcurrentTCP: 7, RateTCP: 8}) || routes[0].RateLimitValue() != "7:8:" {
		t.Errorf("rate limit %+v", l)
	}
	ing.Annotations = map[string]string{AnnotationRateHTTP: "5"}
	_, err = IngressRoutes(ing)
	checkRefusal(t, err, dcm.RejectUnsupported, annotationField(AnnotationRateHTTP))
}
