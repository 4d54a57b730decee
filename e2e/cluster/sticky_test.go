package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
)

// cookieGet sends one request for host+path (https when tls) with the
// cookies, and returns the pod that answered and HAProxy's Set-Cookie
// lines.
func cookieGet(addr, host, path string, secure bool, cookies ...*http.Cookie) (string, []string, error) {
	scheme := "http"
	if secure {
		scheme = "https"
	}
	req, err := http.NewRequest(http.MethodGet, scheme+"://"+addr+path, nil)
	if err != nil {
		return "", nil, err
	}
	req.Host = host
	for _, c := range cookies {
		req.AddCookie(c)
	}
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{ServerName: host, InsecureSkipVerify: true}}
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: tr}).Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("%s%s: HTTP %d", host, path, resp.StatusCode)
	}
	return strings.TrimSpace(string(b)), resp.Header.Values("Set-Cookie"), nil
}

// routeCookie asks without a cookie until HAProxy sets the cookie named
// name, and returns it with its Set-Cookie line and the pod it pins.
func routeCookie(s *harness.Stack, addr, host, path, name string, secure bool) (c *http.Cookie, line, pod string) {
	s.Eventually(host+path+" sets cookie "+name, 20*time.Second, func() error {
		p, lines, err := cookieGet(addr, host, path, secure)
		if err != nil {
			return err
		}
		for _, l := range lines {
			if got, err := http.ParseSetCookie(l); err == nil && got.Name == name {
				c, line, pod = got, l, p
				return nil
			}
		}
		return fmt.Errorf("no cookie %s in %q", name, lines)
	})
	return c, line, pod
}

// keptOn checks that n requests with the cookies all reach pod.
func keptOn(t *testing.T, addr, host, path, pod string, n int, cookies ...*http.Cookie) {
	t.Helper()
	for range n {
		got, _, err := cookieGet(addr, host, path, false, cookies...)
		if err != nil {
			t.Fatal(err)
		}
		if got != pod {
			t.Fatalf("%s%s with its cookie: pod %s, want %s", host, path, got, pod)
		}
	}
}

func withAnnotations(u *unstructured.Unstructured, ann map[string]string) *unstructured.Unstructured {
	u.SetAnnotations(ann)
	return u
}

// TestStickyRoutes, through the real API server and the real haproxy:
// two sticky Routes on one host (/ and /api) set cookies of their own
// names, HttpOnly, and each keeps its client on its pod through a
// scale-out (no reload) and a forced reload; an edge Route's cookie is
// named by cookie_name, HttpOnly, Secure and SameSite=None, and a new
// name and SameSite=Strict apply with the same worker; a Route with
// balance source keeps one client address on one pod.
func TestStickyRoutes(t *testing.T) {
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	createApp(t, ns, "web", 2, "ing."+ns+".test", "/")
	s := startRouteDCM(t, ns, nil)
	s.Serves("ing."+ns+".test", "/", 2, readyPods(ns, "web"))
	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	host, edgeHost, srcHost := "web."+ns+".test", "edge."+ns+".test", "src."+ns+".test"
	edge := withAnnotations(osRoute(ns, "edge", edgeHost, "", "web", 100, nil), map[string]string{kube.AnnotationRouteCookieName: "edge_session"})
	edge.Object["spec"].(map[string]any)["tls"] = map[string]any{"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"}
	for _, u := range []*unstructured.Unstructured{
		osRoute(ns, "root", host, "", "web", 100, nil),
		osRoute(ns, "api", host, "/api", "web", 100, nil),
		edge,
	} {
		if _, err := routes.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		admitted(t, routes, u.GetName(), "True", "")
	}

	rootName := dcm.DefaultCookieName(dcm.Route{Namespace: ns, Name: dcm.RouteNamePrefix + "root"})
	apiName := dcm.DefaultCookieName(dcm.Route{Namespace: ns, Name: dcm.RouteNamePrefix + "api"})
	rootC, line, rootPod := routeCookie(s.Stack, s.HTTPAddr, host, "/", rootName, false)
	if !strings.Contains(line, "HttpOnly") || strings.Contains(line, "Secure") {
		t.Errorf("plain Route's cookie %q: want HttpOnly, not Secure", line)
	}
	apiC, _, apiPod := routeCookie(s.Stack, s.HTTPAddr, host, "/api", apiName, false)
	// Both cookies, as a browser sends them (path=/): each Route reads its own.
	keptOn(t, s.HTTPAddr, host, "/", rootPod, 10, rootC, apiC)
	keptOn(t, s.HTTPAddr, host, "/api", apiPod, 10, rootC, apiC)

	pid, reloads := s.WorkerPID(), s.Reloads()
	scale(t, ns, "web", 4)
	s.Serves(host, "/", 4, readyPods(ns, "web"))
	keptOn(t, s.HTTPAddr, host, "/", rootPod, 10, rootC, apiC)
	keptOn(t, s.HTTPAddr, host, "/api", apiPod, 10, rootC, apiC)
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Fatal("the scale-out reloaded HAProxy")
	}

	s.Engine.Reload("e2e")
	s.Eventually("the forced reload is done", 20*time.Second, func() error {
		if s.WorkerPID() == pid {
			return fmt.Errorf("worker still %d", pid)
		}
		return nil
	})
	keptOn(t, s.HTTPAddr, host, "/", rootPod, 10, rootC, apiC)
	keptOn(t, s.HTTPAddr, host, "/api", apiPod, 10, rootC, apiC)

	_, line, _ = routeCookie(s.Stack, s.HTTPSAddr, edgeHost, "/", "edge_session", true)
	if !strings.Contains(line, "HttpOnly; Secure; SameSite=None") {
		t.Errorf("edge Route's cookie %q: want HttpOnly; Secure; SameSite=None", line)
	}
	pid, reloads = s.WorkerPID(), s.Reloads()
	u, err := routes.Get(ctx, "edge", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.SetAnnotations(map[string]string{kube.AnnotationRouteCookieName: "edge_v2", kube.AnnotationRouteCookieSameSite: "Strict"})
	if _, err := routes.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, line, _ = routeCookie(s.Stack, s.HTTPSAddr, edgeHost, "/", "edge_v2", true); !strings.Contains(line, "Secure; SameSite=Strict") {
		t.Errorf("after the change, edge Route's cookie %q: want SameSite=Strict", line)
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Fatal("a new cookie name or SameSite reloaded HAProxy")
	}

	// balance source: no cookie, one client address, one pod. An HTTP
	// Route with source takes no spare (they balance by roundrobin): a
	// reload (route-added), so it comes last.
	src := withAnnotations(osRoute(ns, "src", srcHost, "", "web", 100, nil),
		map[string]string{kube.AnnotationRouteBalance: "source", kube.AnnotationRouteDisableCookies: "true"})
	if _, err := routes.Create(ctx, src, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admitted(t, routes, "src", "True", "")
	s.Eventually(srcHost+" served", 20*time.Second, func() error {
		_, _, err := cookieGet(s.HTTPAddr, srcHost, "/", false)
		return err
	})
	var first string
	for i := range 40 {
		pod, set, err := cookieGet(s.HTTPAddr, srcHost, "/", false)
		if err != nil {
			t.Fatal(err)
		}
		if len(set) != 0 {
			t.Fatalf("disable_cookies, and HAProxy set %q", set)
		}
		if i == 0 {
			first = pod
		} else if pod != first {
			t.Fatalf("balance source: request %d from one address reached %s, the first %s", i, pod, first)
		}
	}
}
