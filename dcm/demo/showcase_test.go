package demo

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/internal/testkit"
)

// TestShowcaseObjects: the showcase's Route is listed by the dynamic client
// and its API by discovery, and the pods' serving certificate verifies
// against the ca.crt beside it for the names the routes use.
func TestShowcaseObjects(t *testing.T) {
	opts := testOptions()
	opts.Showcase = true
	c, err := New(opts, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	routes, err := c.Dynamic().Resource(routeGVR()).Namespace(showcaseNS).List(ctx, metav1.ListOptions{})
	if err != nil || len(routes.Items) != 1 || routes.Items[0].GetName() != "hello" {
		t.Fatalf("routes: %v, %v", routes, err)
	}
	if list, err := c.Client().Discovery().ServerResourcesForGroupVersion("route.openshift.io/v1"); err != nil || list.APIResources[0].Name != "routes" {
		t.Fatalf("discovery of route.openshift.io/v1: %v, %v", list, err)
	}
	secret, err := c.Client().CoreV1().Secrets(showcaseNS).Get(ctx, tlsServingSecret, metav1.GetOptions{})
	if err != nil || secret.Type != corev1.SecretTypeTLS {
		t.Fatalf("serving secret: %v, %v", secret, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		t.Fatal("ca.crt holds no certificate")
	}
	block, _ := pem.Decode(secret.Data[corev1.TLSCertKey])
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tls-echo.demo.svc", "pass.demo.localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool}); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
	if got := (&Cluster{}).Examples("127.0.0.1:8000", "0.0.0.0:8443"); got != nil {
		t.Errorf("a cluster without a showcase has examples %v", got)
	}
	for _, e := range c.Examples("127.0.0.1:8000", "0.0.0.0:8443") {
		want := "http://127.0.0.1:8000/"
		if e.HTTPS {
			// An unspecified bind is reached on loopback.
			want = fmt.Sprintf("--resolve %s:8443:127.0.0.1 https://%s:8443/", e.Host, e.Host)
		}
		if !strings.Contains(e.Line, want) {
			t.Errorf("%s: %q lacks %q", e.Kind, e.Line, want)
		}
	}
}

// TestShowcaseTLSPod: a pod whose template names a serving Secret answers
// over TLS with that Secret's certificate.
func TestShowcaseTLSPod(t *testing.T) {
	opts := testOptions()
	opts.Apps, opts.Showcase = []App{}, true
	h := startCluster(t, opts)
	var addr string
	testkit.Eventually(t, "a ready tls-echo pod", 15*time.Second, func() error {
		for _, p := range h.c.Pods(showcaseNS, tlsApp) {
			if p.Ready {
				addr = p.Addr
				return nil
			}
		}
		return fmt.Errorf("pods %+v", h.c.Pods(showcaseNS, tlsApp))
	})
	code, body, leaf, err := testkit.InsecureHTTPSGet(addr, "pass.demo.localhost", "/")
	if err != nil || code != 200 || !strings.HasPrefix(body, tlsApp+"-") {
		t.Fatalf("GET https://%s: %d %q %v", addr, code, body, err)
	}
	if leaf.Issuer.CommonName != caName {
		t.Errorf("the pod served a certificate issued by %q, want %q", leaf.Issuer.CommonName, caName)
	}
}
