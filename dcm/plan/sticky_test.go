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

// TestStickyRouteSkipsPool: spares are rendered without cookies, so a new
// sticky route reloads (route-added) instead of taking one, and turning
// stickiness on or off is a route change.
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
