package kube

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

func caSecret(name string, ca []byte) *corev1.Secret {
	s := tlsSecret(name, nil, nil)
	s.Data = map[string][]byte{CAKey: ca}
	return s
}

// TestIngressReencrypt: the reencrypt annotations make the hosts of
// spec.tls reencrypt routes with the CA's source and the server name
// (<service>.<namespace>.svc by default); whatever cannot be served so is
// refused with the field that says why.
func TestIngressReencrypt(t *testing.T) {
	tls := networkingv1.IngressTLS{Hosts: []string{"a.example", "b.example"}, SecretName: "a-tls"}
	for name, tt := range map[string]struct {
		annotations map[string]string
		want        dcm.UpstreamTLS
	}{
		"backend-ca":      {map[string]string{AnnotationBackendCA: "web-ca"}, dcm.UpstreamTLS{CA: "secret:demo/web-ca", ServerName: "web.demo.svc"}},
		"reencrypt alone": {map[string]string{AnnotationReencrypt: "true"}, dcm.UpstreamTLS{CA: CADefault, ServerName: "web.demo.svc"}},
		"server name": {map[string]string{AnnotationReencrypt: "true", AnnotationBackendCA: "web-ca", AnnotationBackendServerName: "pods.internal"},
			dcm.UpstreamTLS{CA: "secret:demo/web-ca", ServerName: "pods.internal"}},
	} {
		ing := tlsIngress(tls)
		ing.Annotations = tt.annotations
		routes, err := IngressRoutes(ing)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(routes) != 3 {
			t.Fatalf("%s: %d routes", name, len(routes))
		}
		for _, r := range routes {
			if r.Kind != dcm.KindReencrypt || r.TLS == nil || r.TLS.Secret != "demo/a-tls" || r.Upstream == nil || *r.Upstream != tt.want {
				t.Errorf("%s: route %s: kind %s, tls %+v, upstream %+v; want reencrypt with %+v", name, r.HostPath(), r.Kind, r.TLS, r.Upstream, tt.want)
			}
			if !strings.HasPrefix(r.BackendName(), "be_reencrypt:demo:") {
				t.Errorf("%s: backend %s", name, r.BackendName())
			}
		}
	}

	weighted := map[string]string{AnnotationBackendCA: "web-ca", AnnotationWeights: "web=50,canary=50"}
	for name, tt := range map[string]struct {
		annotations map[string]string
		tls         []networkingv1.IngressTLS
		reason      string
		field       string
	}{
		"host without tls":     {map[string]string{AnnotationBackendCA: "web-ca"}, []networkingv1.IngressTLS{{Hosts: []string{"a.example"}, SecretName: "a-tls"}}, dcm.RejectUnsupported, "spec.rules[1].http.paths[0]"},
		"not a bool":           {map[string]string{AnnotationReencrypt: "yes please"}, []networkingv1.IngressTLS{tls}, dcm.RejectInvalidValue, "metadata.annotations[" + AnnotationReencrypt + "]"},
		"hostile CA name":      {map[string]string{AnnotationBackendCA: "web-ca verify none"}, []networkingv1.IngressTLS{tls}, dcm.RejectInvalidName, "metadata.annotations[" + AnnotationBackendCA + "]"},
		"hostile server name":  {map[string]string{AnnotationBackendCA: "web-ca", AnnotationBackendServerName: "web) verify none"}, []networkingv1.IngressTLS{tls}, dcm.RejectInvalidHost, "metadata.annotations[" + AnnotationBackendServerName + "]"},
		"wildcard server name": {map[string]string{AnnotationBackendCA: "web-ca", AnnotationBackendServerName: "*.demo.svc"}, []networkingv1.IngressTLS{tls}, dcm.RejectUnsupported, "metadata.annotations[" + AnnotationBackendServerName + "]"},
		"server name alone":    {map[string]string{AnnotationBackendServerName: "web.demo.svc"}, []networkingv1.IngressTLS{tls}, dcm.RejectUnsupported, "metadata.annotations[" + AnnotationBackendServerName + "]"},
		"with passthrough":     {map[string]string{AnnotationBackendCA: "web-ca", AnnotationSSLPassthrough: "true"}, nil, dcm.RejectUnsupported, "metadata.annotations[" + AnnotationReencrypt + "]"},
		"weights, no name":     {weighted, []networkingv1.IngressTLS{tls}, dcm.RejectUnsupported, "metadata.annotations[" + AnnotationWeights + "]"},
	} {
		ing := tlsIngress(tt.tls...)
		ing.Annotations = tt.annotations
		_, err := IngressRoutes(ing)
		var ie *dcm.InvalidError
		if err == nil || !asInvalid(err, &ie) || ie.Reason != tt.reason || ie.Field != tt.field {
			t.Errorf("%s: %v, want %s at %s", name, err, tt.reason, tt.field)
		}
	}
}

// TestParseCA: CA certificates only; a leaf, a key, garbage or nothing is
// refused with a reason.
func TestParseCA(t *testing.T) {
	ca, other := testkit.NewCA(t), testkit.NewCA(t)
	v1, err := ParseCA(ca.CertPEM())
	if err != nil || dcm.ValidateCertVersion("v", v1) != nil || v1 == "" {
		t.Fatalf("CA: %q, %v", v1, err)
	}
	if v2, err := ParseCA(append(ca.CertPEM(), other.CertPEM()...)); err != nil || v2 == v1 {
		t.Errorf("bundle: %q (one CA %q), %v", v2, v1, err)
	}
	leaf := ca.Leaf(t, "web.demo.svc")
	for name, b := range map[string][]byte{
		"leaf":    leaf.CertPEM,
		"key":     leaf.KeyPEM,
		"CA+key":  append(ca.CertPEM(), leaf.KeyPEM...),
		"garbage": []byte("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"),
		"not PEM": []byte("hello"),
		"empty":   nil,
	} {
		if _, err := ParseCA(b); err == nil || RejectReason(err) != dcm.RejectInvalidValue {
			t.Errorf("%s: %v", name, err)
		} else if strings.Contains(RejectMessage(err), string(leaf.KeyPEM[30:60])) {
			t.Errorf("%s: the message quotes the key", name)
		}
	}
}

// TestSourceReencrypt: the Source gives a reencrypt route its CA's version
// from the Secret's ca.crt and names its servers after it, so a rotation
// renames them; an invalid CA is rejected and the last valid one stays; a
// missing one leaves the route without servers; the default CA serves
// routes that name none, and without it such an Ingress is rejected.
func TestSourceReencrypt(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	front, ca1, ca2 := testkit.NewCA(t), testkit.NewCA(t), testkit.NewCA(t)
	leaf := front.Leaf(t, "a.example")
	ing := testIngress("web", "a.example", time.Time{}, httpPath("/", prefix, svcBackend("web", "http")))
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"a.example"}, SecretName: "a-tls"}}
	ing.Annotations = map[string]string{AnnotationBackendCA: "web-ca"}
	dflt := testIngress("dflt", "d.example", time.Time{}, httpPath("/", prefix, svcBackend("web", "http")))
	dflt.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"d.example"}, SecretName: "a-tls"}}
	dflt.Annotations = map[string]string{AnnotationReencrypt: "true"}
	client := fake.NewClientset(ing, dflt, testService("web"), testSlice("web", "web-abc", ready("web-7d9f8c6b5-aaaaa", "10.0.0.1")),
		tlsSecret("a-tls", leaf.CertPEM, leaf.KeyPEM), caSecret("web-ca", ca1.CertPEM()))
	rec := &recorder{}
	s := NewSource(client, Options{DefaultBackendCA: ca2.CertPEM()}, rec, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitChanged(t, s)
	backend := func(name string) dcm.DesiredBackend {
		d, _ := s.Desired()
		if b, ok := d.Backend(name); ok {
			return *b
		}
		return dcm.DesiredBackend{}
	}
	// upstream says the CA version and the server names of the route.
	upstream := func(name string) string {
		b := backend(name)
		if b.Route.Upstream == nil {
			return "<none>"
		}
		var names []string
		for _, e := range b.Endpoints {
			names = append(names, e.Name)
		}
		return b.Route.Upstream.Version + " " + strings.Join(names, ",")
	}
	v1, _ := ParseCA(ca1.CertPEM())
	v2, _ := ParseCA(ca2.CertPEM())
	u1 := dcm.UpstreamTLS{CA: "secret:demo/web-ca", Version: v1, ServerName: "web.demo.svc"}
	want1 := v1 + " web-7d9f8c6b5-aaaaa:http." + dcm.UpstreamTag(&u1)
	testkit.Eventually(t, "the CA's version", waitLimit, is(func() string { return upstream("be_reencrypt:demo:web") }, want1))
	if p, err := s.PEMs().CAPEM("secret:demo/web-ca", v1); err != nil || string(p) != string(ca1.CertPEM()) {
		t.Fatalf("CAPEM: %v", err)
	}
	ud := dcm.UpstreamTLS{CA: CADefault, Version: v2, ServerName: "web.demo.svc"}
	if got, want := upstream("be_reencrypt:demo:dflt"), v2+" web-7d9f8c6b5-aaaaa:http."+dcm.UpstreamTag(&ud); got != want {
		t.Errorf("default CA: %q, want %q", got, want)
	}
	if _, err := s.PEMs().CAPEM(CADefault, v2); err != nil {
		t.Errorf("CAPEM of the default CA: %v", err)
	}

	secrets := client.CoreV1().Secrets("demo")
	if _, err := secrets.Update(ctx, caSecret("web-ca", ca2.CertPEM()), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	u2 := dcm.UpstreamTLS{CA: "secret:demo/web-ca", Version: v2, ServerName: "web.demo.svc"}
	want2 := v2 + " web-7d9f8c6b5-aaaaa:http." + dcm.UpstreamTag(&u2)
	testkit.Eventually(t, "the rotated CA, servers renamed", waitLimit, is(func() string { return upstream("be_reencrypt:demo:web") }, want2))
	if want2 == want1 {
		t.Fatal("a rotation keeps the server names")
	}

	if _, err := secrets.Update(ctx, caSecret("web-ca", ca1.Leaf(t, "x").CertPEM), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the leaf rejected", waitLimit, rec.heard("rejected Secret demo/web-ca invalid-value", 1))
	if got := upstream("be_reencrypt:demo:web"); got != want2 {
		t.Errorf("after an invalid CA: %q, want the last valid %q", got, want2)
	}

	if err := secrets.Delete(ctx, "web-ca", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "no CA, no servers", waitLimit, is(func() string { return upstream("be_reencrypt:demo:web") }, " "))

	// Without a default CA, an Ingress that names none is rejected.
	s2 := newSource(Options{}, rec, nil)
	if st := s2.convertIngress(dflt); st.invalid == nil || !strings.Contains(st.invalid.Message, "--default-backend-ca-file") {
		t.Errorf("no default CA: %+v", st.invalid)
	}
}
