package browser

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
)

// TestBackendPageInsecurePolicy: an edge route's page says what plain
// HTTP gets, the same with and without JavaScript — "Redirect 302" for
// spec.tls alone — and follows dcm.io/ssl-redirect "false" live, as HAProxy
// does: plain HTTP then reaches the pods.
func TestBackendPageInsecurePolicy(t *testing.T) {
	p := startPortalWith(t, harness.Options{})
	rotate := edgeWeb(t, p)
	const shown = `document.querySelector('#route-info [data-bind="text=insecure"]').textContent`
	tab := newTab(t)
	signIn(t, tab, p.PortalURL, p.admin, "/backends/"+edgeBackend)
	static := siblingTab(t, tab)
	disableScripts(t, static)
	do(t, static, chromedp.Navigate(p.PortalURL+"/backends/"+edgeBackend))
	waitFor(t, tab, "the page shows the redirect", 5*time.Second, shown+` === 'Redirect 302'`, shown)
	if got := eval[string](t, static, shown); got != "Redirect 302" {
		t.Errorf("without JavaScript: %q, want Redirect 302", got)
	}
	noFollow := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(http.MethodGet, "http://"+p.HTTPAddr+"/x?y=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = webHost
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The location names HAProxy's HTTPS port, as the demo serves it.
	_, port, _ := net.SplitHostPort(p.HTTPSAddr)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != "https://"+webHost+":"+port+"/x?y=1" {
		t.Errorf("plain HTTP: %d Location %q, want 302 to https on port %s", resp.StatusCode, loc, port)
	}

	ctx := context.Background()
	ing, err := p.Client.NetworkingV1().Ingresses("demo").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Annotations = map[string]string{kube.AnnotationSSLRedirect: "false"}
	if _, err := p.Client.NetworkingV1().Ingresses("demo").Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the page follows the annotation live", 10*time.Second, shown+` === 'Allow'`, shown)
	do(t, static, chromedp.Navigate(p.PortalURL+"/backends/"+edgeBackend))
	if got := eval[string](t, static, shown); got != "Allow" {
		t.Errorf("without JavaScript after the change: %q, want Allow", got)
	}
	p.Eventually("plain HTTP reaches the pods", 10*time.Second, func() error {
		code, _, err := p.Get(webHost, "/")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("HTTP %d %v", code, err)
		}
		return nil
	})

	// The certificate fact names the Secret and its version, the same
	// with and without JavaScript, and follows a rotation live; an edge
	// route has no upstream TLS.
	const cert = `document.querySelector('#route-info [data-bind="text=cert"]').textContent`
	const upstream = `document.querySelector('#route-info [data-bind="text=upstream"]').textContent`
	before := eval[string](t, static, cert)
	if !strings.HasPrefix(before, "Secret demo/web-tls @") || len(before) != len("Secret demo/web-tls @")+12 {
		t.Fatalf("without JavaScript the certificate reads %q, want Secret demo/web-tls @<12 hex>", before)
	}
	waitFor(t, tab, "the page names the certificate", 5*time.Second, cert+` === '`+before+`'`, cert)
	for _, tb := range []context.Context{tab, static} {
		if got := eval[string](t, tb, upstream); got != "–" {
			t.Errorf("upstream TLS of an edge route: %q, want –", got)
		}
	}
	rotate()
	waitFor(t, tab, "the page follows the rotation", 10*time.Second, cert+` !== '`+before+`' && `+cert+`.startsWith('Secret demo/web-tls @')`, cert)
	do(t, static, chromedp.Navigate(p.PortalURL+"/backends/"+edgeBackend))
	if got, live := eval[string](t, static, cert), eval[string](t, tab, cert); got != live {
		t.Errorf("after the rotation: without JavaScript %q, live %q", got, live)
	}
}
