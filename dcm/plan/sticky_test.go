package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestStickyAddServer: a server added to a sticky backend gets its dynamic
// cookie before it is made ready; a plain backend's does not need one.
func TestStickyAddServer(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	for _, sticky := range []bool{true, false} {
		r := route("web")
		r.Check, r.Sticky = false, sticky
		a, b := ep("web-a", "127.0.1.1", dcm.StateReady), ep("web-b", "127.0.1.2", dcm.StateReady)
		st := idle(Fresh(desiredOf(r, a), caps))
		p := Compute(st, desiredOf(r, a, b), caps)
		if p.Reload {
			t.Fatalf("sticky=%v: reload %v", sticky, p.Reasons)
		}
		var kinds []dcm.OpKind
		for _, o := range p.Ops {
			kinds = append(kinds, o.Kind)
		}
		want := []dcm.OpKind{dcm.OpAddServer, dcm.OpSetState}
		if sticky {
			want = []dcm.OpKind{dcm.OpAddServer, dcm.OpDynamicCookie, dcm.OpSetState}
		}
		if !slices.Equal(kinds, want) {
			t.Errorf("sticky=%v: ops %v, want %v", sticky, kinds, want)
		}
		if _, err := Apply(DataPlaneOf(st), p.Ops); err != nil {
			t.Fatalf("sticky=%v: apply: %v", sticky, err)
		}
		if q := Compute(p.Next, desiredOf(r, a, b), caps); len(q.Ops) > 0 || q.Reload {
			t.Errorf("sticky=%v: not idempotent: %v", sticky, q.Ops)
		}
	}
}

// TestStickyRouteSkipsPool: spares are rendered without cookies, so
// without sticky spares a new sticky route reloads (route-added) instead
// of taking one, and turning stickiness on is a route change.
func TestStickyRouteSkipsPool(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2}
	web := route("web")
	st := idle(Fresh(desiredOf(web), caps))
	shop := route("shop")
	shop.Sticky = true
	p := Compute(st, desiredAll(desiredBackend(web), desiredBackend(shop)), caps)
	if !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonRouteAdded}) {
		t.Errorf("new sticky route: reload %v %v, want route-added", p.Reload, p.Reasons)
	}
	web.Sticky = true
	p = Compute(st, desiredOf(web), caps)
	if !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonRouteChanged}) {
		t.Errorf("sticky turned on: reload %v %v, want route-changed", p.Reload, p.Reasons)
	}
}

// TestStickyRouteTakesStickySpare: with sticky spares, a new sticky route
// takes one (never a plain one), gets its key before its servers, and its
// servers their cookies; the plan applies and is idempotent.
func TestStickyRouteTakesStickySpare(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 1, StickyPool: 1}
	web := route("web")
	st := idle(Fresh(desiredOf(web), caps))
	if want := []string{"be_http:_pool:1", "be_passthrough:_pool:1", "be_reencrypt:_pool:1", "be_sticky:_pool:1"}; !slices.Equal(st.Pool, want) {
		t.Fatalf("fresh pool %v, want %v", st.Pool, want)
	}
	shop := route("shop")
	shop.Sticky, shop.Check = true, false
	want := desiredAll(desiredBackend(web), desiredBackend(shop, ep("shop-1", "127.0.2.1", dcm.StateReady)))
	p := Compute(st, want, caps)
	if p.Reload {
		t.Fatalf("reload %v", p.Reasons)
	}
	var kinds []string
	for _, o := range p.Ops {
		if o.Slot != "be_sticky:_pool:1" && o.Kind != dcm.OpMapReplace {
			t.Errorf("op %s on %q, want the sticky spare", o.Kind, o.Slot)
		}
		kinds = append(kinds, string(o.Kind))
	}
	if got, w := kinds, []string{"cookie-key", "add-server", "dynamic-cookie", "set-state", "map-replace", "map-replace"}; !slices.Equal(got, w) {
		t.Errorf("ops %v, want %v", got, w)
	}
	if !slices.Equal(p.Next.Pool, []string{"be_http:_pool:1", "be_passthrough:_pool:1", "be_reencrypt:_pool:1"}) {
		t.Errorf("pool after %v, want the plain spares left", p.Next.Pool)
	}
	if _, err := Apply(DataPlaneOf(st), p.Ops); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if q := Compute(p.Next, want, caps); len(q.Ops) > 0 || q.Reload {
		t.Errorf("not idempotent: %v", q.Ops)
	}
	// A second sticky route finds no sticky spare: it reloads rather than
	// take the plain one.
	api := route("api")
	api.Sticky = true
	if q := Compute(p.Next, desiredAll(desiredBackend(web), desiredBackend(shop, ep("shop-1", "127.0.2.1", dcm.StateReady)), desiredBackend(api)), caps); !q.Reload {
		t.Errorf("a sticky route took a plain spare: %v", q.Ops)
	}
}

// TestStickyBackendIsNoSpare: a sticky route's own backend is rendered with
// its cookie, so once the route is deleted and its servers are gone it does
// not join the pool (a plain route in it would get the cookie).
func TestStickyBackendIsNoSpare(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 1, StickyPool: 1}
	web, shop := route("web"), route("shop")
	shop.Sticky = true
	a := ep("web-a", "127.0.1.1", dcm.StateReady)
	st := idle(Fresh(desiredAll(desiredBackend(web, a), desiredBackend(shop, ep("shop-1", "127.0.2.1", dcm.StateReady))), caps))
	onlyWeb := desiredAll(desiredBackend(web, a))
	for _, step := range []string{"delete shop", "its server goes"} {
		checkPlan(t, step, st, onlyWeb, caps)
		p := Compute(st, onlyWeb, caps)
		if p.Reload {
			t.Fatalf("%s: reload %v", step, p.Reasons)
		}
		st = idle(p.Next)
	}
	if want := []string{"be_http:_pool:1", "be_passthrough:_pool:1", "be_reencrypt:_pool:1", "be_sticky:_pool:1"}; !slices.Equal(st.Pool, want) {
		t.Fatalf("pool %v, want %v", st.Pool, want)
	}
}

// TestStickyToggleMovesBetweenSpares: stickiness turned on moves a route
// from its own backend to a sticky spare, and off again back to a plain
// one, without a reload: the new backend's servers and the maps first,
// then the old backend, known as its MovedName, retires beside it and
// returns to the pool once its servers are deleted. Every plan applies
// and is idempotent.
func TestStickyToggleMovesBetweenSpares(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 1, StickyPool: 1}
	web := route("web")
	web.Check = false
	a := ep("web-a", "127.0.1.1", dcm.StateReady)
	st := idle(Fresh(desiredOf(web, a), caps))
	own := web.BackendName()
	step := func(what string, sticky bool, wantSlot string, wantPool []string) {
		t.Helper()
		web.Sticky = sticky
		want := desiredOf(web, a)
		checkPlan(t, what, st, want, caps)
		p := Compute(st, want, caps)
		if p.Reload {
			t.Fatalf("%s: reload %v", what, p.Reasons)
		}
		moved, ok := p.Next.Backend(dcm.MovedName(st.Backends[0].ProxyName()))
		if !ok || !moved.Retiring || moved.Slot != st.Backends[0].ProxyName() || len(moved.Servers) != 1 || moved.Servers[0].State != dcm.StateMaint {
			t.Fatalf("%s: the old backend %+v %v, want it retiring as %s with its server in maint", what, moved, ok, dcm.MovedName(st.Backends[0].ProxyName()))
		}
		if b, _ := p.Next.Backend(own); b.Slot != wantSlot || b.Route.Sticky != sticky || len(b.Servers) != 1 {
			t.Fatalf("%s: the route's backend %+v, want it on %q", what, b, wantSlot)
		}
		if last := p.Ops[len(p.Ops)-1]; last.Kind != dcm.OpSetState || last.Backend != moved.Name || last.Slot != moved.Slot {
			t.Errorf("%s: last op %s, want the old server's maint after the maps", what, last)
		}
		// The old server idle: deleted, and its backend back in the pool.
		st = idle(p.Next)
		checkPlan(t, what+", old server idle", st, want, caps)
		p = Compute(st, want, caps)
		if p.Reload || len(p.Ops) != 1 || p.Ops[0].Kind != dcm.OpDelServer {
			t.Fatalf("%s, old server idle: %v %v, want one del server", what, p.Reasons, p.Ops)
		}
		if !slices.Equal(p.Next.Pool, wantPool) || len(p.Next.Backends) != 1 {
			t.Fatalf("%s: pool %v and backends %d, want %v and one", what, p.Next.Pool, len(p.Next.Backends), wantPool)
		}
		st = idle(p.Next)
	}
	step("sticky on", true, "be_sticky:_pool:1", []string{"be_http:_pool:1", own, "be_passthrough:_pool:1", "be_reencrypt:_pool:1"})
	// Its own backend, a plain one, is back in the pool: the route takes it.
	step("sticky off", false, "", []string{"be_http:_pool:1", "be_passthrough:_pool:1", "be_reencrypt:_pool:1", "be_sticky:_pool:1"})
	// Another sticky route holds the sticky spare: turning stickiness on
	// finds none free, and reloads for it.
	shop := route("shop")
	shop.Sticky = true
	withShop := func() dcm.Desired { return desiredAll(desiredBackend(web, a), desiredBackend(shop)) }
	p := Compute(st, withShop(), caps)
	if p.Reload {
		t.Fatalf("shop: reload %v", p.Reasons)
	}
	st = idle(p.Next)
	web.Sticky = true
	if p := Compute(st, withShop(), caps); !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonPoolExhausted}) {
		t.Errorf("sticky on without a sticky spare: reload %v %v, want pool-exhausted", p.Reload, p.Reasons)
	}
}
