package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// gatewayOn is gatewayRoute on another bind (HTTPS: an edge route with
// the listener's certificate), with one pod.
func gatewayOn(name, bind string, https bool) *dcm.DesiredBackend {
	r := *gatewayRoute()
	g := *r.Gateway
	r.Name, g.Bind = name, bind
	r.Gateway = &g
	if https {
		r.Kind, r.TLS = dcm.KindEdge, &dcm.TLSRef{Secret: "infra/cert", Version: "aa"}
	}
	return &dcm.DesiredBackend{Name: r.BackendName(), Route: r, Endpoints: []dcm.Endpoint{ep(name+"-0", "10.0.0.9", dcm.StateReady)}}
}

func desiredWith(bs ...*dcm.DesiredBackend) dcm.Desired {
	d := dcm.Desired{Backends: slices.Clone(bs)}
	dcm.SortDesired(d.Backends)
	return d
}

// TestGatewayListenerPort: a Gateway route on a bind outside the
// pre-bound set reloads once, for gateway-listener-port, and the reload's
// state binds it; from then on routes on it come, change and go at
// runtime, and the bind stays until a reload no route needs it for. A
// route on a pre-bound bind never reloads for it, in any mode.
func TestGatewayListenerPort(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true, Gateway: gatewayPrebound}
	base := desiredWith(gatewayOn("a", "127.0.20.1:80", false))
	actual := idle(Fresh(base, caps))
	if len(actual.GatewayBinds) != 0 {
		t.Fatalf("pre-bound only: extra binds %v", actual.GatewayBinds)
	}
	tests := []struct {
		name string
		add  *dcm.DesiredBackend
		bind dcm.GatewayBind
	}{
		{"http port", gatewayOn("b", "127.0.20.1:8080", false), dcm.GatewayBind{Bind: "127.0.20.1:8080"}},
		{"https port", gatewayOn("b", "127.0.20.1:8443", true), dcm.GatewayBind{Bind: "127.0.20.1:8443", HTTPS: true}},
		{"pre-bound port, other address", gatewayOn("b", "127.0.20.2:80", false), dcm.GatewayBind{Bind: "127.0.20.2:80"}},
		{"pre-bound HTTP port as HTTPS", gatewayOn("b", "127.0.20.1:80", true), dcm.GatewayBind{Bind: "127.0.20.1:80", HTTPS: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := desiredWith(base.Backends[0], tt.add)
			for _, p := range []dcm.Plan{Compute(actual, want, caps), ComputeChanged(actual, want, caps, []string{tt.add.Name})} {
				if !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonGatewayListenerPort}) {
					t.Fatalf("plan reload %v %v, want one for %s", p.Reload, p.Reasons, dcm.ReasonGatewayListenerPort)
				}
				if !slices.Equal(p.Next.GatewayBinds, []dcm.GatewayBind{tt.bind}) {
					t.Fatalf("next binds %v, want %v", p.Next.GatewayBinds, tt.bind)
				}
			}
			bound := idle(AfterReload(Compute(actual, want, caps).Next))
			if p := Compute(bound, want, caps); !p.Empty() {
				t.Fatalf("not idempotent: %+v", p)
			}
			// A change on the new bind: runtime.
			changed := gatewayOn("b", tt.bind.Bind, tt.bind.HTTPS)
			changed.Route.Gateway.Matches = []dcm.HTTPMatch{{PathType: dcm.GatewayPathExact, Path: "/new"}}
			p := Compute(bound, desiredWith(base.Backends[0], changed), caps)
			if p.Reload || len(p.Ops) == 0 {
				t.Fatalf("a route change on the bound port: reload %v %v, %d ops; want runtime", p.Reload, p.Reasons, len(p.Ops))
			}
			// The route goes: the bind stays until a reload.
			p = Compute(bound, base, caps)
			if p.Reload || !slices.Equal(p.Next.GatewayBinds, bound.GatewayBinds) {
				t.Fatalf("route removed: reload %v %v, binds %v; want runtime, binds kept", p.Reload, p.Reasons, p.Next.GatewayBinds)
			}
			if r := Reload(base, caps, dcm.ReasonManual); len(r.Next.GatewayBinds) != 0 {
				t.Errorf("a reload without routes on it still binds %v", r.Next.GatewayBinds)
			}
		})
	}
	for _, c := range modes() {
		c.Gateway = gatewayPrebound
		p := Compute(idle(Fresh(base, c)), desiredWith(base.Backends[0], gatewayOn("b", "127.0.20.1:80", false)), c)
		if slices.Contains(p.Reasons, dcm.ReasonGatewayListenerPort) {
			t.Errorf("%s: a route on a pre-bound bind reloaded for %v", c.Mode, p.Reasons)
		}
	}
}

// TestSimulateGatewayListenerPort: the what-if predicts the reload and its
// reason for a new rule on a listener whose port HAProxy does not bind,
// and none once a reload has bound it (the snapshot's GatewayBinds).
func TestSimulateGatewayListenerPort(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true, Gateway: gatewayPrebound}
	r := gatewayOn("b", "127.0.20.1:8080", false).Route
	add := []dcm.WhatIf{{Kind: dcm.WhatIfAddRoute, Route: &r}}
	sim := Simulate(snapshotOf(withService(webApp(1)), caps), add, dcm.HAProxy26MemoryCosts())
	if sim.Reloads != 1 || !slices.Equal(sim.Reasons, []dcm.ReloadReason{dcm.ReasonGatewayListenerPort}) {
		t.Fatalf("%d reloads %v, want 1 for %s", sim.Reloads, sim.Reasons, dcm.ReasonGatewayListenerPort)
	}
	snap := snapshotOf(desiredWith(append(withService(webApp(1)).Backends, gatewayOn("c", "127.0.20.1:8080", false))...), caps)
	if len(snap.GatewayBinds) != 1 {
		t.Fatalf("snapshot binds %v, want 127.0.20.1:8080", snap.GatewayBinds)
	}
	if sim := Simulate(snap, add, dcm.HAProxy26MemoryCosts()); sim.Reloads != 0 {
		t.Errorf("bound already: %d reloads %v, want none", sim.Reloads, sim.Reasons)
	}
}

// TestGatewayAddressPool: with Spares, a fresh state binds the pre-bound
// ports of the addresses routes are on and of Spares free ones; a route
// on a bound spare is runtime, one on an address of the pool not bound
// reloads for gateway-address-pool and the reload binds it (and Spares
// free ones while the pool has them); a port outside the pre-bound ones
// is still gateway-listener-port.
func TestGatewayAddressPool(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true,
		Gateway: dcm.GatewayBinds{Addresses: []string{"127.0.20.1", "127.0.20.2", "127.0.20.3", "127.0.20.4"}, HTTPPorts: []int{80}, HTTPSPorts: []int{443}, Spares: 1}}
	binds := func(addrs ...string) []dcm.GatewayBind {
		var out []dcm.GatewayBind
		for _, a := range addrs {
			out = append(out, dcm.GatewayBind{Bind: a + ":443", HTTPS: true}, dcm.GatewayBind{Bind: a + ":80"})
		}
		slices.SortFunc(out, dcm.CompareGatewayBinds)
		return out
	}
	a := gatewayOn("a", "127.0.20.1:80", false)
	actual := idle(Fresh(desiredWith(a), caps))
	if want := binds("127.0.20.1", "127.0.20.2"); !slices.Equal(actual.GatewayBinds, want) {
		t.Fatalf("fresh binds %v, want %v", actual.GatewayBinds, want)
	}
	b := gatewayOn("b", "127.0.20.2:80", false)
	p := Compute(actual, desiredWith(a, b), caps)
	if p.Reload || len(p.Ops) == 0 {
		t.Fatalf("a route on the bound spare: reload %v %v; want runtime", p.Reload, p.Reasons)
	}
	actual = idle(p.Next)
	c := gatewayOn("c", "127.0.20.3:443", true)
	for _, p := range []dcm.Plan{Compute(actual, desiredWith(a, b, c), caps), ComputeChanged(actual, desiredWith(a, b, c), caps, []string{c.Name})} {
		if !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonGatewayAddressPool}) {
			t.Fatalf("a route past the spares: reload %v %v, want one for %s", p.Reload, p.Reasons, dcm.ReasonGatewayAddressPool)
		}
		if want := binds("127.0.20.1", "127.0.20.2", "127.0.20.3", "127.0.20.4"); !slices.Equal(p.Next.GatewayBinds, want) {
			t.Fatalf("binds after the reload %v, want %v", p.Next.GatewayBinds, want)
		}
	}
	d := gatewayOn("d", "127.0.20.3:8080", false)
	if p := Compute(actual, desiredWith(a, b, d), caps); !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonGatewayListenerPort}) {
		t.Errorf("a port outside the pre-bound ones: reasons %v, want %s", p.Reasons, dcm.ReasonGatewayListenerPort)
	}
	snap := dcm.Snapshot{Mode: caps.Mode, Caps: caps, Backends: actual.Backends, Pool: actual.Pool, GatewayBinds: actual.GatewayBinds}
	sim := Simulate(snap, []dcm.WhatIf{{Kind: dcm.WhatIfAddRoute, Route: &c.Route}}, dcm.HAProxy26MemoryCosts())
	if sim.Reloads != 1 || !slices.Equal(sim.Reasons, []dcm.ReloadReason{dcm.ReasonGatewayAddressPool}) {
		t.Errorf("preview: %d reloads %v, want 1 for %s", sim.Reloads, sim.Reasons, dcm.ReasonGatewayAddressPool)
	}
}

// checkGatewayBinds checks a plan's Gateway binds (checkPlan): it reloads
// for a Gateway bind, with the bind's reason, exactly when a desired
// route is on a bind HAProxy does not have; Next binds every desired
// route's bind, in order; a runtime plan keeps the binds. It returns
// the plan's other reasons.
func checkGatewayBinds(t *testing.T, what string, actual dcm.State, desired dcm.Desired, caps dcm.Caps, p dcm.Plan) []dcm.ReloadReason {
	t.Helper()
	var want []dcm.ReloadReason
	for _, d := range desired.Backends {
		b, ok := dcm.GatewayBindOf(d.Route)
		if !ok {
			continue
		}
		if !dcm.GatewayBound(actual, caps, b) {
			want = append(want, caps.Gateway.UnboundReason(b))
		}
		if !dcm.GatewayBound(p.Next, caps, b) {
			t.Fatalf("%s: next does not bind %v, route %s's", what, b, d.Name)
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	var got, rest []dcm.ReloadReason
	for _, r := range p.Reasons {
		if r == dcm.ReasonGatewayListenerPort || r == dcm.ReasonGatewayAddressPool {
			got = append(got, r)
		} else {
			rest = append(rest, r)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: Gateway bind reasons %v, want %v (binds %v)", what, got, want, actual.GatewayBinds)
	}
	if !slices.IsSortedFunc(p.Next.GatewayBinds, dcm.CompareGatewayBinds) ||
		len(slices.CompactFunc(slices.Clone(p.Next.GatewayBinds), func(a, b dcm.GatewayBind) bool { return a == b })) != len(p.Next.GatewayBinds) {
		t.Fatalf("%s: next binds %v not sorted and distinct", what, p.Next.GatewayBinds)
	}
	if !p.Reload && !slices.Equal(p.Next.GatewayBinds, actual.GatewayBinds) {
		t.Fatalf("%s: a runtime plan moved the binds %v → %v", what, actual.GatewayBinds, p.Next.GatewayBinds)
	}
	return rest
}

// TestGatewayBindProperties: checkPlan's properties (apply(plan) = next,
// idempotence, determinism, the Gateway binds' reasons) on histories
// whose Gateway routes are also on binds outside the pre-bound set, with
// every address bound and with one spare address.
func TestGatewayBindProperties(t *testing.T) {
	reloads := map[dcm.ReloadReason]int{}
	for _, spares := range []int{0, 1} {
		for _, caps := range modes() {
			caps.Gateway.Spares = spares
			for seed := range 150 {
				g := gen{r: rand.New(rand.NewPCG(uint64(seed), 23)), otherBinds: true}
				actual, desired := g.history(caps), g.desired()
				checkPlan(t, fmt.Sprintf("%s pool %d spares %d seed %d", caps.Mode, caps.Pool, spares, seed), actual, desired, caps)
				for _, r := range Compute(actual, desired, caps).Reasons {
					reloads[r]++
				}
			}
		}
	}
	if reloads[dcm.ReasonGatewayListenerPort] < 20 || reloads[dcm.ReasonGatewayAddressPool] < 5 {
		t.Errorf("reasons %v: want gateway-listener-port and gateway-address-pool plans among them", reloads)
	}
}
