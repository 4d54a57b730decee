package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/demo"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/system"
)

// stickyCookieName is the cookie of the one sticky route of each host of
// TestStickyCookies: the hash of the route's key, its default name.
func stickyCookieName(host string) string {
	name, _, _ := strings.Cut(host, ".")
	return dcm.DefaultCookieName(dcm.Route{Namespace: "demo", Name: name})
}

// stickyGet sends one request to HAProxy at addr with the sticky cookie
// (none when cookie is ""), and returns the pod that answered and the value
// of the cookie HAProxy set ("" when it set none or expired it).
func stickyGet(addr, host, cookie string) (pod, set string, err error) {
	name := stickyCookieName(host)
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return "", "", err
	}
	req.Host = host
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: name, Value: cookie})
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	for _, c := range resp.Cookies() {
		if c.Name == name && c.MaxAge >= 0 && c.Value != "" && (c.Expires.IsZero() || c.Expires.After(time.Now())) {
			set = c.Value
		}
	}
	return strings.TrimSpace(string(b)), set, nil
}

// cookies asks without a cookie until every pod in want has answered, and
// returns the cookie HAProxy set for each (an error if one set none).
func cookies(addr, host string, want []string) (map[string]string, error) {
	out := map[string]string{}
	for range 20 * len(want) {
		pod, set, err := stickyGet(addr, host, "")
		if err != nil {
			return nil, err
		}
		if set == "" {
			return nil, fmt.Errorf("pod %s answered without setting a cookie", pod)
		}
		if old, ok := out[pod]; ok && old != set {
			return nil, fmt.Errorf("pod %s got cookies %s and %s", pod, old, set)
		}
		out[pod] = set
		if len(out) == len(want) {
			break
		}
	}
	for _, p := range want {
		if out[p] == "" {
			return nil, fmt.Errorf("pod %s never answered (cookies: %v)", p, out)
		}
	}
	return out, nil
}

// pinned checks that n requests with cookie all reach pod.
func pinned(addr, host, cookie, pod string, n int) error {
	for range n {
		got, _, err := stickyGet(addr, host, cookie)
		if err != nil {
			return err
		}
		if got != pod {
			return fmt.Errorf("cookie %s of %s reached %s", cookie, pod, got)
		}
	}
	return nil
}

// TestStickyCookies: a route with dcm.io/sticky keeps a client on its pod
// through a scale-out (servers added at runtime get their cookies too), a
// forced reload, and a second dcm+haproxy watching the same cluster with
// the same secret: a cookie set by replica A reaches the same pod through B.
// A sticky route created at runtime takes a sticky spare (no reload) and
// gets the key B renders into its cfg for it.
func TestStickyCookies(t *testing.T) {
	const secret = "e2e-cluster-secret"
	secretFile := harness.File(t, "cookie-secret", secret)
	sameSecret := func(c *system.Config) { c.CookieSecretFile = secretFile }
	a := harness.Start(t, harness.Options{Config: sameSecret, Apps: []demo.App{
		{Namespace: "demo", Name: "web", Host: webHost, Path: "/", Replicas: 2},
		{Namespace: "demo", Name: "shop", Host: shopHost, Path: "/", Replicas: 2},
	}})
	a.DemoServes(webHost, "/", "demo", "web", 2)

	ingresses := a.Client.NetworkingV1().Ingresses("demo")
	ing, err := ingresses.Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ing.Annotations == nil {
		ing.Annotations = map[string]string{}
	}
	ing.Annotations[kube.AnnotationSticky] = "true"
	if _, err := ingresses.Update(context.Background(), ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var before map[string]string
	a.Eventually("web sets sticky cookies", 20*time.Second, func() error {
		before, err = cookies(a.HTTPAddr, webHost, a.ReadyPods("demo", "web"))
		return err
	})
	first := a.ReadyPods("demo", "web")[0]
	if err := pinned(a.HTTPAddr, webHost, before[first], first, 20); err != nil {
		t.Fatal(err)
	}

	// Scale out: three servers added at runtime, no reload.
	pid, reloads := a.WorkerPID(), a.Reloads()
	a.Scale("demo", "web", 5)
	a.DemoServes(webHost, "/", "demo", "web", 5)
	if a.WorkerPID() != pid || a.Reloads() != reloads {
		t.Fatal("scaling out reloaded HAProxy")
	}
	if err := pinned(a.HTTPAddr, webHost, before[first], first, 20); err != nil {
		t.Fatalf("after scale-out: %v", err)
	}
	all, err := cookies(a.HTTPAddr, webHost, a.ReadyPods("demo", "web"))
	if err != nil {
		t.Fatalf("after scale-out: %v", err)
	}
	var added string // a pod whose server was added at runtime
	for pod := range all {
		if _, old := before[pod]; !old {
			added = pod
		} else if all[pod] != before[pod] {
			t.Errorf("pod %s: cookie %s before the scale-out, %s after", pod, before[pod], all[pod])
		}
	}
	if err := pinned(a.HTTPAddr, webHost, all[added], added, 20); err != nil {
		t.Fatalf("pod added at runtime: %v", err)
	}

	// A forced reload: every server now comes from the cfg.
	a.Engine.Reload("e2e")
	a.Eventually("the reload is done", 20*time.Second, func() error {
		if a.WorkerPID() == pid {
			return fmt.Errorf("worker still %d", pid)
		}
		return nil
	})
	after, err := cookies(a.HTTPAddr, webHost, a.ReadyPods("demo", "web"))
	if err != nil {
		t.Fatalf("after the reload: %v", err)
	}
	for pod, c := range all {
		if after[pod] != c {
			t.Errorf("pod %s: cookie %s before the reload, %s after", pod, c, after[pod])
		}
		if err := pinned(a.HTTPAddr, webHost, c, pod, 10); err != nil {
			t.Errorf("after the reload: %v", err)
		}
	}

	// A new sticky route at runtime: it takes a sticky spare, no reload.
	pid, reloads = a.WorkerPID(), a.Reloads()
	const stickyShop = "sticky-shop.demo.localhost"
	shop, err := ingresses.Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shop = &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "sticky-shop", Annotations: map[string]string{kube.AnnotationSticky: "true"}},
		Spec:       *shop.Spec.DeepCopy(),
	}
	shop.Spec.Rules[0].Host = stickyShop
	if _, err := ingresses.Create(context.Background(), shop, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var shopCookies map[string]string
	a.Eventually("the new sticky route sets cookies", 20*time.Second, func() error {
		shopCookies, err = cookies(a.HTTPAddr, stickyShop, a.ReadyPods("demo", "shop"))
		return err
	})
	if slot := a.Backend("be_http:demo:sticky-shop").Slot; !strings.HasPrefix(slot, "be_sticky:_pool:") {
		t.Errorf("the new sticky route is in %q, want a sticky spare", slot)
	}
	if a.WorkerPID() != pid || a.Reloads() != reloads {
		t.Error("the new sticky route reloaded HAProxy")
	}

	// Replica B: another dcm and HAProxy on their own port, same cluster.
	// It renders both routes in its cfg under their own names.
	b := harness.Start(t, harness.Options{Config: sameSecret, Cluster: a.Cluster})
	b.DemoServes(webHost, "/", "demo", "web", 5)
	for pod, c := range all {
		if err := pinned(b.HTTPAddr, webHost, c, pod, 10); err != nil {
			t.Errorf("through replica B: %v", err)
		}
	}
	fromB, err := cookies(b.HTTPAddr, webHost, a.ReadyPods("demo", "web"))
	if err != nil {
		t.Fatalf("replica B: %v", err)
	}
	for pod, c := range all {
		if fromB[pod] != c {
			t.Errorf("pod %s: replica A sets cookie %s, replica B %s", pod, c, fromB[pod])
		}
	}
	shopFromB, err := cookies(b.HTTPAddr, stickyShop, a.ReadyPods("demo", "shop"))
	if err != nil {
		t.Fatalf("replica B, sticky-shop: %v", err)
	}
	for pod, c := range shopCookies {
		if shopFromB[pod] != c {
			t.Errorf("sticky-shop pod %s: replica A (spare, key set at runtime) sets cookie %s, replica B (cfg) %s", pod, c, shopFromB[pod])
		}
		if err := pinned(b.HTTPAddr, stickyShop, c, pod, 10); err != nil {
			t.Errorf("sticky-shop through replica B: %v", err)
		}
	}
}
