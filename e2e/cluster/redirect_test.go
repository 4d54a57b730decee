package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
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
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/internal/testkit"
)

// plainHTTP sends one plain HTTP request through HAProxy without following
// a redirect: status, Location, and the body of a 200.
func plainHTTP(s *harness.Stack, host, pathq string) (int, string, string, error) {
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr+pathq, nil)
	if err != nil {
		return 0, "", "", err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), strings.TrimSpace(string(b)), err
}

// TestIngressSSLRedirect: through the real API server, an Ingress given
// spec.tls and a kubernetes.io/tls Secret has its plain HTTP redirected to
// https (302, path and query kept) while HTTPS reaches the pod;
// dcm.io/ssl-redirect "false" serves plain HTTP; a bad value is rejected
// with its reason in the metric; dcm.io/ssl-redirect-code "301" redirects
// with 301. The same worker throughout, no reload.
func TestIngressSSLRedirect(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	host := "shop." + ns + ".test"
	createApp(t, ns, "shop", 1, host, "/")
	s := harness.Start(t, dcmOptions(t, ns))
	s.Serves(host, "/", 1, readyPods(ns, "shop"))
	pid, reloads := s.WorkerPID(), s.Reloads()
	ctx := context.Background()
	ca := testkit.NewCA(t)
	leaf := ca.Leaf(t, host)
	if _, err := env.admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	update := func(annotations map[string]string) {
		t.Helper()
		ing, err := env.admin.NetworkingV1().Ingresses(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: "shop-tls"}}
		ing.Annotations = annotations
		if _, err := env.admin.NetworkingV1().Ingresses(ns).Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(what string, code int, location string) {
		t.Helper()
		s.Eventually(what, 15*time.Second, func() error {
			got, loc, body, err := plainHTTP(s, host, "/cart/items?id=7&q=a%2Fb")
			if err != nil {
				return err
			}
			pods, _ := readyPods(ns, "shop")()
			if got != code || loc != location || (code == 200 && !slices.Contains(pods, body)) {
				return fmt.Errorf("HTTP %d Location %q body %q", got, loc, body)
			}
			return nil
		})
	}
	https := func() {
		t.Helper()
		code, body, _, err := testkit.HTTPSGet(s.HTTPSAddr, host, "/cart", ca.Pool())
		pods, _ := readyPods(ns, "shop")()
		if err != nil || code != 200 || !slices.Contains(pods, strings.TrimSpace(body)) {
			t.Fatalf("https://%s/cart: %d %q %v", host, code, body, err)
		}
	}

	update(nil)
	expect("spec.tls: plain HTTP redirected", 302, "https://"+host+"/cart/items?id=7&q=a%2Fb")
	https()
	update(map[string]string{kube.AnnotationSSLRedirect: "false"})
	expect("ssl-redirect false: plain HTTP served", 200, "")
	https()
	rejected := s.Counter("dcm_rejected_objects_total", "reason", dcm.RejectInvalidValue)
	update(map[string]string{kube.AnnotationSSLRedirect: "yes please"})
	s.Eventually("the bad annotation rejected", 15*time.Second, func() error {
		if got := s.Counter("dcm_rejected_objects_total", "reason", dcm.RejectInvalidValue); got <= rejected {
			return fmt.Errorf("%v rejections, was %v", got, rejected)
		}
		return nil
	})
	update(map[string]string{kube.AnnotationSSLRedirectCode: "301"})
	expect("ssl-redirect-code 301", 301, "https://"+host+"/cart/items?id=7&q=a%2Fb")
	https()
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}
