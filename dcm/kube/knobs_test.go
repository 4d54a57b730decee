package kube

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRewriteTargetAnnotations: the Route's and the Ingress's
// rewrite-target become the route's HTTP.RewriteTarget; a target that is
// no path, or one on a passthrough Route, is refused.
func TestRewriteTargetAnnotations(t *testing.T) {
	route := func(tls string, target string) (string, error) {
		u := osRoute("web", "web.example.com", func(spec map[string]any) {
			spec["path"] = "/foo"
			if tls != "" {
				spec["tls"] = map[string]any{"termination": tls}
				if tls == "passthrough" {
					delete(spec, "path")
				}
			}
		})
		u.Object["metadata"].(map[string]any)["annotations"] = map[string]any{AnnotationRouteRewriteTarget: target}
		c, err := RouteFromOpenShift(u, RouteOptions{})
		return c.Route.HTTP.RewriteTarget, err
	}
	for _, c := range []struct{ tls, target string }{{"", "/"}, {"edge", "/v2/api"}, {"", "/a%20b"}} {
		if got, err := route(c.tls, c.target); err != nil || got != c.target {
			t.Errorf("%q on %q: %q, %v", c.target, c.tls, got, err)
		}
	}
	for _, c := range []struct{ tls, target string }{
		{"", "v2"}, {"", `/a\1`}, {"", "/a#x"}, {"", "/a b"}, {"", "/a'b"}, {"", ""}, {"passthrough", "/"},
	} {
		if _, err := route(c.tls, c.target); err == nil {
			t.Errorf("%q on %q: accepted", c.target, c.tls)
		}
	}

	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{
		AnnotationRewriteTarget: "/"}},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{httpRule("s.example.com", httpPath("/api", prefix, svcBackend("web", "http")))}}}
	routes, err := IngressRoutes(ing)
	if err != nil || len(routes) != 1 || routes[0].HTTP.RewriteTarget != "/" {
		t.Fatalf("Ingress: %+v, %v", routes, err)
	}
	ing.Annotations = map[string]string{AnnotationSSLPassthrough: "true", AnnotationRewriteTarget: "/"}
	ing.Spec.Rules[0].HTTP.Paths[0].Path = "/"
	if _, err := IngressRoutes(ing); err == nil {
		t.Error("a passthrough Ingress with a rewrite target accepted")
	}
}

// TestMaxConnAnnotation: pod-concurrent-connections becomes the Route's
// MaxConn; what is not a count of connections is refused.
func TestMaxConnAnnotation(t *testing.T) {
	route := func(v string) (int, error) {
		u := osRoute("web", "web.example.com", nil)
		u.Object["metadata"].(map[string]any)["annotations"] = map[string]any{AnnotationRouteMaxConn: v}
		c, err := RouteFromOpenShift(u, RouteOptions{})
		return c.Route.MaxConn, err
	}
	for v, want := range map[string]int{"100": 100, "1": 1, "0": 0, "1000000": 1000000} {
		if got, err := route(v); err != nil || got != want {
			t.Errorf("%q: %d, %v", v, got, err)
		}
	}
	for _, v := range []string{"-1", "+5", "05", "1000001", "5 ", "ten", ""} {
		if _, err := route(v); err == nil {
			t.Errorf("%q: accepted", v)
		}
	}
}

// TestCheckIntervalAnnotation: haproxy.health.check.interval becomes the
// Route's CheckInterMillis, in OpenShift's units; what is no duration is
// refused.
func TestCheckIntervalAnnotation(t *testing.T) {
	route := func(v string) (int64, error) {
		u := osRoute("web", "web.example.com", nil)
		u.Object["metadata"].(map[string]any)["annotations"] = map[string]any{AnnotationRouteCheckInterval: v}
		c, err := RouteFromOpenShift(u, RouteOptions{})
		return c.Route.CheckInterMillis, err
	}
	for v, want := range map[string]int64{"2s": 2000, "250ms": 250, "1500": 1500, "1m": 60000, "1h": 3600000, "1d": 86400000, "1500us": 2} {
		if got, err := route(v); err != nil || got != want {
			t.Errorf("%q: %d, %v", v, got, err)
		}
	}
	for _, v := range []string{"0", "-1s", "2 s", "2sec", "s", "", "1y"} {
		if _, err := route(v); err == nil {
			t.Errorf("%q: accepted", v)
		}
	}
}
