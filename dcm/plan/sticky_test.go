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
