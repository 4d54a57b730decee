package browser

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRejectedObjectIsEscaped: rejected Ingresses whose paths carry
// <script> and <img onerror> show on /events and the overview as the text
// they are — live as they come and rendered afresh — and no element is
// made of them, no script runs.
func TestRejectedObjectIsEscaped(t *testing.T) {
	// Paths dcm rejects; its message quotes them, so the portal shows
	// markup that Kubernetes users wrote.
	hostilePaths := map[string]string{
		"evil-script": `/a<script>alert(1)</script>`,
		"evil-img":    `/b<img src=x onerror=alert(2)>`,
	}
	p := startPortal(t)
	events := newTab(t)
	var dialogs atomic.Int32
	watchDialogs(t, events, &dialogs)
	signIn(t, events, p.PortalURL, p.admin, "/events")
	open(t, events, p.PortalURL+"/events")
	overview := siblingTab(t, events)
	watchDialogs(t, overview, &dialogs)
	open(t, overview, p.PortalURL+"/")

	for name, path := range hostilePaths {
		if _, err := p.Client.NetworkingV1().Ingresses("demo").Create(context.Background(), hostileIngress(name, path), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(how string) {
		t.Helper()
		waitFor(t, events, how+": the log shows both rejections", 5*time.Second,
			`document.querySelectorAll('#event-list > li[data-type=rejected]').length === 2`)
		waitFor(t, overview, how+": the overview lists both", 5*time.Second,
			`document.querySelectorAll('#rejected tbody tr').length === 2`)
		for name, path := range hostilePaths {
			for _, c := range []struct {
				tab  context.Context
				list string
			}{{events, "#event-list"}, {overview, "#rejected"}} {
				text := textOf(t, c.tab, c.list)
				if !strings.Contains(text, "Ingress demo/"+name) || !strings.Contains(text, path) {
					t.Errorf("%s: %s does not show %s's path %s as text:\n%s", how, c.list, name, path, text)
				}
			}
		}
		for _, c := range []struct {
			tab  context.Context
			list string
		}{{events, "#event-list"}, {overview, "#rejected"}} {
			if n := eval[int](t, c.tab, `document.querySelectorAll('script:not([src]), img, `+c.list+` script').length`); n != 0 {
				t.Errorf("%s: %d elements were made from the rejected paths", how, n)
			}
		}
	}
	check("live")
	screenshot(t, events, "events-rejected")
	do(t, events, chromedp.Reload())
	do(t, overview, chromedp.Reload())
	check("rendered")
	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d alert dialogs opened", n)
	}
}

// watchDialogs counts JavaScript dialogs (alert, confirm) a tab opens and
// dismisses them, so that one could not block the test.
func watchDialogs(t *testing.T, tab context.Context, n *atomic.Int32) {
	t.Helper()
	opened := chromedp.Events(tab, page.JavascriptDialogOpening)
	go func() {
		for _, err := range opened {
			if err != nil {
				return
			}
			n.Add(1)
			_, _ = chromedp.Call(tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
}

func hostileIngress(name, path string) *networkingv1.Ingress {
	prefix := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: "evil.demo.localhost",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: path, PathType: &prefix,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"}}},
			}}}},
		}}},
	}
}
