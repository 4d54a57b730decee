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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/e2e/harness"
)

// gatewayHeader sends one request to bind for host and path and returns
// its status, body and the response header name.
func gatewayHeader(bind, host, path, name string) (int, string, string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+bind+path, nil)
	if err != nil {
		return 0, "", "", err
	}
	req.Host = host
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), resp.Header.Get(name), err
}

// expectGateway waits until host and path on bind answer code, from a
// pod of ns/app when code is 200.
func expectGateway(s *harness.Stack, bind, host, path string, code int, ns, app string) {
	s.Eventually(fmt.Sprintf("%s%s on %s answers %d", host, path, bind, code), 30*time.Second, func() error {
		pods, err := readyPods(ns, app)()
		if err != nil {
			return err
		}
		// Several requests, every one as wanted: a weight of 0 must
		// take no request at all.
		for range 6 {
			got, body, _, err := gatewayHeader(bind, host, path, "")
			if err != nil || got != code {
				return fmt.Errorf("HTTP %d %q %v", got, body, err)
			}
			if code == http.StatusOK && !slices.Contains(pods, body) {
				return fmt.Errorf("served by %q, pods of %s %v", body, app, pods)
			}
		}
		return nil
	})
}

// updateRoute changes the HTTPRoute ns/name (retrying on the conflicts
// dcm's status writes cause).
func (f gatewayFixture) updateRoute(t *testing.T, name string, change func(*gwv1.HTTPRouteSpec)) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		r, err := f.gw.GatewayV1().HTTPRoutes(f.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(&r.Spec)
		_, err = f.gw.GatewayV1().HTTPRoutes(f.ns).Update(ctx, r, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func backendRef(name string, weight int32) gwv1.HTTPBackendRef {
	return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{Weight: ptr.To(weight),
		BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(name), Port: ptr.To(gwv1.PortNumber(80))}}}
}

func pathPrefix(p string) []gwv1.HTTPRouteMatch {
	return []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To(p)}}}
}

// TestGatewayHTTPRouteChangesAtRuntime: each kind of change to a real
// HTTPRoute — its match, a filter, its backendRefs' weights, its
// hostnames, its backendRef — and a new listener hostname on its Gateway
// with a route of its own are served through HAProxy's runtime API: one
// HAProxy worker and no reload from the first request to the last.
func TestGatewayHTTPRouteChangesAtRuntime(t *testing.T) {
	f := newGatewayFixture(t, 18084)
	createApp(t, f.ns, "web2", 1, "web2."+f.ns+".test", "/")
	s := startGatewayDCM(t, f.ns, "127.0.20.108/30", 18084)
	bind := "127.0.20.108:18084"
	expectGateway(s, bind, f.host, "/", http.StatusOK, f.ns, "web")
	pid, reloads := s.WorkerPID(), s.Reloads()

	// Match: PathPrefix /v2 only.
	f.updateRoute(t, "web", func(r *gwv1.HTTPRouteSpec) { r.Rules[0].Matches = pathPrefix("/v2") })
	expectGateway(s, bind, f.host, "/v2/x", http.StatusOK, f.ns, "web")
	expectGateway(s, bind, f.host, "/other", http.StatusNotFound, "", "")

	// Filter: a response header added.
	f.updateRoute(t, "web", func(r *gwv1.HTTPRouteSpec) {
		r.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterResponseHeaderModifier,
			ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Add: []gwv1.HTTPHeader{{Name: "X-Gw", Value: "on"}}}}}
	})
	s.Eventually("the filter's header", 30*time.Second, func() error {
		if code, _, h, err := gatewayHeader(bind, f.host, "/v2", "X-Gw"); err != nil || code != 200 || h != "on" {
			return fmt.Errorf("HTTP %d X-Gw %q %v", code, h, err)
		}
		return nil
	})

	// Weights: web 1 and web2 0, then the other way round.
	f.updateRoute(t, "web", func(r *gwv1.HTTPRouteSpec) {
		r.Rules[0].BackendRefs = []gwv1.HTTPBackendRef{backendRef("web", 1), backendRef("web2", 0)}
	})
	expectGateway(s, bind, f.host, "/v2", http.StatusOK, f.ns, "web")
	f.updateRoute(t, "web", func(r *gwv1.HTTPRouteSpec) {
		r.Rules[0].BackendRefs = []gwv1.HTTPBackendRef{backendRef("web", 0), backendRef("web2", 1)}
	})
	expectGateway(s, bind, f.host, "/v2", http.StatusOK, f.ns, "web2")

	// Hostname: another host; the old one is no longer the route's.
	moved := "moved." + f.ns + ".test"
	f.updateRoute(t, "web", func(r *gwv1.HTTPRouteSpec) { r.Hostnames = []gwv1.Hostname{gwv1.Hostname(moved)} })
	expectGateway(s, bind, moved, "/v2", http.StatusOK, f.ns, "web2")
	expectGateway(s, bind, f.host, "/v2", http.StatusNotFound, "", "")

	// BackendRef: the one Service web.
	f.updateRoute(t, "web", func(r *gwv1.HTTPRouteSpec) { r.Rules[0].BackendRefs = []gwv1.HTTPBackendRef{backendRef("web", 1)} })
	expectGateway(s, bind, moved, "/v2", http.StatusOK, f.ns, "web")

	// A listener with a hostname of its own, and a route attached to it.
	named := "named." + f.ns + ".test"
	ctx := context.Background()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g, err := f.gw.GatewayV1().Gateways(f.ns).Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return err
		}
		g.Spec.Listeners = append(g.Spec.Listeners, gwv1.Listener{Name: "named", Port: 18084, Protocol: gwv1.HTTPProtocolType,
			Hostname: ptr.To(gwv1.Hostname(named))})
		_, err = f.gw.GatewayV1().Gateways(f.ns).Update(ctx, g, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "named"}, Spec: gwv1.HTTPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw", SectionName: ptr.To(gwv1.SectionName("named"))}}},
		Rules:           []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{backendRef("web2", 1)}}}}}
	if _, err := f.gw.GatewayV1().HTTPRoutes(f.ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectGateway(s, bind, named, "/", http.StatusOK, f.ns, "web2")
	expectGateway(s, bind, moved, "/v2", http.StatusOK, f.ns, "web")

	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("reloaded: pid %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}

// TestGatewayAndIngressOneHost: an Ingress and an HTTPRoute for one host
// each serve on their own binds — the Ingress on --http-bind, the
// HTTPRoute on its Gateway's address — and neither answers the other's
// paths (the Gateway's 404, --http-bind's 503); no reload.
func TestGatewayAndIngressOneHost(t *testing.T) {
	f := newGatewayFixture(t, 18085)
	createApp(t, f.ns, "ing", 1, f.host, "/ing")
	f.updateRoute(t, "web", func(r *gwv1.HTTPRouteSpec) { r.Rules[0].Matches = pathPrefix("/gw") })
	s := startGatewayDCM(t, f.ns, "127.0.20.112/30", 18085)
	bind := "127.0.20.112:18085"
	expectGateway(s, bind, f.host, "/gw", http.StatusOK, f.ns, "web")
	s.Serves(f.host, "/ing", 1, readyPods(f.ns, "ing"))
	pid, reloads := s.WorkerPID(), s.Reloads()
	expectGateway(s, bind, f.host, "/ing", http.StatusNotFound, "", "")
	// --http-bind answers what no Ingress or Route serves with its
	// "Application is not available" 503.
	if code, body, err := s.Get(f.host, "/gw"); err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("the HTTPRoute's path on --http-bind: HTTP %d %q %v, want 503", code, body, err)
	}
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("reloaded: pid %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}
