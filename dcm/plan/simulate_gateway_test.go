package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// gatewayPrebound pre-binds gatewayRoute's bind.
var gatewayPrebound = dcm.GatewayBinds{Addresses: []string{"127.0.20.1"}, HTTPPorts: []int{80}, HTTPSPorts: []int{443}}

// gatewayRoute is rule 0 of the HTTPRoute demo/shop on the listener http
// of infra/gw, to the Service web.
func gatewayRoute() *dcm.Route {
	return &dcm.Route{Namespace: "demo", Name: "gw_shop.0.0123456789abcdef", Object: "shop", Source: dcm.SourceHTTPRoute,
		Kind: dcm.KindHTTP, Balance: dcm.BalanceRoundRobin, Services: []dcm.ServiceRef{{Name: "web", Port: "http", Weight: 1}},
		Gateway: &dcm.GatewayRoute{Gateway: "infra/gw", Listener: "http", Bind: "127.0.20.1:80", Hostnames: []string{"shop.example"},
			Matches: []dcm.HTTPMatch{{PathType: dcm.GatewayPathPrefix, Path: "/cart", Method: "GET"}},
			Filters: &dcm.HTTPFilters{ResponseHeaders: &dcm.HeaderMods{Set: []dcm.HeaderValue{{Name: "X-Shop", Value: "1"}}}},
			Rank:    "000000000001!demo/shop!0000"}}
}

// TestSimulateAddsGatewayRoute: a new HTTPRoute's rule previews as any
// new route does — with a spare backend free it takes it, its pods come
// at runtime and the Gateway maps take its matches: no reload; without a
// spare, the reload and its reason are predicted.
func TestSimulateAddsGatewayRoute(t *testing.T) {
	add := []dcm.WhatIf{{Kind: dcm.WhatIfAddRoute, Route: gatewayRoute()}}
	pooled := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, Gateway: gatewayPrebound}
	sim := Simulate(snapshotOf(withService(webApp(2)), pooled), add, dcm.HAProxy26MemoryCosts())
	if len(sim.Errors) > 0 || sim.Reloads != 0 || len(sim.Reasons) > 0 {
		t.Fatalf("errors %v, %d reloads %v; want none", sim.Errors, sim.Reloads, sim.Reasons)
	}
	if got := opCounts(sim); got["add-server"] != 2 || got["set-state:ready"] != 2 {
		t.Errorf("ops %v, want the 2 pods added at runtime", got)
	}
	var maps []dcm.MapTable
	for _, st := range sim.Steps {
		for _, o := range st.Ops {
			if o.Kind == dcm.OpMapReplace && o.Backend == "" {
				for _, e := range o.Set {
					if e.Backend == gatewayRoute().BackendName() {
						maps = append(maps, o.Map)
					}
				}
			}
		}
	}
	if !slices.Contains(maps, dcm.MapGateway) {
		t.Errorf("the route's map entries are in %v, want the %s map among them", maps, dcm.MapGateway)
	}
	if !slices.Contains(sim.Backends, gatewayRoute().BackendName()) || sim.After.SpareBackends != sim.Before.SpareBackends-1 {
		t.Errorf("backends %v, spares %d → %d: want the route on a spare", sim.Backends, sim.Before.SpareBackends, sim.After.SpareBackends)
	}

	plain := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Gateway: gatewayPrebound}
	sim = Simulate(snapshotOf(withService(webApp(2)), plain), add, dcm.HAProxy26MemoryCosts())
	if sim.Reloads != 1 || !slices.Contains(sim.Reasons, dcm.ReasonRouteAdded) {
		t.Errorf("without a spare: %d reloads %v, want 1 for %s", sim.Reloads, sim.Reasons, dcm.ReasonRouteAdded)
	}
}
