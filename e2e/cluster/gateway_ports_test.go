package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/e2e/harness"
)

// previewPlan posts what-ifs to POST /api/v1/plan with token.
func previewPlan(t *testing.T, s *harness.Stack, token string, whatifs []dcm.WhatIf) dcm.Simulation {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"whatifs": whatifs})
	req, _ := http.NewRequest(http.MethodPost, s.PortalURL+"/api/v1/plan", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sim dcm.Simulation
	if err := json.NewDecoder(resp.Body).Decode(&sim); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v1/plan: HTTP %d: %v", resp.StatusCode, err)
	}
	return sim
}

// listenerCondition is the condition typ of the Gateway gw's listener
// name, as "Status/Reason".
func (f gatewayFixture) listenerCondition(gw string, name gwv1.SectionName, typ string) (string, error) {
	g, err := f.gw.GatewayV1().Gateways(f.ns).Get(context.Background(), gw, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	for _, l := range g.Status.Listeners {
		if l.Name != name {
			continue
		}
		for _, c := range l.Conditions {
			if c.Type == typ && c.ObservedGeneration == g.Generation {
				return string(c.Status) + "/" + c.Reason, nil
			}
		}
	}
	return "", fmt.Errorf("no %s condition of listener %s at generation %d in %+v", typ, name, g.Generation, g.Status.Listeners)
}

// TestGatewayListenerPort: a Gateway gains a listener on a port outside
// the pre-bound set. The listener is accepted and, with no route yet,
// Pending without a reload; the what-if predicts that a route on it
// reloads once for gateway-listener-port; creating that HTTPRoute
// reloads HAProxy exactly once with that reason
// (dcm_reloads_total{reason="gateway-listener-port"}), the listener is
// Programmed, the route is served on the Gateway's address and the new
// port, and a change to it afterwards is applied at runtime (same
// worker, no reload), while the pre-bound port keeps serving.
func TestGatewayListenerPort(t *testing.T) {
	const port, extraPort = 18097, 18197
	f := newGatewayFixture(t, port)
	token := viewerToken(t, f.ns)
	s := startGatewayDCM(t, f.ns, "127.0.20.200/30", port)
	bind, extraBind := fmt.Sprintf("127.0.20.200:%d", port), fmt.Sprintf("127.0.20.200:%d", extraPort)
	// web on the listener http only: without a sectionName it would
	// attach to the new listener too.
	f.updateRoute(t, "web", func(r *gwv1.HTTPRouteSpec) { r.ParentRefs[0].SectionName = ptr.To(gwv1.SectionName("http")) })
	expectGateway(s, bind, f.host, "/", http.StatusOK, f.ns, "web")
	ctx := context.Background()

	// The listener alone: accepted, Pending (nothing to serve on it yet),
	// no reload (the count at the end says so).
	reloads := s.Reloads()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g, err := f.gw.GatewayV1().Gateways(f.ns).Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return err
		}
		g.Spec.Listeners = append(g.Spec.Listeners, gwv1.Listener{Name: "extra", Port: extraPort, Protocol: gwv1.HTTPProtocolType})
		_, err = f.gw.GatewayV1().Gateways(f.ns).Update(ctx, g, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s.Eventually("the new listener accepted, pending", 30*time.Second, func() error {
		for typ, want := range map[string]string{"Accepted": "True/Accepted", "Programmed": "False/Pending"} {
			got, err := f.listenerCondition("gw", "extra", typ)
			if err != nil || got != want {
				return fmt.Errorf("%s %s, want %s (%v)", typ, got, want, err)
			}
		}
		return nil
	})

	// The what-if: web's rule on the new listener reloads once, for
	// gateway-listener-port.
	b, err := gatewayBackend(s, f.ns)
	if err != nil {
		t.Fatal(err)
	}
	next := b.Route
	g := *next.Gateway
	next.Name, next.Object, g.Listener, g.Bind = "gw_extra.0.0123456789abcdef", "extra", "extra", extraBind
	next.Gateway = &g
	sim := previewPlan(t, s, token, []dcm.WhatIf{{Kind: dcm.WhatIfAddRoute, Route: &next}})
	if len(sim.Errors) > 0 || sim.Reloads != 1 || !slices.Equal(sim.Reasons, []dcm.ReloadReason{dcm.ReasonGatewayListenerPort}) {
		t.Fatalf("preview: errors %v, %d reloads %v; want 1 for %s", sim.Errors, sim.Reloads, sim.Reasons, dcm.ReasonGatewayListenerPort)
	}

	whatIfPortPage(t, s.PortalURL, token, f.ns, extraPort)

	// The HTTPRoute on it: one reload, for that reason.
	byReason := s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonGatewayListenerPort))
	pid := s.WorkerPID()
	r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "extra"}, Spec: gwv1.HTTPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw", SectionName: ptr.To(gwv1.SectionName("extra"))}}},
		Hostnames:       []gwv1.Hostname{gwv1.Hostname(f.host)},
		Rules:           []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{backendRef("web", 1)}}}}}
	if _, err := f.gw.GatewayV1().HTTPRoutes(f.ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectGateway(s, extraBind, f.host, "/", http.StatusOK, f.ns, "web")
	s.Eventually("the new listener programmed", 30*time.Second, func() error {
		if got, err := f.listenerCondition("gw", "extra", "Programmed"); err != nil || got != "True/Programmed" {
			return fmt.Errorf("Programmed %s (%v)", got, err)
		}
		return nil
	})
	if got := s.Counter("dcm_reloads_total", "reason", string(dcm.ReasonGatewayListenerPort)) - byReason; got != 1 {
		t.Errorf("%v reloads for %s, want 1", got, dcm.ReasonGatewayListenerPort)
	}
	if got := s.Reloads() - reloads; got != 1 {
		t.Errorf("%v reloads since the listener came, want 1 (for the route, none for the listener alone)", got)
	}
	if s.WorkerPID() == pid {
		t.Errorf("the worker %d did not change: no reload bound the port", pid)
	}
	expectGateway(s, bind, f.host, "/", http.StatusOK, f.ns, "web")

	// A change on the new port: runtime.
	pid, reloads = s.WorkerPID(), s.Reloads()
	f.updateRoute(t, "extra", func(r *gwv1.HTTPRouteSpec) { r.Rules[0].Matches = pathPrefix("/v2") })
	expectGateway(s, extraBind, f.host, "/v2/x", http.StatusOK, f.ns, "web")
	expectGateway(s, extraBind, f.host, "/other", http.StatusNotFound, "", "")
	if s.WorkerPID() != pid || s.Reloads() != reloads {
		t.Errorf("the change on the new port reloaded: pid %d → %d, reloads %v → %v", pid, s.WorkerPID(), reloads, s.Reloads())
	}
}

// whatIfPortPage previews, on the what-if page in Chromium as a user
// does, "Add an HTTPRoute rule" on the Gateway's listener http with
// another port: the page's wasm planner predicts one reload, for
// gateway-listener-port.
func whatIfPortPage(t *testing.T, base, token, ns string, port int) {
	t.Helper()
	bctx := chromium(t)
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/login?next=/whatif"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")), chromedp.WaitVisible(chromedp.ID("wi-more"))); err != nil {
		t.Fatal(err)
	}
	browserWait(t, bctx, "the planner runs and the form knows the Gateway listener",
		`window.dcmWhatIf.source === 'wasm' && [...document.getElementById('wi-gw-listener').options].some((o) => o.value === `+strconv.Quote(ns+"/gw http")+`)`)
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		const kind = document.getElementById('wi-add-kind');
		kind.value = 'add-httproute'; kind.dispatchEvent(new Event('change'));
		document.getElementById('wi-gw-listener').value = %s;
		document.getElementById('wi-gw-service').value = %s;
		document.getElementById('wi-gw-host').value = 'port.example';
		document.getElementById('wi-gw-port').value = '%d';
		document.getElementById('wi-add').click();
		return true;
	})()`, strconv.Quote(ns+"/gw http"), strconv.Quote(ns+"/web"), port))); err != nil {
		t.Fatal(err)
	}
	browserWait(t, bctx, "the page previews the rule on the new port: one reload, gateway-listener-port", fmt.Sprintf(`(() => {
		const s = JSON.parse(window.dcmWhatIf.lastSim || 'null');
		return !!s && s.reloads === 1 && !(s.errors || []).length && (s.reasons || []).join() === 'gateway-listener-port' &&
			document.getElementById('wi-stack').innerText.includes(%s) &&
			document.querySelector('#preview .verdict').textContent.startsWith('Reload (gateway-listener-port)');
	})()`, strconv.Quote("on "+ns+"/gw whatif-"+strconv.Itoa(port)+": port.example")))
}
