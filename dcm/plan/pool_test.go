package plan

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

func desiredAll(bs ...dcm.DesiredBackend) dcm.Desired {
	slices.SortFunc(bs, func(a, b dcm.DesiredBackend) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return dcm.Desired{Backends: dcm.DesiredList(bs...)}
}

// derefAll copies desired backends out of a Desired.
func derefAll(bs []*dcm.DesiredBackend) []dcm.DesiredBackend {
	out := make([]dcm.DesiredBackend, len(bs))
	for i, b := range bs {
		out[i] = *b
	}
	return out
}

func desiredBackend(r dcm.Route, eps ...dcm.Endpoint) dcm.DesiredBackend {
	return dcm.DesiredBackend{Name: r.BackendName(), Route: r, Endpoints: eps}
}

// TestPoolLifecycle walks one route through its life in dynamic mode with a
// pool: it takes a spare without a reload, is re-keyed in place, leaves the
// maps before its servers are retired, and gives the spare back once they
// are gone; a route beyond the pool reloads once, with pool-exhausted.
func TestPoolLifecycle(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2}
	web, shop := route("web"), route("shop")
	web.Check, shop.Check = false, false
	a := ep("web-a", "127.0.1.1", dcm.StateReady)
	s1 := ep("shop-1", "127.0.2.1", dcm.StateReady)
	base := desiredAll(desiredBackend(web, a))
	st := idle(Fresh(base, caps))
	if want := []string{"be_http:_pool:1", "be_http:_pool:2", "be_passthrough:_pool:1", "be_passthrough:_pool:2", "be_reencrypt:_pool:1", "be_reencrypt:_pool:2"}; !slices.Equal(st.Pool, want) {
		t.Fatalf("fresh pool %v, want %v", st.Pool, want)
	}

	step := func(name string, d dcm.Desired, wantOps []string, wantReasons ...dcm.ReloadReason) dcm.Plan {
		t.Helper()
		p := Compute(st, d, caps)
		if got := opStrings(p.Ops); !slices.Equal(got, wantOps) {
			t.Fatalf("%s: ops\n got %q\nwant %q", name, got, wantOps)
		}
		if !slices.Equal(p.Reasons, wantReasons) {
			t.Fatalf("%s: reasons %v, want %v", name, p.Reasons, wantReasons)
		}
		if again := Compute(p.Next, d, caps); !again.Empty() {
			t.Fatalf("%s: compute(next) not empty: %q", name, opStrings(again.Ops))
		}
		st = idle(p.Next)
		return p
	}

	// A new route: servers into the spare first, then the maps.
	withShop := desiredAll(desiredBackend(web, a), desiredBackend(shop, s1))
	p := step("add", withShop, []string{
		"add-server be_http:demo:shop/shop-1:http 127.0.2.1:8080 weight 1",
		"set-state be_http:demo:shop/shop-1:http ready",
		"map-replace host_prefix +1 -0",
	})
	if p.Ops[0].Slot != "be_http:_pool:1" || p.Ops[2].Set[0] != (dcm.MapEntry{Key: "shop.example/", Backend: "be_http:demo:shop", Slot: "be_http:_pool:1", New: true}) {
		t.Fatalf("add: ops do not name the spare: %+v", p.Ops)
	}
	b, _ := st.Backend(shop.BackendName())
	if b.Name != "be_http:demo:shop" || b.Slot != "be_http:_pool:1" || !slices.Equal(st.Pool, []string{"be_http:_pool:2", "be_passthrough:_pool:1", "be_passthrough:_pool:2", "be_reencrypt:_pool:1", "be_reencrypt:_pool:2"}) {
		t.Fatalf("add: backend %s slot %s, pool %v", b.Name, b.Slot, st.Pool)
	}

	// A new path: the keys move in place, nothing else.
	moved := shop
	moved.Path, moved.PathType = "/api", dcm.PathPrefix
	step("re-key", desiredAll(desiredBackend(web, a), desiredBackend(moved, s1)), []string{
		"map-replace host_exact +1 -0",
		"map-replace host_prefix +1 -1",
	})
	// A new balance algorithm cannot be applied at runtime.
	leastconn := moved
	leastconn.Balance = dcm.BalanceLeastConn
	if p := Compute(st, desiredAll(desiredBackend(web, a), desiredBackend(leastconn, s1)), caps); !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonRouteChanged}) {
		t.Fatalf("balance change: reasons %v", p.Reasons)
	}

	// Deleted: out of the maps first, then its server to maint.
	p = step("delete", base, []string{
		"map-replace host_exact +0 -1",
		"map-replace host_prefix +0 -1",
		"set-state be_http:demo:shop/shop-1:http maint",
	})
	if b, ok := st.Backend(shop.BackendName()); !ok || !b.Retiring || p.Waiting != 1 {
		t.Fatalf("delete: backend kept %v retiring %v waiting %d", ok, b.Retiring, p.Waiting)
	}
	// Idle: deleted, and the spare goes back to the pool.
	step("release", base, []string{"del-server be_http:demo:shop/shop-1:http"})
	if _, ok := st.Backend(shop.BackendName()); ok || !slices.Equal(st.Pool, []string{"be_http:_pool:1", "be_http:_pool:2", "be_passthrough:_pool:1", "be_passthrough:_pool:2", "be_reencrypt:_pool:1", "be_reencrypt:_pool:2"}) {
		t.Fatalf("release: backend kept %v, pool %v", ok, st.Pool)
	}

	// Three new routes, two spares: one reload, which renders them all.
	var three []dcm.DesiredBackend
	for _, n := range []string{"x", "y", "z"} {
		three = append(three, desiredBackend(route(n)))
	}
	p = Compute(st, desiredAll(append(three, desiredBackend(web, a))...), caps)
	if !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonPoolExhausted}) {
		t.Fatalf("overflow: reload %v reasons %v", p.Reload, p.Reasons)
	}
	// HTTP ran out: its burst is as many spares as it has routes (4,
	// under PoolBurst); the other kinds keep their floor.
	if want := []string{"be_http:_pool:1", "be_http:_pool:2", "be_http:_pool:3", "be_http:_pool:4", "be_passthrough:_pool:1", "be_passthrough:_pool:2",
		"be_reencrypt:_pool:1", "be_reencrypt:_pool:2"}; !slices.Equal(p.Next.Pool, want) || len(p.Next.Backends) != 4 || p.Next.Backends[1].Slot != "" {
		t.Fatalf("overflow: next pool %v, want %v; backends %+v", p.Next.Pool, want, p.Next.Backends)
	}
}

// TestPoolRouteBackWhileRetiring: a route deleted and created again before
// its servers are gone gets its backend back, with no remove-then-add.
func TestPoolRouteBackWhileRetiring(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 1}
	web := route("web")
	web.Check = false
	a := ep("web-a", "127.0.1.1", dcm.StateReady)
	d := desiredAll(desiredBackend(web, a))
	st := idle(Fresh(d, caps))
	st = Compute(st, dcm.Desired{}, caps).Next // retiring, a in maint, not yet observed
	p := Compute(st, d, caps)
	if got, want := opStrings(p.Ops), []string{
		"set-state be_http:demo:web/web-a:http ready",
		"map-replace host_prefix +1 -0",
	}; !slices.Equal(got, want) || p.Reload {
		t.Fatalf("ops %q reload %v, want %q", got, p.Reload, want)
	}
	if b, _ := p.Next.Backend(web.BackendName()); b.Retiring {
		t.Fatal("the backend is still retiring")
	}
}

// TestPoolPassthrough: a passthrough route takes a spare of its own kind
// (a TCP backend) and is keyed in the SNI map only; with no passthrough
// spare left, the next reloads although HTTP spares are free.
func TestPoolPassthrough(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 1}
	web := route("web")
	web.Check = false
	db, cache := route("db"), route("cache")
	db.Kind, db.Check, cache.Kind, cache.Check = dcm.KindPassthrough, false, dcm.KindPassthrough, false
	db.Balance, cache.Balance = dcm.BalanceSource, dcm.BalanceSource
	a := ep("web-a", "127.0.1.1", dcm.StateReady)
	d1 := ep("db-1", "127.0.2.1", dcm.StateReady)
	c1 := ep("cache-1", "127.0.3.1", dcm.StateReady)
	st := idle(Fresh(desiredAll(desiredBackend(web, a)), caps))
	p := Compute(st, desiredAll(desiredBackend(web, a), desiredBackend(db, d1)), caps)
	if got, want := opStrings(p.Ops), []string{
		"add-server be_passthrough:demo:db/db-1:http 127.0.2.1:8080 weight 1",
		"set-state be_passthrough:demo:db/db-1:http ready",
		"map-replace sni +1 -0",
	}; !slices.Equal(got, want) || p.Reload {
		t.Fatalf("ops %q reload %v, want %q", got, p.Reload, want)
	}
	b, _ := p.Next.Backend(db.BackendName())
	if b.Slot != "be_passthrough:_pool:1" || !slices.Equal(p.Next.Pool, []string{"be_http:_pool:1", "be_reencrypt:_pool:1"}) {
		t.Fatalf("slot %q, pool %v", b.Slot, p.Next.Pool)
	}
	p = Compute(idle(p.Next), desiredAll(desiredBackend(web, a), desiredBackend(db, d1), desiredBackend(cache, c1)), caps)
	if !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonPoolExhausted}) {
		t.Fatalf("second passthrough route: reload %v reasons %v", p.Reload, p.Reasons)
	}
}

// TestPoolOnlyInDynamicMode: slots and reload modes, and dynamic mode
// without add server, keep reloading for routes and render no spares.
func TestPoolOnlyInDynamicMode(t *testing.T) {
	for _, caps := range []dcm.Caps{
		{Mode: dcm.ModeSlots, Slots: 2, AddServer: true, Pool: 4},
		{Mode: dcm.ModeReload, AddServer: true, Pool: 4},
		{Mode: dcm.ModeDynamic, AddServer: false, Pool: 4},
		{Mode: dcm.ModeDynamic, AddServer: true},
	} {
		st := Fresh(dcm.Desired{}, caps)
		if len(st.Pool) != 0 {
			t.Errorf("%+v: fresh pool %v", caps, st.Pool)
		}
		if p := Compute(st, desiredOf(route("web")), caps); !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonRouteAdded}) {
			t.Errorf("%+v: reasons %v, want route-added", caps, p.Reasons)
		}
	}
}

// TestPoolRecyclesRenderedBackends: a route rendered under its own name at
// the last reload has no spare to give back; once deleted and empty, its
// own backend joins the pool and carries the next new route under its old
// HAProxy name, while the route is still known by its own. A route that
// comes back finds its own backend. A backend not rendered as spares are
// (another balance) does not join.
func TestPoolRecyclesRenderedBackends(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 1}
	web, shop, lc := route("web"), route("shop"), route("lc")
	lc.Balance = dcm.BalanceLeastConn
	a := ep("web-a", "127.0.1.1", dcm.StateReady)
	s1 := ep("shop-1", "127.0.2.1", dcm.StateReady)
	l1 := ep("lc-1", "127.0.3.1", dcm.StateReady)
	all := desiredAll(desiredBackend(web, a), desiredBackend(shop, s1), desiredBackend(lc, l1))
	st := idle(Fresh(all, caps))
	apply := func(what string, d dcm.Desired) dcm.Plan {
		t.Helper()
		checkPlan(t, what, st, d, caps)
		p := Compute(st, d, caps)
		if p.Reload {
			t.Fatalf("%s: reload %v", what, p.Reasons)
		}
		st = idle(p.Next)
		return p
	}
	onlyWeb := desiredAll(desiredBackend(web, a))
	apply("delete shop and lc", onlyWeb)
	apply("their servers go", onlyWeb)
	if want := []string{"be_http:_pool:1", "be_http:demo:shop", "be_passthrough:_pool:1", "be_reencrypt:_pool:1"}; !slices.Equal(st.Pool, want) {
		t.Fatalf("pool %v, want %v (lc's leastconn backend is no spare)", st.Pool, want)
	}

	x, y := route("x"), route("y")
	withXY := desiredAll(desiredBackend(web, a), desiredBackend(x, ep("x-1", "127.0.4.1", dcm.StateReady)), desiredBackend(y, ep("y-1", "127.0.5.1", dcm.StateReady)))
	p := apply("two new routes", withXY)
	bx, _ := st.Backend(x.BackendName())
	by, _ := st.Backend(y.BackendName())
	if bx.Slot != "be_http:_pool:1" || by.Slot != "be_http:demo:shop" || !slices.Equal(st.Pool, []string{"be_passthrough:_pool:1", "be_reencrypt:_pool:1"}) {
		t.Fatalf("x in %q, y in %q, pool %v", bx.Slot, by.Slot, st.Pool)
	}
	for _, op := range p.Ops {
		if op.Backend == y.BackendName() && op.ProxyName() != "be_http:demo:shop" {
			t.Fatalf("op %s does not name y's HAProxy backend", op)
		}
	}
	if e := routing.Tables(st.Backends)[dcm.MapHostPrefix]; !slices.Contains(e, dcm.MapEntry{Key: "y.example/", Backend: "be_http:demo:y", Slot: "be_http:demo:shop"}) {
		t.Fatalf("maps %+v", e)
	}

	// shop comes back while its backend carries y: it needs a spare, and
	// there is none left.
	if p := Compute(st, desiredAll(append(derefAll(withXY.Backends), desiredBackend(shop, s1))...), caps); !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonPoolExhausted}) {
		t.Fatalf("shop back with the pool empty: reasons %v", p.Reasons)
	}
	// y goes, and shop comes back afterwards: into its own backend.
	withX := desiredAll(desiredBackend(web, a), desiredBackend(x, ep("x-1", "127.0.4.1", dcm.StateReady)))
	apply("delete y", withX)
	apply("y's server goes", withX)
	apply("shop back", desiredAll(append(derefAll(withX.Backends), desiredBackend(shop, s1))...))
	if b, _ := st.Backend(shop.BackendName()); b.Slot != "" || b.ProxyName() != "be_http:demo:shop" || !slices.Equal(st.Pool, []string{"be_passthrough:_pool:1", "be_reencrypt:_pool:1"}) {
		t.Fatalf("shop back in %q, pool %v", b.ProxyName(), st.Pool)
	}
}

// TestFreshPoolGrowsWithRoutes: a render gives each kind a tenth of the
// routes that would take its spares, never fewer than the configured
// floor (for HTTP, with the Gateway's spares on top), and no sticky
// spares when they are off.
func TestFreshPoolGrowsWithRoutes(t *testing.T) {
	var routes []dcm.DesiredBackend
	add := func(n int, kind dcm.RouteKind, sticky bool) {
		for i := range n {
			r := route(fmt.Sprintf("%s-%v-%d", kind, sticky, i))
			r.Kind, r.Sticky = kind, sticky
			routes = append(routes, desiredBackend(r))
		}
	}
	add(250, dcm.KindHTTP, false)
	add(60, dcm.KindEdge, false) // HTTP spares too
	add(35, dcm.KindHTTP, true)
	add(5, dcm.KindPassthrough, false)
	desired := desiredAll(routes...)
	count := func(pool []string) map[dcm.RouteKind]int {
		out := map[dcm.RouteKind]int{}
		for _, name := range pool {
			k, _ := routing.SpareKind(name)
			out[k]++
		}
		return out
	}
	for _, tc := range []struct {
		name string
		caps dcm.Caps
		want map[dcm.RouteKind]int
	}{
		{"floor 10", dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 10, StickyPool: 10},
			map[dcm.RouteKind]int{dcm.KindHTTP: 31, dcm.KindPassthrough: 10, dcm.KindReencrypt: 10, routing.PoolSticky: 10}},
		{"floor 2, sticky share", dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, StickyPool: 2},
			map[dcm.RouteKind]int{dcm.KindHTTP: 31, dcm.KindPassthrough: 2, dcm.KindReencrypt: 2, routing.PoolSticky: 3}},
		{"no sticky spares", dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 10},
			map[dcm.RouteKind]int{dcm.KindHTTP: 31, dcm.KindPassthrough: 10, dcm.KindReencrypt: 10}},
		// Gateway routes are HTTP: their spares raise HTTP's floor only.
		{"gateway spares", dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 10, GatewayPool: 64},
			map[dcm.RouteKind]int{dcm.KindHTTP: 74, dcm.KindPassthrough: 10, dcm.KindReencrypt: 10}},
		{"gateway spares under the share", dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 10, GatewayPool: 10},
			map[dcm.RouteKind]int{dcm.KindHTTP: 31, dcm.KindPassthrough: 10, dcm.KindReencrypt: 10}},
		{"no pool", dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, GatewayPool: 64}, map[dcm.RouteKind]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := count(Fresh(desired, tc.caps).Pool); !maps.Equal(got, tc.want) {
				t.Errorf("spares by kind %v, want %v", got, tc.want)
			}
		})
	}
}
