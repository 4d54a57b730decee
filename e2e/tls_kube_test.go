package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// TestIngressTLSFromSecret: the Kubernetes path end to end, against the demo
// cluster — a kubernetes.io/tls Secret and an Ingress given spec.tls turn
// the host into an edge route served over HTTPS with that certificate; an
// update of the Secret rotates it at runtime; an update HAProxy could not
// load is rejected (with its reason, in the metric) and the last valid
// certificate stays. No reload, the same worker throughout.
func TestIngressTLSFromSecret(t *testing.T) {
	ca := testkit.NewCA(t)
	s := harness.Start(t, harness.Options{})
	s.DemoServes("web.demo.localhost", "/", "demo", "web", 2)
	pid, reloads := s.WorkerPID(), s.Reloads()
	ctx := context.Background()
	secrets := s.Client.CoreV1().Secrets("demo")
	secret := func(l testkit.Leaf, key []byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: l.CertPEM, corev1.TLSPrivateKeyKey: key}}
	}
	serves := func(step string, want testkit.Leaf) {
		t.Helper()
		s.Eventually(step, 10*time.Second, func() error {
			code, _, leaf, err := testkit.HTTPSGet(s.HTTPSAddr, "web.demo.localhost", "/", ca.Pool())
			switch {
			case err != nil:
				return err
			case code != 200:
				return fmt.Errorf("HTTP %d", code)
			case leaf.SerialNumber.Cmp(want.Cert.SerialNumber) != 0:
				return fmt.Errorf("serial %s", leaf.SerialNumber)
			}
			return nil
		})
	}

	one := ca.Leaf(t, "web.demo.localhost")
	if _, err := secrets.Create(ctx, secret(one, one.KeyPEM), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ing, err := s.Client.NetworkingV1().Ingresses("demo").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"web.demo.localhost"}, SecretName: "web-tls"}}
	if _, err := s.Client.NetworkingV1().Ingresses("demo").Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	serves("the Ingress's host served with the Secret's certificate", one)

	two := ca.Leaf(t, "web.demo.localhost")
	if _, err := secrets.Update(ctx, secret(two, two.KeyPEM), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	serves("the rotated certificate served", two)

	rejected := s.Counter("dcm_rejected_objects_total", "reason", dcm.RejectInvalidValue)
	if _, err := secrets.Update(ctx, secret(ca.Leaf(t, "web.demo.localhost"), one.KeyPEM), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the mismatched key rejected", 10*time.Second, func() error {
		if got := s.Counter("dcm_rejected_objects_total", "reason", dcm.RejectInvalidValue); got != rejected+1 {
			return fmt.Errorf("%v rejections", got)
		}
		return nil
	})
	serves("the last valid certificate still served", two)

	if got := s.WorkerPID(); got != pid {
		t.Errorf("worker %d, was %d", got, pid)
	}
	if got := s.Reloads(); got != reloads {
		t.Errorf("%v reloads, was %v", got, reloads)
	}
}

// TestIngressPassthrough: the Kubernetes path of a passthrough route,
// against the demo cluster — an Ingress annotated dcm.io/ssl-passthrough
// takes a passthrough spare, and a TLS client for its host reaches the
// demo pod with its ClientHello untouched: the pod speaks plain HTTP, so
// it answers the handshake with an HTTP 400 and the client sees an HTTP
// response where a TLS record should be (HAProxy would have completed the
// handshake with its default certificate). Deleted, the host's TLS is terminated by HAProxy
// again (503, no route). No reload, the same worker throughout.
func TestIngressPassthrough(t *testing.T) {
	s := harness.Start(t, harness.Options{})
	s.DemoServes("web.demo.localhost", "/", "demo", "web", 2)
	pid, reloads := s.WorkerPID(), s.Reloads()
	ctx := context.Background()
	const host = "db.demo.localhost"
	ing := ingress("db", host, "/")
	ing.Annotations = map[string]string{kube.AnnotationSSLPassthrough: "true"}
	if _, err := s.Client.NetworkingV1().Ingresses("demo").Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually(host+" passes through to a pod", 10*time.Second, func() error {
		_, _, _, err := testkit.InsecureHTTPSGet(s.HTTPSAddr, host, "/")
		if err == nil || !strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
			return fmt.Errorf("want the pod's plain HTTP answer to the ClientHello, got %v", err)
		}
		return nil
	})
	b := s.Backend(dcm.BackendName(dcm.KindPassthrough, "demo", "db"))
	if !strings.HasPrefix(b.Slot, "be_passthrough:_pool:") || len(b.Servers) != 2 {
		t.Fatalf("backend %s slot %q, %d servers", b.Name, b.Slot, len(b.Servers))
	}
	if err := s.Client.NetworkingV1().Ingresses("demo").Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually(host+" terminated by HAProxy again", 10*time.Second, func() error {
		code, _, _, err := testkit.InsecureHTTPSGet(s.HTTPSAddr, host, "/")
		if err != nil || code != 503 {
			return fmt.Errorf("HTTP %d, %v", code, err)
		}
		return nil
	})
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}

// TestIngressSSLRedirect: the Kubernetes path of the insecure policy,
// against the demo cluster — spec.tls alone makes plain HTTP for the host a
// 302 to https (path and query kept) while HTTPS reaches the pods; a second
// Ingress on a longer path of the same host with dcm.io/ssl-redirect
// "false" keeps its plain HTTP; dcm.io/ssl-redirect-code changes the code;
// a bad value rejects that Ingress alone, with its reason in the metric;
// "false" serves the host over plain HTTP. A host without spec.tls is never
// touched. No reload, the same worker throughout.
func TestIngressSSLRedirect(t *testing.T) {
	ca := testkit.NewCA(t)
	// Behind a Service that maps 443 to HAProxy's HTTPS port, as deploy/
	// runs it: the location names no port.
	s := harness.Start(t, harness.Options{Config: func(c *system.Config) { c.HTTPSRedirectPort = 443 }})
	s.DemoServes("web.demo.localhost", "/", "demo", "web", 2)
	s.DemoServes("shop.demo.localhost", "/", "demo", "shop", 2)
	s.DemoServes("shop.demo.localhost", "/api", "demo", "api", 1)
	pid, reloads := s.WorkerPID(), s.Reloads()
	ctx := context.Background()
	const host = "shop.demo.localhost"
	leaf := ca.Leaf(t, host)
	if _, err := s.Client.CoreV1().Secrets("demo").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "shop-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ingresses := s.Client.NetworkingV1().Ingresses("demo")
	update := func(name string, annotations map[string]string) {
		t.Helper()
		ing, err := ingresses.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: "shop-tls"}}
		ing.Annotations = annotations
		if _, err := ingresses.Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods := func(app string) []string { return s.ReadyPods("demo", app) }
	servedBy := func(app string) plainAnswer {
		t.Helper()
		ready := pods(app)
		if len(ready) != 1 {
			t.Fatalf("%s: ready pods %v, want one", app, ready)
		}
		return plainAnswer{code: 200, body: ready[0]}
	}
	https := func(path, app string) {
		t.Helper()
		s.Eventually("https://"+host+path+" reaches "+app, 10*time.Second, func() error {
			code, body, _, err := testkit.HTTPSGet(s.HTTPSAddr, host, path, ca.Pool())
			body = strings.TrimSpace(body)
			if err != nil || code != 200 || !slices.Contains(pods(app), body) {
				return fmt.Errorf("HTTP %d %q %v, want one of %v", code, body, err, pods(app))
			}
			return nil
		})
	}
	steady := func(step string) {
		t.Helper()
		if s.WorkerPID() != pid || s.Reloads() != reloads {
			t.Fatalf("%s: worker %d → %d, reloads %v → %v", step, pid, s.WorkerPID(), reloads, s.Reloads())
		}
		s.DemoServes("web.demo.localhost", "/", "demo", "web", 2)
	}

	// api has one pod: its answer names it.
	s.Scale("demo", "shop", 1)
	s.DemoServes(host, "/", "demo", "shop", 1)
	update("api", map[string]string{kube.AnnotationSSLRedirect: "false"})
	update("shop", nil)
	expectPlain(s, host, "/cart?id=7&x=%20", plainAnswer{code: 302, location: "https://" + host + "/cart?id=7&x=%20"})
	expectPlain(s, host, "/api/items?q=1", servedBy("api"))
	https("/cart", "shop")
	https("/api/items", "api")
	steady("spec.tls, default redirect; /api allows plain HTTP")

	update("shop", map[string]string{kube.AnnotationSSLRedirectCode: "308"})
	expectPlain(s, host, "/cart", plainAnswer{code: 308, location: "https://" + host + "/cart"})
	steady("redirect code 308")

	rejected := s.Counter("dcm_rejected_objects_total", "reason", dcm.RejectInvalidValue)
	update("shop", map[string]string{kube.AnnotationSSLRedirect: "sometimes"})
	s.Eventually("the bad annotation rejected", 10*time.Second, func() error {
		if got := s.Counter("dcm_rejected_objects_total", "reason", dcm.RejectInvalidValue); got != rejected+1 {
			return fmt.Errorf("%v rejections, was %v", got, rejected)
		}
		return nil
	})
	expectPlain(s, host, "/api/items", servedBy("api"))
	steady("bad annotation")

	update("shop", map[string]string{kube.AnnotationSSLRedirect: "false"})
	expectPlain(s, host, "/cart", servedBy("shop"))
	https("/cart", "shop")
	steady("ssl-redirect false")

	update("api", nil)
	expectPlain(s, host, "/api/items?q=1", plainAnswer{code: 302, location: "https://" + host + "/api/items?q=1"})
	expectPlain(s, host, "/cart", servedBy("shop"))
	steady("/api back to the default")
}
