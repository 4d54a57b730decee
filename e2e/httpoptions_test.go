package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

// getWith sends a request through the stack's HTTP frontend with headers.
func getWith(s *harness.Stack, host, path string, hdr map[string]string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr+path, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// TestHTTPOptionsForwardedWithoutReload: the engine serves a route's
// forwarded-headers policy and changes it with a map replace: the pod sees
// the client's address appended, then alone, then only the client's own
// header; the same worker, no reload.
func TestHTTPOptionsForwardedWithoutReload(t *testing.T) {
	p := headerPod(t, "127.0.4.200")
	r := poolRoute("fwd", "fwd.test", "/")
	desired := func(policy dcm.ForwardedPolicy) dcm.Desired {
		r := r
		r.HTTP.Forwarded = policy
		return withRoutes(dcm.Desired{}, []dcm.Route{r}, []pod{p})
	}
	src := harness.NewStaticSource(desired(""))
	s := harness.Start(t, harness.Options{Source: src})
	pid, reloads := s.WorkerPID(), s.Reloads()
	xff := func(want string) func() error {
		return func() error {
			resp, body, err := getWith(s, "fwd.test", "/", map[string]string{"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"})
			if err != nil {
				return err
			}
			var h http.Header
			if resp.StatusCode != 200 || json.Unmarshal(body, &h) != nil {
				return fmt.Errorf("HTTP %d %q", resp.StatusCode, body)
			}
			if got := strings.Join(h.Values("X-Forwarded-For"), ", "); got != want {
				return fmt.Errorf("X-Forwarded-For %q, want %q", got, want)
			}
			if got := h.Get("X-Forwarded-Proto"); got == "https" {
				return fmt.Errorf("a client's X-Forwarded-Proto: https reached the pod over plain HTTP")
			}
			return nil
		}
	}
	s.Eventually("append (the default)", 10*time.Second, xff("203.0.113.9, 127.0.0.1"))
	src.Set(desired(dcm.ForwardReplace))
	s.Eventually("replace", 10*time.Second, xff("127.0.0.1"))
	src.Set(desired(dcm.ForwardNever))
	s.Eventually("never", 10*time.Second, xff("203.0.113.9"))
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d (was %d), reloads %v (was %v)", s.WorkerPID(), pid, s.Reloads(), reloads)
	}
}

// TestHTTPOptionsIngressAnnotations: through the Kubernetes path (the demo
// cluster): an unknown host gets the 503 page, 20 KB of headers pass, the
// dcm.io/timeout annotation lets a request slower than --timeout-server
// through and its change cuts a slower one with 504, and dcm.io/hsts puts
// the header on HTTPS responses only. The same worker, no reload.
func TestHTTPOptionsIngressAnnotations(t *testing.T) {
	ca := testkit.NewCA(t)
	s := harness.Start(t, harness.Options{Config: func(c *system.Config) { c.Timeouts.Server = time.Second }})
	const host = "web.demo.localhost"
	s.DemoServes(host, "/", "demo", "web", 2)
	pid, reloads := s.WorkerPID(), s.Reloads()
	ctx := context.Background()

	resp, body, err := getWith(s, "nothing.example", "/", nil)
	if err != nil || resp.StatusCode != 503 || resp.Header.Get("Cache-Control") != "no-store" || !strings.Contains(string(body), "<html>") {
		t.Fatalf("unknown host: %v %v %q", resp, err, body)
	}
	if resp, _, err := getWith(s, host, "/", map[string]string{"X-Token": strings.Repeat("j", 20<<10)}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("20 KB of headers: %v %v", resp, err)
	}
	status := func(path string, want int) func() error {
		return func() error { return s.ExpectStatus(host, path, want) }
	}
	s.Eventually("a 1.5s request cut by the 1s default", 10*time.Second, status("/slow?ms=1500", 504))

	ings := s.Client.NetworkingV1().Ingresses("demo")
	annotate := func(edit func(*networkingv1.Ingress)) {
		t.Helper()
		ing, err := ings.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ing.Annotations == nil {
			ing.Annotations = map[string]string{}
		}
		edit(ing)
		if _, err := ings.Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	annotate(func(i *networkingv1.Ingress) { i.Annotations[kube.AnnotationTimeout] = "3s" })
	s.Eventually("the route's 3s lets it through", 10*time.Second, status("/slow?ms=1500", 200))
	if err := s.ExpectStatus(host, "/slow?ms=3500", 504); err != nil {
		t.Errorf("a 3.5s request under a 3s timeout: %v", err)
	}
	annotate(func(i *networkingv1.Ingress) { i.Annotations[kube.AnnotationTimeout] = "1200ms" })
	s.Eventually("the changed 1.2s cuts it", 10*time.Second, status("/slow?ms=1500", 504))

	leaf := ca.Leaf(t, host)
	if _, err := s.Client.CoreV1().Secrets("demo").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-tls"},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	annotate(func(i *networkingv1.Ingress) {
		i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: "web-tls"}}
		i.Annotations[kube.AnnotationSSLRedirect] = "false"
		i.Annotations[kube.AnnotationHSTS] = "max-age=600; includeSubDomains"
	})
	s.Eventually("HSTS on HTTPS", 10*time.Second, func() error {
		got, err := hstsOf("https://"+s.HTTPSAddr, host, ca)
		if err != nil || got != "max-age=600;includeSubDomains" {
			return fmt.Errorf("%q %v", got, err)
		}
		return nil
	})
	if got, err := hstsOf("http://"+s.HTTPAddr, host, ca); err != nil || got != "" {
		t.Errorf("HSTS on plain HTTP: %q %v", got, err)
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d (was %d), reloads %v (was %v)", s.WorkerPID(), pid, s.Reloads(), reloads)
	}
}

// hstsOf is the Strict-Transport-Security header of a 200 from host.
func hstsOf(base, host string, ca *testkit.CA) (string, error) {
	req, err := http.NewRequest(http.MethodGet, base+"/", nil)
	if err != nil {
		return "", err
	}
	req.Host = host
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{ServerName: host, RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return resp.Header.Get("Strict-Transport-Security"), nil
}

// TestHTTPOptionsPassthroughTimeoutReloads: a passthrough route's timeout
// is its TCP backend's: setting it reloads once, with the reason
// passthrough-timeout, and the route is still served; an HTTP route's
// timeout beside it changes without one.
func TestHTTPOptionsPassthroughTimeoutReloads(t *testing.T) {
	ca := testkit.NewCA(t)
	db := pod(testkit.StartTLSBackend(t, "127.0.4.201", "db-pod", ca.Leaf(t, "db.test")))
	web := startPod(t, "127.0.4.202", "web-pod")
	desired := func(dbMs, webMs int64) dcm.Desired {
		d, w := passthroughRoute("db", "db.test"), poolRoute("web", "web.test", "/")
		d.HTTP.TimeoutMillis, w.HTTP.TimeoutMillis = dbMs, webMs
		return withRoutes(dcm.Desired{}, []dcm.Route{d, w}, []pod{db, web})
	}
	src := harness.NewStaticSource(desired(0, 0))
	s := harness.Start(t, harness.Options{Source: src})
	s.Eventually("web served", 10*time.Second, func() error { return s.ExpectStatus("web.test", "/", 200) })
	reloads := s.Reloads()
	src.Set(desired(0, 2000))
	s.Eventually("the HTTP route's timeout in its map", 10*time.Second, func() error {
		if s.Backend(poolRoute("web", "web.test", "/").BackendName()).Route.HTTP.TimeoutMillis != 2000 {
			return fmt.Errorf("not applied yet")
		}
		return nil
	})
	if s.Reloads() != reloads {
		t.Fatalf("the HTTP route's timeout reloaded")
	}
	src.Set(desired(5000, 2000))
	s.Eventually("one passthrough-timeout reload", 15*time.Second, func() error {
		if n := s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonPassthroughTimeout)); n != 1 || s.Reloads() != reloads+1 {
			return fmt.Errorf("%v passthrough-timeout reloads, %v in all (was %v)", n, s.Reloads(), reloads)
		}
		return nil
	})
	s.Eventually("db served after the reload", 10*time.Second, func() error {
		_, err := testkit.ServedLeaf(s.HTTPSAddr, "db.test", ca.Pool())
		return err
	})
}
