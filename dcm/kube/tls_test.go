package kube

import (
	"context"
	"errors"
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

func tlsIngress(tls ...networkingv1.IngressTLS) *networkingv1.Ingress {
	ing := testIngress("web", "a.example", time.Time{}, httpPath("/", prefix, svcBackend("web", "http")), httpPath("/api", prefix, svcBackend("web", "http")))
	ing.Spec.Rules = append(ing.Spec.Rules, httpRule("b.example", httpPath("/", prefix, svcBackend("web", "http"))))
	ing.Spec.TLS = tls
	return ing
}

func tlsSecret(name string, crt, key []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}}
}

// TestIngressTLS: hosts of spec.tls become edge routes with the Secret of
// their entry, under the same route names as plain HTTP; the other hosts
// stay http. Entries dcm cannot serve reject the Ingress with a reason.
func TestIngressTLS(t *testing.T) {
	routes, err := IngressRoutes(tlsIngress(networkingv1.IngressTLS{Hosts: []string{"A.example", "unrouted.example"}, SecretName: "a-tls"}))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, r := range routes {
		secret := ""
		if r.TLS != nil {
			secret = r.TLS.Secret + "@" + r.TLS.Version
		}
		kinds[r.Host+r.Path] = string(r.Kind) + " " + secret
		if r.Name != RouteName("web", r.Host, r.Path, r.PathType) {
			t.Errorf("%s%s named %s", r.Host, r.Path, r.Name)
		}
	}
	want := map[string]string{"a.example/": "edge demo/a-tls@", "a.example/api": "edge demo/a-tls@", "b.example/": "http "}
	if len(kinds) != len(want) {
		t.Fatalf("routes %v, want %v", kinds, want)
	}
	for k, v := range want {
		if kinds[k] != v {
			t.Errorf("%s: %q, want %q", k, kinds[k], v)
		}
	}

	// What plain HTTP gets: a 302 to https by default, the annotations'
	// choice otherwise; hosts outside spec.tls are plain routes either way.
	for _, tt := range []struct {
		ann    map[string]string
		policy dcm.InsecurePolicy
		code   int
	}{
		{nil, dcm.InsecureRedirect, 0},
		{map[string]string{AnnotationSSLRedirect: "true"}, dcm.InsecureRedirect, 0},
		{map[string]string{AnnotationSSLRedirect: "false"}, dcm.InsecureAllow, 0},
		{map[string]string{AnnotationSSLRedirectCode: "301"}, dcm.InsecureRedirect, 301},
		{map[string]string{AnnotationSSLRedirect: "false", AnnotationSSLRedirectCode: "301"}, dcm.InsecureAllow, 0},
	} {
		ing := tlsIngress(networkingv1.IngressTLS{Hosts: []string{"a.example"}, SecretName: "a-tls"})
		ing.Annotations = tt.ann
		routes, err := IngressRoutes(ing)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range routes {
			policy, code := tt.policy, tt.code
			if r.Host == "b.example" {
				policy, code = "", 0
			}
			if r.Insecure != policy || r.RedirectCode != code {
				t.Errorf("%v: %s%s: %q %d, want %q %d", tt.ann, r.Host, r.Path, r.Insecure, r.RedirectCode, policy, code)
			}
		}
	}

	for name, tt := range map[string]struct {
		tls    []networkingv1.IngressTLS
		reason string
		field  string
	}{
		"no secret":        {[]networkingv1.IngressTLS{{Hosts: []string{"a.example"}}}, dcm.RejectUnsupported, "spec.tls[0].secretName"},
		"no hosts":         {[]networkingv1.IngressTLS{{SecretName: "a-tls"}}, dcm.RejectUnsupported, "spec.tls[0].hosts"},
		"wildcard":         {[]networkingv1.IngressTLS{{Hosts: []string{"*.example"}, SecretName: "a-tls"}}, dcm.RejectInvalidHost, "spec.tls[0].hosts[0]"},
		"hostile host":     {[]networkingv1.IngressTLS{{Hosts: []string{"a.example;show info"}, SecretName: "a-tls"}}, dcm.RejectInvalidHost, "spec.tls[0].hosts[0]"},
		"hostile secret":   {[]networkingv1.IngressTLS{{Hosts: []string{"a.example"}, SecretName: "a-tls\nshow info"}}, dcm.RejectInvalidName, "spec.tls[0].secretName"},
		"two secrets, one": {[]networkingv1.IngressTLS{{Hosts: []string{"a.example"}, SecretName: "a"}, {Hosts: []string{"a.example"}, SecretName: "b"}}, dcm.RejectConflict, "spec.tls[1].hosts[0]"},
	} {
		_, err := IngressRoutes(tlsIngress(tt.tls...))
		var ie *dcm.InvalidError
		if err == nil || !asInvalid(err, &ie) || ie.Reason != tt.reason || ie.Field != tt.field {
			t.Errorf("%s: %v, want %s at %s", name, err, tt.reason, tt.field)
		}
	}
}

func asInvalid(err error, out **dcm.InvalidError) bool {
	ie, ok := err.(*dcm.InvalidError)
	*out = ie
	return ok
}

// TestSecretCert: a valid Secret gives its PEM and a version that changes
// with the certificate; anything HAProxy could not load is rejected with a
// reason that never quotes the key.
func TestSecretCert(t *testing.T) {
	ca := testkit.NewCA(t)
	one, two := ca.Leaf(t, "a.example"), ca.Leaf(t, "a.example")
	pem1, v1, err := SecretCert(tlsSecret("a", one.CertPEM, one.KeyPEM))
	if err != nil {
		t.Fatal(err)
	}
	if _, again, _ := SecretCert(tlsSecret("a", one.CertPEM, one.KeyPEM)); again != v1 {
		t.Errorf("version not stable: %s, %s", v1, again)
	}
	if !strings.Contains(string(pem1), "BEGIN CERTIFICATE") || !strings.Contains(string(pem1), "PRIVATE KEY") {
		t.Errorf("PEM lacks the certificate or the key")
	}
	if err := dcm.ValidateCertVersion("v", v1); err != nil || v1 == "" {
		t.Errorf("version %q: %v", v1, err)
	}
	if _, v2, err := SecretCert(tlsSecret("a", two.CertPEM, two.KeyPEM)); err != nil || v2 == v1 {
		t.Errorf("rotated: version %s (was %s), %v", v2, v1, err)
	}
	opaque := tlsSecret("a", one.CertPEM, one.KeyPEM)
	opaque.Type = corev1.SecretTypeOpaque
	for name, sec := range map[string]*corev1.Secret{
		"garbage certificate": tlsSecret("a", []byte("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"), one.KeyPEM),
		"not PEM":             tlsSecret("a", []byte("hello"), one.KeyPEM),
		"key of another":      tlsSecret("a", one.CertPEM, two.KeyPEM),
		"no key":              tlsSecret("a", one.CertPEM, nil),
		"no certificate":      tlsSecret("a", nil, one.KeyPEM),
		"opaque":              opaque,
	} {
		_, _, err := SecretCert(sec)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if RejectReason(err) != dcm.RejectInvalidValue {
			t.Errorf("%s: reason %s", name, RejectReason(err))
		}
		if msg := RejectMessage(err); strings.Contains(msg, string(two.KeyPEM[30:60])) || strings.Contains(msg, string(one.KeyPEM[30:60])) {
			t.Errorf("%s: the message quotes the key: %s", name, msg)
		}
	}
}

// TestSourceSecrets: the Source gives edge routes their Secret's version
// and the driver the PEM of that version; a rotation is a new version (the
// one before stays available for a plan in flight); an invalid update is
// rejected and the last valid version stays; a deleted Secret leaves its
// hosts without a certificate; a Secret no route uses any more is
// forgotten, key included.
func TestSourceSecrets(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ca := testkit.NewCA(t)
	one, two := ca.Leaf(t, "a.example"), ca.Leaf(t, "a.example")
	ing := testIngress("web", "a.example", time.Time{}, httpPath("/", prefix, svcBackend("web", "http")))
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"a.example"}, SecretName: "a-tls"}}
	client := fake.NewClientset(ing, testService("web"), testSlice("web", "web-abc", ready("web-7d9f8c6b5-aaaaa", "10.0.0.1")),
		tlsSecret("a-tls", one.CertPEM, one.KeyPEM))
	rec := &recorder{}
	s := NewSource(client, Options{}, rec, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitChanged(t, s)
	name := "be_edge:demo:web"
	version := func() string {
		d, _ := s.Desired()
		b, ok := d.Backend(name)
		if !ok || b.Route.TLS == nil {
			return "<none>"
		}
		return b.Route.TLS.Version
	}
	_, v1, _ := SecretCert(tlsSecret("a-tls", one.CertPEM, one.KeyPEM))
	if got := version(); got != v1 {
		t.Fatalf("version %q, want %q", got, v1)
	}
	if p, err := s.PEMs().CertPEM("demo/a-tls", v1); err != nil || !strings.Contains(string(p), string(one.KeyPEM)) {
		t.Fatalf("CertPEM: %v", err)
	}

	secrets := client.CoreV1().Secrets("demo")
	if _, err := secrets.Update(ctx, tlsSecret("a-tls", two.CertPEM, two.KeyPEM), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, v2, _ := SecretCert(tlsSecret("a-tls", two.CertPEM, two.KeyPEM))
	testkit.Eventually(t, "the rotated version", waitLimit, is(version, v2))
	for _, v := range []string{v1, v2} {
		if _, err := s.PEMs().CertPEM("demo/a-tls", v); err != nil {
			t.Errorf("CertPEM %s after the rotation: %v", v, err)
		}
	}

	if _, err := secrets.Update(ctx, tlsSecret("a-tls", one.CertPEM, two.KeyPEM), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the invalid Secret rejected", waitLimit, rec.heard("rejected Secret demo/a-tls invalid-value", 1))
	if got := version(); got != v2 {
		t.Errorf("after an invalid update the route has version %q, want the last valid %q", got, v2)
	}
	if _, err := secrets.Update(ctx, tlsSecret("a-tls", two.CertPEM, two.KeyPEM), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the Secret valid again", waitLimit, func() error {
		return errors.Join(is(version, v2)(), rec.heard("accepted Secret demo/a-tls", 1)())
	})

	if err := secrets.Delete(ctx, "a-tls", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the deleted Secret: no certificate", waitLimit, is(version, ""))

	if err := client.NetworkingV1().Ingresses("demo").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the route gone", waitLimit, is(version, "<none>"))
	if _, err := s.PEMs().CertPEM("demo/a-tls", v2); err == nil {
		t.Error("the key of a Secret no route uses is kept")
	}
}
