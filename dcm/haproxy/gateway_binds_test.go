package haproxy

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
	"github.com/dcm-router/dcm/internal/testkit"
)

// reload moves HAProxy to desired with the planner's plan, which must be
// a reload for reason alone: the driver reloads with its state, the
// worker changes, the runtime maps equal the files, and the plan is
// idempotent.
func (g *gwRun) reload(desired dcm.Desired, reason dcm.ReloadReason) {
	g.t.Helper()
	p := plan.Compute(g.st, desired, g.caps)
	if !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{reason}) {
		g.t.Fatalf("plan: reload %v %v, want one for %s", p.Reload, p.Reasons, reason)
	}
	_, err := g.d.Reload(context.Background(), p.Next)
	mustf(g.t, err, "reload")
	g.st = plan.AfterReload(p.Next)
	if len(p.Ops) > 0 {
		mustf(g.t, g.d.Apply(context.Background(), p.Ops, p.Next), "apply after the reload")
		g.st = p.Next
	}
	filesEqualRuntime(g.t, g.d)
	if pid := workerPID(g.t, g.d); pid == g.pid {
		g.t.Fatalf("the worker %d did not change", pid)
	} else {
		g.pid = pid
	}
	if q := plan.Compute(g.st, desired, g.caps); len(q.Ops) > 0 || q.Reload {
		g.t.Fatalf("not idempotent: %v %v", q.Reload, q.Ops)
	}
}

// TestGatewayListenerBinds: an HTTP and an HTTPS Gateway route on ports
// outside the pre-bound set each reload once (gateway-listener-port);
// HAProxy then serves them on their binds — the HTTPS one with its
// listener's certificate from the bind's own crt-list — and later
// changes on those binds are runtime; the routes gone, the binds stay
// bound (404 from the Gateway frontend, no reload) until a reload.
func TestGatewayListenerBinds(t *testing.T) {
	t.Parallel()
	const addr = "127.0.20.5"
	httpBind, httpsBind := addr+":18081", addr+":18444"
	ca := testkit.NewCA(t)
	store := &testkit.CertStore{}
	leaf := ca.Leaf(t, "s.gw.test")
	v := store.Put("gw/s", leaf.PEM())
	g := startGateway(t, addr, dcm.Desired{}, func(c *DriverConfig) {
		c.Settings.Gateway.HTTPSPorts = []int{18443}
		c.Certs = store
	})
	web := gwBackend("web", httpBind, "1", []string{"w.gw.test"}, nil, []dcm.Endpoint{gwPod(t, "127.0.0.1", "web")}, prefix("/"))
	g.reload(desiredOf(web), dcm.ReasonGatewayListenerPort)
	gwCheck(t, []gwReq{{url: "http://" + httpBind + "/a", host: "w.gw.test", code: 200, body: "web /a"}})

	sec := gwBackend("sec", httpsBind, "1", []string{"s.gw.test"}, nil, []dcm.Endpoint{gwPod(t, "127.0.0.1", "sec")}, prefix("/"))
	sec.Route.Kind, sec.Name = dcm.KindEdge, dcm.BackendName(dcm.KindEdge, "gw", "sec")
	sec.Route.TLS = &dcm.TLSRef{Secret: "gw/s", Version: v}
	sec.Route.Gateway.ListenerHostname = "s.gw.test"
	g.reload(desiredOf(web, sec), dcm.ReasonGatewayListenerPort)
	code, body, served, err := testkit.HTTPSGet(httpsBind, "s.gw.test", "/p", ca.Pool())
	mustf(t, err, "GET https://s.gw.test/p on %s", httpsBind)
	if code != 200 || !strings.HasPrefix(body, "sec /p") || served.SerialNumber.Cmp(leaf.Cert.SerialNumber) != 0 {
		t.Fatalf("https on the new bind: %d %q serial %s, want 200 from sec with the listener's certificate", code, body, served.SerialNumber)
	}

	// Changes on the new binds: runtime.
	web2 := gwBackend("web", httpBind, "1", []string{"w.gw.test"}, nil, web.Endpoints, exact("/only"))
	g.apply(desiredOf(web2, sec))
	gwCheck(t, []gwReq{{url: "http://" + httpBind + "/only", host: "w.gw.test", code: 200, body: "web /only"},
		{url: "http://" + httpBind + "/a", host: "w.gw.test", code: 404}})

	// The routes gone: the binds stay until a reload.
	g.apply(desiredOf())
	if want := []dcm.GatewayBind{{Bind: httpBind}, {Bind: httpsBind, HTTPS: true}}; !slices.Equal(g.st.GatewayBinds, want) {
		t.Fatalf("binds %v, want %v kept", g.st.GatewayBinds, want)
	}
	gwCheck(t, []gwReq{{url: "http://" + httpBind + "/only", host: "w.gw.test", code: 404}})
	if r := plan.Reload(desiredOf(), g.caps, dcm.ReasonManual); len(r.Next.GatewayBinds) != 0 {
		t.Errorf("a reload without routes on them binds %v", r.Next.GatewayBinds)
	}
}
