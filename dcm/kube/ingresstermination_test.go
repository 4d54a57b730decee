package kube

import (
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/dcm-router/dcm/dcm"
)

// route.openshift.io/termination on an Ingress makes its routes what
// route-controller-manager's Routes for it would be: edge and reencrypt
// for every host, with its spec.tls Secret or the default certificate,
// passthrough by SNI; plain HTTP redirected in each case.
func TestIngressTermination(t *testing.T) {
	tests := []struct {
		termination string
		tls         bool // the host is in spec.tls
		kind        dcm.RouteKind
		secret      string // the route's TLS.Secret
	}{
		{"edge", true, dcm.KindEdge, "demo/web-tls"},
		{"edge", false, dcm.KindEdge, dcm.RouteCertRef("demo", "")},
		{"reencrypt", true, dcm.KindReencrypt, "demo/web-tls"},
		{"reencrypt", false, dcm.KindReencrypt, dcm.RouteCertRef("demo", "")},
		{"passthrough", false, dcm.KindPassthrough, ""},
	}
	for _, tt := range tests {
		t.Run(tt.termination+map[bool]string{true: " with spec.tls", false: ""}[tt.tls], func(t *testing.T) {
			ing := testIngress("web", "web.example.com", time.Now(), httpPath("/", prefix, svcBackend("web", "http")))
			ing.Annotations = map[string]string{AnnotationIngressTermination: tt.termination}
			if tt.tls {
				ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"web.example.com"}, SecretName: "web-tls"}}
			}
			routes, err := IngressRoutes(ing)
			if err != nil || len(routes) != 1 {
				t.Fatalf("routes %+v, %v", routes, err)
			}
			r := routes[0]
			secret := ""
			if r.TLS != nil {
				secret = r.TLS.Secret
				if tt.secret == dcm.RouteCertRef("demo", "") {
					tt.secret = dcm.RouteCertRef("demo", r.Name)
				}
			}
			if r.Kind != tt.kind || secret != tt.secret || r.Insecure != dcm.InsecureRedirect {
				t.Errorf("kind %s, secret %q, insecure %q; want %s, %q, Redirect", r.Kind, secret, r.Insecure, tt.kind, tt.secret)
			}
			if tt.kind == dcm.KindReencrypt && (r.Upstream == nil || r.Upstream.CA != CADefault) {
				t.Errorf("upstream %+v, want the default CA", r.Upstream)
			}
		})
	}
	ing := testIngress("web", "web.example.com", time.Now(), httpPath("/", prefix, svcBackend("web", "http")))
	ing.Annotations = map[string]string{AnnotationIngressDestinationCA: "dest-ca"}
	if _, err := IngressRoutes(ing); err == nil || RejectReason(err) != dcm.RejectUnsupported {
		t.Errorf("%s: %v, want it refused as unsupported", AnnotationIngressDestinationCA, err)
	}
}
