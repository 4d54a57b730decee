package kube

import (
	"errors"
	"strings"
	"testing"

	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestExternalCertConversion: spec.tls.externalCertificate names a Secret
// of the Route's namespace; with certificate or key it is refused as the
// Route CRD refuses it, on passthrough too, and a name that is no Secret
// name never reaches HAProxy.
func TestExternalCertConversion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tls    map[string]any
		secret string // want this TLS Secret
		field  string // want an error on this field
		reason string
	}{
		{"edge", map[string]any{"termination": "edge", "externalCertificate": map[string]any{"name": "web-tls"}}, "demo/web-tls", "", ""},
		{"reencrypt", map[string]any{"termination": "reencrypt", "destinationCACertificate": "", "externalCertificate": map[string]any{"name": "web-tls"}}, "demo/web-tls", "", ""},
		{"with certificate", map[string]any{"termination": "edge", "certificate": "x", "externalCertificate": map[string]any{"name": "web-tls"}}, "", "spec.tls.externalCertificate", dcm.RejectInvalidValue},
		{"with key", map[string]any{"termination": "edge", "key": "x", "externalCertificate": map[string]any{"name": "web-tls"}}, "", "spec.tls.externalCertificate", dcm.RejectInvalidValue},
		{"with caCertificate", map[string]any{"termination": "edge", "caCertificate": "x", "externalCertificate": map[string]any{"name": "web-tls"}}, "", "spec.tls.caCertificate", dcm.RejectUnsupported},
		{"passthrough", map[string]any{"termination": "passthrough", "externalCertificate": map[string]any{"name": "web-tls"}}, "", "spec.tls.externalCertificate", dcm.RejectInvalidValue},
		{"no name", map[string]any{"termination": "edge", "externalCertificate": map[string]any{}}, "", "spec.tls.externalCertificate.name", dcm.RejectInvalidValue},
		{"hostile name", map[string]any{"termination": "edge", "externalCertificate": map[string]any{"name": "x\nshow info"}}, "", "spec.tls.externalCertificate.name", dcm.RejectInvalidName},
		{"other namespace", map[string]any{"termination": "edge", "externalCertificate": map[string]any{"name": "other/web-tls"}}, "", "spec.tls.externalCertificate.name", dcm.RejectInvalidName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := RouteFromOpenShift(osRoute("web", "x.example.com", func(sp map[string]any) { sp["tls"] = tc.tls }), RouteOptions{})
			if tc.field == "" {
				if err != nil || c.Route.TLS == nil || c.Route.TLS.Secret != tc.secret || c.CertPEM != nil {
					t.Fatalf("route %+v (err %v), want the certificate of Secret %s", c.Route.TLS, err, tc.secret)
				}
				return
			}
			var ie *dcm.InvalidError
			if !errors.As(err, &ie) || ie.Field != tc.field || ie.Reason != tc.reason {
				t.Fatalf("err %v, want %s on %s", err, tc.reason, tc.field)
			}
		})
	}
}

// TestRouteSourceExternalCert follows an externalCertificate Route's
// Secret: missing (no servers, Admitted=False
// ExternalCertificateValidationFailed), valid (its version, admitted),
// invalid (the last valid version still served, not admitted), rotated
// (the new version, admitted again), deleted (no servers, not admitted).
func TestRouteSourceExternalCert(t *testing.T) {
	ca := testkit.NewCA(t)
	leaf1, leaf2 := ca.Leaf(t, "x.example.com"), ca.Leaf(t, "x.example.com")
	s, _, routes := routeSource(t, nil)
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	ls := s.listers[""]
	ls.secrets = corev1listers.NewSecretLister(secrets)
	s.listers[""] = ls
	_ = routes.Add(osRoute("web", "x.example.com", func(sp map[string]any) {
		sp["tls"] = map[string]any{"termination": "edge", "externalCertificate": map[string]any{"name": "web-tls"}}
	}))
	valid1, valid2 := tlsSecret("web-tls", leaf1.CertPEM, leaf1.KeyPEM), tlsSecret("web-tls", leaf2.CertPEM, leaf2.KeyPEM)
	_, v1, _ := SecretCert(valid1)
	_, v2, _ := SecretCert(valid2)
	ref := dcm.ObjectRef{Kind: KindRoute, Namespace: "demo", Name: "web"}

	for i, step := range []struct {
		name      string
		secret    any // nil: none
		version   string
		endpoints int
		message   string // "": admitted
	}{
		{"missing", nil, "", 0, "no kubernetes.io/tls Secret demo/web-tls"},
		{"valid", valid1, v1, 1, ""},
		{"invalid", tlsSecret("web-tls", leaf1.CertPEM, leaf2.KeyPEM), v1, 1, "its last valid certificate is still served"},
		{"rotated", valid2, v2, 1, ""},
		{"deleted", nil, "", 0, "the Route gets no servers (503)"},
	} {
		for _, o := range secrets.List() {
			_ = secrets.Delete(o)
		}
		if step.secret != nil {
			_ = secrets.Add(step.secret)
		}
		key := "secret/demo/web-tls"
		if i == 0 {
			key = "route/demo/web"
		}
		mustSync(t, s, key)
		b := backend(t, s, "be_edge:demo:route_web")
		if b.Route.TLS == nil || b.Route.TLS.Secret != "demo/web-tls" || b.Route.TLS.Version != step.version || len(b.Endpoints) != step.endpoints {
			t.Errorf("%s: tls %+v, %d endpoints; want version %q, %d endpoints", step.name, b.Route.TLS, len(b.Endpoints), step.version, step.endpoints)
		}
		var rej *dcm.Rejection
		for _, r := range s.Rejections() {
			if r.Object == ref {
				rej = &r
			}
		}
		switch {
		case step.message == "" && rej != nil:
			t.Errorf("%s: Route rejected: %+v", step.name, rej)
		case step.message != "" && (rej == nil || rej.Reason != ReasonExternalCertificate || !strings.Contains(rej.Message, step.message)):
			t.Errorf("%s: Route rejection %+v, want %s saying %q", step.name, rej, ReasonExternalCertificate, step.message)
		}
	}
}
