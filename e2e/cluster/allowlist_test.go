package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/e2e/kapitest"
)

// getFrom sends one plain HTTP request for host to addr from the loopback
// address src: the status and body, or the error of a connection closed
// without an answer.
func getFrom(src, addr, host string) (int, string, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// TestOpenShiftRouteAllowlist: against the real kube-apiserver, a Route
// with haproxy.router.openshift.io/ip_allowlist is admitted and serves the
// listed client only (any other's connection is closed without an
// answer); the annotation edited swaps the roles, its older name
// ip_whitelist is read the same way, and removed everyone is served; an
// Ingress's dcm.io/allowlist-source-range likewise. Then the Route's
// rate-limit-connections with rate-http come and go. All without a reload.
func TestOpenShiftRouteAllowlist(t *testing.T) {
	installRouteCRD(t)
	t.Cleanup(func() { removeRouteCRD(t) })
	ns := kapitest.Namespace(t, env.admin)
	ctx := context.Background()
	ingHost := "web." + ns + ".test"
	createApp(t, ns, "web", 1, ingHost, "/")
	s := startRouteDCM(t, ns, nil)
	s.Serves(ingHost, "/", 1, readyPods(ns, "web"))
	pid, reloads := s.WorkerPID(), s.Reloads()
	pods, err := readyPods(ns, "web")()
	if err != nil || len(pods) != 1 {
		t.Fatalf("pods %v, %v", pods, err)
	}

	served := func(step, host, client string, want bool) {
		t.Helper()
		s.Eventually(fmt.Sprintf("%s: %s from %s served %v", step, host, client, want), 15*time.Second, func() error {
			code, body, err := getFrom(client, s.HTTPAddr, host)
			switch {
			case want && (err != nil || code != http.StatusOK || body != pods[0]):
				return fmt.Errorf("%d %q %v", code, body, err)
			case !want && err == nil:
				return fmt.Errorf("answered %d %q", code, body)
			}
			return nil
		})
	}

	routes := adminDynamic(t).Resource(kube.RouteGVR).Namespace(ns)
	rHost := "r." + ns + ".test"
	u := osRoute(ns, "r", rHost, "", "web", 100, nil)
	u.SetAnnotations(map[string]string{kube.AnnotationRouteIPAllowlist: "127.0.0.2"})
	if _, err := routes.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	served("created", rHost, "127.0.0.2", true)
	served("created", rHost, "127.0.0.3", false)
	admitted(t, routes, "r", "True", "")

	for _, step := range []struct {
		name        string
		annotations map[string]string
		allowed     []string
		denied      []string
	}{
		{"swapped", map[string]string{kube.AnnotationRouteIPAllowlist: "127.0.0.3/32 ::1"}, []string{"127.0.0.3"}, []string{"127.0.0.2"}},
		{"ip_whitelist", map[string]string{kube.AnnotationRouteIPWhitelist: "127.0.0.0/30"}, []string{"127.0.0.2", "127.0.0.3"}, []string{"127.0.0.5"}},
		{"removed", nil, []string{"127.0.0.5"}, nil},
	} {
		cur, err := routes.Get(ctx, "r", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.SetAnnotations(step.annotations)
		if _, err := routes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, c := range step.allowed {
			served(step.name, rHost, c, true)
		}
		for _, c := range step.denied {
			served(step.name, rHost, c, false)
		}
	}

	ing, err := env.admin.NetworkingV1().Ingresses(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Annotations = map[string]string{kube.AnnotationAllowlist: "127.0.0.5, 127.0.0.6"}
	if _, err := env.admin.NetworkingV1().Ingresses(ns).Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	served("ingress", ingHost, "127.0.0.6", true)
	served("ingress", ingHost, "127.0.0.2", false)
	served("ingress", rHost, "127.0.0.2", true) // the Route's own, unlisted

	// Rate limits: rate-http 3 serves a client's first three requests in
	// 10 s and refuses the fourth, each attempt from a fresh address (the
	// wait for the change does not count against the limit); removed, a
	// client's requests are all served.
	setRouteAnnotations := func(ann map[string]string) {
		t.Helper()
		cur, err := routes.Get(ctx, "r", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.SetAnnotations(ann)
		if _, err := routes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fresh := 0
	next := func() string { fresh++; return fmt.Sprintf("127.0.0.%d", 11+fresh%240) }
	setRouteAnnotations(map[string]string{kube.AnnotationRouteRateLimit: "true", kube.AnnotationRouteRateHTTP: "3"})
	s.Eventually("rate-http 3 refuses the fourth request", 15*time.Second, func() error {
		c := next()
		for i := range 3 {
			if code, _, err := getFrom(c, s.HTTPAddr, rHost); err != nil || code != http.StatusOK {
				return fmt.Errorf("request %d from %s: %d %v", i+1, c, code, err)
			}
		}
		if code, _, err := getFrom(c, s.HTTPAddr, rHost); err == nil {
			return fmt.Errorf("request 4 from %s answered %d", c, code)
		}
		return nil
	})
	admitted(t, routes, "r", "True", "")
	setRouteAnnotations(nil)
	s.Eventually("no limits: a client's requests all served", 15*time.Second, func() error {
		c := next()
		for i := range 6 {
			if code, _, err := getFrom(c, s.HTTPAddr, rHost); err != nil || code != http.StatusOK {
				return fmt.Errorf("request %d from %s: %d %v", i+1, c, code, err)
			}
		}
		return nil
	})

	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("worker %d → %d, reloads %v → %v: allowlists or rate limits reloaded", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}
