package plan

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func bigDesired(routes, endpoints int) dcm.Desired {
	d := dcm.Desired{Backends: make([]*dcm.DesiredBackend, 0, routes)}
	for n := range routes {
		r := route(fmt.Sprintf("r%05d", n))
		b := dcm.DesiredBackend{Name: r.BackendName(), Route: r}
		for p := range endpoints {
			b.Endpoints = append(b.Endpoints, ep(fmt.Sprintf("r%05d-%02d", n, p), fmt.Sprintf("10.%d.%d.%d", n/256, n%256, p+1), dcm.StateReady))
		}
		d.Backends = append(d.Backends, &b)
	}
	return d
}

// BenchmarkCompute10kRoutes: the full plan for 10,000 routes × 10 endpoints
// when one endpoint changed (the steady state of a big cluster).
func BenchmarkCompute10kRoutes(b *testing.B) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	d := bigDesired(10000, 10)
	actual := idle(Fresh(d, caps))
	changed := bigDesired(10000, 10)
	changed.Backends[5000].Endpoints = changed.Backends[5000].Endpoints[:9]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p := Compute(actual, changed, caps)
		if len(p.Ops) != 1 {
			b.Fatalf("want 1 op, got %d", len(p.Ops))
		}
	}
}

// BenchmarkCompute10kRoutesAllChanged: every backend scales out by one.
func BenchmarkCompute10kRoutesAllChanged(b *testing.B) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	actual := idle(Fresh(bigDesired(10000, 9), caps))
	d := bigDesired(10000, 10)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if p := Compute(actual, d, caps); len(p.Ops) != 30000 {
			b.Fatalf("want 30000 ops, got %d", len(p.Ops))
		}
	}
}

// BenchmarkFresh10kRoutes: the state a reload renders, 100,000 servers.
func BenchmarkFresh10kRoutes(b *testing.B) {
	caps := dcm.Caps{Mode: dcm.ModeSlots, Slots: 8, AddServer: true}
	d := bigDesired(10000, 10)
	b.ReportAllocs()
	for b.Loop() {
		Fresh(d, caps)
	}
}

// BenchmarkSimulate1000Routes: the what-if preview of scaling one workload
// 10 → 15 at 1,000 routes × 10 servers (the browser runs this in wasm).
func BenchmarkSimulate1000Routes(b *testing.B) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	d := bigDesired(1000, 10)
	for i := range d.Backends {
		d.Backends[i].Route.Workload = &dcm.WorkloadRef{Kind: "Deployment", Name: d.Backends[i].Route.Name}
	}
	snap := dcm.Snapshot{Seq: 1, Mode: caps.Mode, Caps: caps, Backends: idle(Fresh(d, caps)).Backends}
	w := []dcm.WhatIf{{Kind: dcm.WhatIfScale, Namespace: "demo", Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: "r00500"}, Replicas: 15}}
	b.ReportAllocs()
	for b.Loop() {
		if sim := Simulate(snap, w, dcm.HAProxy26MemoryCosts()); sim.Ops != 15 || len(sim.Errors) > 0 { // add-server, enable-health, set-state ready ×5
			b.Fatalf("want 15 ops, got %d (%v)", sim.Ops, sim.Errors)
		}
	}
}

// BenchmarkRouteAdd10kRoutes: a route added to 10,000 routes × 10
// endpoints, on a spare, as the engine plans it (ComputeChanged): its
// servers, then its map entries; the maps' cost is the new route's, not
// the 10,000 (mapOps looks at its host's routes only).
func BenchmarkRouteAdd10kRoutes(b *testing.B) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 10}
	d := bigDesired(10000, 10)
	actual := idle(Fresh(d, caps))
	more := bigDesired(10001, 10)
	added := more.Backends[10000].Name
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p := ComputeChanged(actual, more, caps, []string{added})
		if p.Reload || len(p.Ops) != 31 || p.Ops[30].Kind != dcm.OpMapReplace || len(p.Ops[30].Set) != 1 {
			b.Fatalf("want 30 server ops (add, enable health, ready) and one map entry, got %d ops (reload %v)", len(p.Ops), p.Reload)
		}
	}
}

// BenchmarkSimulate10kRoutes: the same at 10,000 routes × 10 servers, the
// snapshot prepared once as the browser's planner keeps it (the preview
// plans and counts the touched backend only).
func BenchmarkSimulate10kRoutes(b *testing.B) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	d := bigDesired(10000, 10)
	for i := range d.Backends {
		d.Backends[i].Route.Workload = &dcm.WorkloadRef{Kind: "Deployment", Name: d.Backends[i].Route.Name}
	}
	snap := dcm.Snapshot{Seq: 1, Mode: caps.Mode, Caps: caps, Backends: idle(Fresh(d, caps)).Backends}
	pr := Prepare(snap, dcm.HAProxy26MemoryCosts())
	w := []dcm.WhatIf{{Kind: dcm.WhatIfScale, Namespace: "demo", Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: "r05000"}, Replicas: 15}}
	b.ReportAllocs()
	for b.Loop() {
		if sim := pr.Simulate(w); sim.Ops != 15 || len(sim.Errors) > 0 || sim.After.Ready != 100005 {
			b.Fatalf("want 15 ops and 100,005 servers ready, got %d, %d (%v)", sim.Ops, sim.After.Ready, sim.Errors)
		}
	}
}

// BenchmarkComputeChanged2000Flips: a fifth of a resync at 10,000 routes ×
// 10 endpoints, as the engine plans it: 2,000 backends whose first
// endpoint went from ready to not ready (one op each).
func BenchmarkComputeChanged2000Flips(b *testing.B) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 10}
	d := bigDesired(10000, 10)
	actual := idle(Fresh(d, caps))
	next := dcm.Desired{Backends: slices.Clone(d.Backends)}
	var changed []string
	for n := 0; n < 10000; n += 5 {
		be := *next.Backends[n]
		be.Endpoints = slices.Clone(be.Endpoints)
		be.Endpoints[0].State = dcm.StateMaint
		next.Backends[n] = &be
		changed = append(changed, be.Name)
	}
	b.ReportAllocs()
	for b.Loop() {
		if p := ComputeChanged(actual, next, caps, changed); len(p.Ops) != 2000 || p.Reload {
			b.Fatalf("want 2,000 ops, got %d (reload %v)", len(p.Ops), p.Reload)
		}
	}
}

// BenchmarkComputeGatewayRouteAdded: a Gateway route added on a bind
// that carries 10,000 others, 1,000 hostnames of ten each: its map ops
// look at the routes of its hostname (routing.Groups).
func BenchmarkComputeGatewayRouteAdded(b *testing.B) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true,
		Gateway: dcm.GatewayBinds{Addresses: []string{"10.0.0.1"}, HTTPPorts: []int{80}}}
	gw := func(n int) *dcm.DesiredBackend {
		r := dcm.Route{Namespace: "gw", Name: fmt.Sprintf("r%05d", n), Source: dcm.SourceHTTPRoute, Kind: dcm.KindHTTP, Balance: dcm.BalanceRoundRobin,
			Gateway: &dcm.GatewayRoute{Bind: "10.0.0.1:80", Hostnames: []string{fmt.Sprintf("h%04d.example", n/10)}, Rank: fmt.Sprintf("%05d", n),
				Matches: []dcm.HTTPMatch{{PathType: dcm.GatewayPathPrefix, Path: fmt.Sprintf("/p%d", n%10)}}}}
		return &dcm.DesiredBackend{Name: r.BackendName(), Route: r, Endpoints: []dcm.Endpoint{ep(fmt.Sprintf("r%05d-0", n), fmt.Sprintf("10.%d.%d.1", n/256, n%256), dcm.StateReady)}}
	}
	d := dcm.Desired{}
	for n := range 10000 {
		d.Backends = append(d.Backends, gw(n))
	}
	actual := idle(Fresh(d, caps))
	added := dcm.Desired{Backends: append(slices.Clone(d.Backends), gw(10000))}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if p := Compute(actual, added, caps); p.Reload || len(p.Ops) != 4 {
			b.Fatalf("want 4 ops without a reload, got %v %v", p.Reasons, p.Ops)
		}
	}
}
