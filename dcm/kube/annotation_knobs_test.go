package kube

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestIngressServerKnobs: dcm.io/pod-concurrent-connections and
// dcm.io/health-check-interval give an Ingress's routes what OpenShift's
// knobs give a Route's; a bad value, or an interval of checks turned off,
// is refused.
func TestIngressServerKnobs(t *testing.T) {
	ingress := func(ann map[string]string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: ann},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{httpRule("w.example.com", httpPath("/", prefix, svcBackend("web", "http")))}}}
	}
	routes, err := IngressRoutes(ingress(map[string]string{AnnotationMaxConn: "20", AnnotationCheckInterval: "2s"}))
	if err != nil || len(routes) != 1 || routes[0].MaxConn != 20 || routes[0].CheckInterMillis != 2000 {
		t.Fatalf("knobs: %+v %v, want maxconn 20 and a 2000 ms interval", routes, err)
	}
	for name, ann := range map[string]map[string]string{
		"negative maxconn":         {AnnotationMaxConn: "-1"},
		"maxconn not a number":     {AnnotationMaxConn: "ten"},
		"bad interval":             {AnnotationCheckInterval: "2 s"},
		"interval with checks off": {AnnotationCheckInterval: "2s", AnnotationHealthCheck: "false"},
		"maxconn over the table's": {AnnotationMaxConn: "100000000"},
	} {
		if _, err := IngressRoutes(ingress(ann)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
