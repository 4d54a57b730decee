package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
	"github.com/dcm-router/dcm/e2e/kapitest"
	"github.com/dcm-router/dcm/system"
)

// crossRoute is an HTTPRoute of ns for host whose one backendRef is the
// Service other of namespace to.
func crossRoute(ns, name, host, to string) *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: gwv1.HTTPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
		Hostnames:       []gwv1.Hostname{gwv1.Hostname(host)},
		Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
			BackendObjectReference: gwv1.BackendObjectReference{Name: "other", Namespace: ptr.To(gwv1.Namespace(to)), Port: ptr.To(gwv1.PortNumber(80))}}}}}}}}
}

// grant lets HTTPRoutes of from refer to the Services of ns.
func grant(from, ns string) *gwv1.ReferenceGrant {
	return &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-" + from}, Spec: gwv1.ReferenceGrantSpec{
		From: []gwv1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: "HTTPRoute", Namespace: gwv1.Namespace(from)}},
		To:   []gwv1.ReferenceGrantTo{{Group: "", Kind: "Service"}}}}
}

// startGatewayDCMIn is startGatewayDCM watching several namespaces.
func startGatewayDCMIn(t *testing.T, namespaces []string, pool string, httpPort int) *harness.Stack {
	t.Helper()
	o := dcmOptions(t, namespaces[0])
	o.Config = func(c *system.Config) {
		c.Namespaces, c.HTTPSRedirectPort = namespaces, 443
		c.GatewayAddresses, c.GatewayHTTPPorts, c.GatewayHTTPSPorts = []string{pool}, []int{httpPort}, []int{httpPort + 363}
	}
	return harness.Start(t, o)
}

// routeResolved checks dcm's ResolvedRefs on the HTTPRoute ns/name.
func (f gatewayFixture) routeResolved(name, status, reason string) error {
	r, err := f.gw.GatewayV1().HTTPRoutes(f.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if len(r.Status.Parents) != 1 {
		return fmt.Errorf("parents %+v", r.Status.Parents)
	}
	for _, c := range r.Status.Parents[0].Conditions {
		if c.Type == "ResolvedRefs" {
			if string(c.Status) != status || c.Reason != reason || c.ObservedGeneration != r.Generation {
				return fmt.Errorf("ResolvedRefs %s %s (%s) at %d, want %s %s at %d", c.Status, c.Reason, c.Message, c.ObservedGeneration, status, reason, r.Generation)
			}
			return nil
		}
	}
	return fmt.Errorf("no ResolvedRefs in %+v", r.Status.Parents[0].Conditions)
}

// servedBy waits until host on bind answers 200 from a ready pod of ns/app.
func servedBy(s *harness.Stack, bind, host, ns, app string) {
	s.Eventually(host+" served by "+ns+"/"+app, 30*time.Second, func() error {
		pods, err := readyPods(ns, app)()
		if err != nil || len(pods) == 0 {
			return fmt.Errorf("pods %v: %v", pods, err)
		}
		code, body, err := gatewayGet(bind, host, "/")
		if err != nil || code != http.StatusOK || body != pods[0] {
			return fmt.Errorf("HTTP %d %q %v, want 200 from %v", code, body, err, pods)
		}
		return nil
	})
}

// TestGatewayReferenceGrantRevoked: a cross-namespace backendRef is served
// while a ReferenceGrant allows it; the grant deleted, the rule answers
// 500 (its backendRef unresolved) and dcm says ResolvedRefs False
// RefNotPermitted; granted again, it is served again — all without a
// reload.
func TestGatewayReferenceGrantRevoked(t *testing.T) {
	f := newGatewayFixture(t, 18083)
	other := kapitest.Namespace(t, env.admin)
	createApp(t, other, "other", 1, "other."+other+".test", "/")
	ctx := context.Background()
	host := "cross." + f.ns + ".test"
	if _, err := f.gw.GatewayV1().HTTPRoutes(f.ns).Create(ctx, crossRoute(f.ns, "cross", host, other), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.gw.GatewayV1().ReferenceGrants(other).Create(ctx, grant(f.ns, other), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := startGatewayDCMIn(t, []string{f.ns, other}, "127.0.20.104/30", 18083)
	bind := "127.0.20.104:18083"
	servedBy(s, bind, host, other, "other")
	s.Eventually("ResolvedRefs True", 30*time.Second, func() error { return f.routeResolved("cross", "True", "ResolvedRefs") })
	pid, reloads := s.WorkerPID(), s.Reloads()

	if err := f.gw.GatewayV1().ReferenceGrants(other).Delete(ctx, "from-"+f.ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the grant revoked: 500", 30*time.Second, func() error {
		if code, body, err := gatewayGet(bind, host, "/"); err != nil || code != http.StatusInternalServerError {
			return fmt.Errorf("HTTP %d %q %v, want 500", code, body, err)
		}
		return nil
	})
	s.Eventually("ResolvedRefs False RefNotPermitted", 30*time.Second, func() error {
		return f.routeResolved("cross", "False", "RefNotPermitted")
	})
	// The route of its own namespace is untouched.
	servedByAny(t, s, bind, f.host, f.ns, "web")

	if _, err := f.gw.GatewayV1().ReferenceGrants(other).Create(ctx, grant(f.ns, other), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	servedBy(s, bind, host, other, "other")
	s.Eventually("ResolvedRefs True again", 30*time.Second, func() error { return f.routeResolved("cross", "True", "ResolvedRefs") })
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("reloaded: pid %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}

// servedByAny checks host on bind answers 200 from one of ns/app's pods.
func servedByAny(t *testing.T, s *harness.Stack, bind, host, ns, app string) {
	t.Helper()
	s.Eventually(host+" served by a pod of "+ns+"/"+app, 30*time.Second, func() error {
		pods, err := readyPods(ns, app)()
		if err != nil {
			return err
		}
		code, body, err := gatewayGet(bind, host, "/")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("HTTP %d %q %v", code, body, err)
		}
		for _, p := range pods {
			if p == body {
				return nil
			}
		}
		return fmt.Errorf("served by %q, pods %v", body, pods)
	})
}

// TestGatewayRouteWhatIf: POST /api/v1/plan previews a new HTTPRoute's
// rule on dcm's real Gateway — it takes a spare backend, its pods are
// added at runtime, no reload — and creating that HTTPRoute then serves
// it without a reload, as predicted.
func TestGatewayRouteWhatIf(t *testing.T) {
	f := newGatewayFixture(t, 18086)
	token := viewerToken(t, f.ns)
	s := startGatewayDCM(t, f.ns, "127.0.20.116/30", 18086)
	bind := "127.0.20.116:18086"
	servedByAny(t, s, bind, f.host, f.ns, "web")
	b, err := gatewayBackend(s, f.ns)
	if err != nil {
		t.Fatal(err)
	}
	// The rule dcm will make of HTTPRoute next: web's, for another host.
	next := b.Route
	g := *next.Gateway
	host := "next." + f.ns + ".test"
	next.Name, next.Object, g.Hostnames = "gw_next.0.0123456789abcdef", "next", []string{host}
	next.Gateway = &g
	body, _ := json.Marshal(map[string]any{"whatifs": []dcm.WhatIf{{Kind: dcm.WhatIfAddRoute, Route: &next}}})
	req, _ := http.NewRequest(http.MethodPost, s.PortalURL+"/api/v1/plan", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var sim dcm.Simulation
	err = json.NewDecoder(resp.Body).Decode(&sim)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %v", resp.StatusCode, err)
	}
	adds, gatewayMap := 0, false
	for _, st := range sim.Steps {
		for _, o := range st.Ops {
			adds += btoi(o.Kind == dcm.OpAddServer && o.Backend == next.BackendName())
			gatewayMap = gatewayMap || o.Kind == dcm.OpMapReplace && o.Map == dcm.MapGateway
		}
	}
	if len(sim.Errors) > 0 || sim.Reloads != 0 || adds != 2 || !gatewayMap || sim.After.SpareBackends != sim.Before.SpareBackends-1 {
		t.Fatalf("preview: errors %v, %d reloads %v, %d add-server, gateway map %v, spares %d → %d; want none, 0, 2 pods at runtime, the gateway map, one spare taken",
			sim.Errors, sim.Reloads, sim.Reasons, adds, gatewayMap, sim.Before.SpareBackends, sim.After.SpareBackends)
	}
	whatIfPage(t, s.PortalURL, token, f.ns, host)
	pid, reloads := s.WorkerPID(), s.Reloads()
	r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "next"}, Spec: gwv1.HTTPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
		Hostnames:       []gwv1.Hostname{gwv1.Hostname(host)},
		Rules:           []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{backendRef("web", 1)}}}}}
	if _, err := f.gw.GatewayV1().HTTPRoutes(f.ns).Create(context.Background(), r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	servedByAny(t, s, bind, host, f.ns, "web")
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("reloaded, unlike the preview: pid %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// whatIfPage previews the same rule on the what-if page in Chromium, as a
// user does: the web Deployment as it is, then "Add an HTTPRoute rule" on
// the Gateway's listener for host, to the Service web. The page's wasm
// planner predicts no reload and the new backend's pods added.
func whatIfPage(t *testing.T, base, token, ns, host string) {
	t.Helper()
	bctx := chromium(t)
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/login?next=/whatif"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")), chromedp.WaitVisible(chromedp.ID("wi-more"))); err != nil {
		t.Fatal(err)
	}
	browserWait(t, bctx, "the planner runs and the form knows the Gateway listener",
		`window.dcmWhatIf.source === 'wasm' && [...document.getElementById('wi-gw-listener').options].some((o) => o.value === `+strconv.Quote(ns+"/gw http")+`)`)
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		document.getElementById('wi-replicas').value = '2';
		const w = document.getElementById('wi-workload');
		w.value = %s;
		w.dispatchEvent(new Event('input', { bubbles: true }));
		const kind = document.getElementById('wi-add-kind');
		kind.value = 'add-httproute'; kind.dispatchEvent(new Event('change'));
		document.getElementById('wi-gw-listener').value = %s;
		document.getElementById('wi-gw-service').value = %s;
		document.getElementById('wi-gw-host').value = %s;
		document.getElementById('wi-add').click();
		return true;
	})()`, strconv.Quote(ns+"/Deployment/web"), strconv.Quote(ns+"/gw http"), strconv.Quote(ns+"/web"), strconv.Quote(host)))); err != nil {
		t.Fatal(err)
	}
	backend := "be_http:" + ns + ":gw_whatif-next.0.0000000000000000"
	browserWait(t, bctx, "the page previews the rule: no reload, its pods added", fmt.Sprintf(`(() => {
		const s = JSON.parse(window.dcmWhatIf.lastSim || 'null');
		return !!s && s.reloads === 0 && !(s.errors || []).length && s.backends.includes(%s) &&
			document.getElementById('wi-stack').innerText.includes(%s) &&
			document.querySelectorAll('#pv-steps [data-op="add-server"]').length === 2 &&
			document.querySelector('#preview .verdict').textContent.startsWith('No reload');
	})()`, strconv.Quote(backend), strconv.Quote("add HTTPRoute rule "+ns+"/whatif-next on "+ns+"/gw http: "+host+" PathPrefix / → web")))
}
