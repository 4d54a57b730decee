package kube

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
)

// TestHTTPOptionAnnotations: the Route and Ingress annotations of the
// HTTP options become the route's dcm.HTTPOptions, normalised; what a
// route's kind cannot have is refused.
func TestHTTPOptionAnnotations(t *testing.T) {
	edge := func(spec map[string]any) { spec["tls"] = map[string]any{"termination": "edge"} }
	passthrough := func(spec map[string]any) { spec["tls"] = map[string]any{"termination": "passthrough"} }
	route := func(edit func(map[string]any), ann map[string]string) (dcm.Route, error) {
		u := osRoute("web", "web.example.com", edit)
		a := map[string]any{}
		for k, v := range ann {
			a[k] = v
		}
		u.Object["metadata"].(map[string]any)["annotations"] = a
		c, err := RouteFromOpenShift(u, RouteOptions{})
		return c.Route, err
	}
	r, err := route(edge, map[string]string{AnnotationRouteForwarded: "if-none", AnnotationRouteTimeout: "2s",
		AnnotationRouteTimeoutTunnel: "1h", AnnotationRouteHSTS: "max-age=100; includeSubDomains"})
	want := dcm.HTTPOptions{Forwarded: dcm.ForwardIfNone, TimeoutMillis: 2000, TunnelMillis: 3600000, HSTS: "max-age=100;includeSubDomains"}
	if err != nil || r.HTTP != want {
		t.Errorf("edge Route: %+v, %v; want %+v", r.HTTP, err, want)
	}
	for name, c := range map[string]struct {
		edit func(map[string]any)
		ann  map[string]string
	}{
		"hsts on a plain Route":       {nil, map[string]string{AnnotationRouteHSTS: "max-age=1"}},
		"forwarded on passthrough":    {passthrough, map[string]string{AnnotationRouteForwarded: "never"}},
		"bad policy":                  {nil, map[string]string{AnnotationRouteForwarded: "sometimes"}},
		"bad timeout":                 {nil, map[string]string{AnnotationRouteTimeout: "1 s"}},
		"hsts with another directive": {edge, map[string]string{AnnotationRouteHSTS: "max-age=1;report-uri=x"}},
	} {
		if _, err := route(c.edit, c.ann); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}

	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{
		AnnotationForwardedHeaders: "never", AnnotationTimeout: "500", AnnotationHSTS: "max-age=5"}},
		Spec: networkingv1.IngressSpec{TLS: []networkingv1.IngressTLS{{Hosts: []string{"s.example.com"}, SecretName: "s-tls"}},
			Rules: []networkingv1.IngressRule{httpRule("s.example.com", httpPath("/", prefix, svcBackend("web", "http"))),
				httpRule("p.example.com", httpPath("/", prefix, svcBackend("web", "http")))}}}
	routes, err := IngressRoutes(ing)
	if err != nil || len(routes) != 2 {
		t.Fatalf("Ingress: %v, %v", routes, err)
	}
	for _, r := range routes {
		want := dcm.HTTPOptions{Forwarded: dcm.ForwardNever, TimeoutMillis: 500}
		if r.Kind == dcm.KindEdge {
			want.HSTS = "max-age=5"
		}
		if r.HTTP != want {
			t.Errorf("Ingress route %s (%s): %+v, want %+v", r.Host, r.Kind, r.HTTP, want)
		}
	}
	ing.Annotations = map[string]string{AnnotationSSLPassthrough: "true", AnnotationHSTS: "max-age=1"}
	ing.Spec.TLS = nil
	if _, err := IngressRoutes(ing); err == nil {
		t.Error("a passthrough Ingress with HSTS accepted")
	}
	ing.Annotations = map[string]string{AnnotationSSLPassthrough: "true", AnnotationTimeoutTunnel: "1h"}
	if routes, err := IngressRoutes(ing); err != nil || routes[0].HTTP.TunnelMillis != 3600000 {
		t.Errorf("a passthrough Ingress with a tunnel timeout: %+v %v", routes, err)
	}
	if _, err := route(passthrough, map[string]string{AnnotationRouteTimeout: "5s"}); err != nil {
		t.Errorf("a passthrough Route with a timeout: %v", err)
	}
}
