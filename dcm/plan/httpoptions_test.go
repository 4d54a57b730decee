package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestHTTPOptionsChange: a route's HTTP options change with one replace of
// their setting map and nothing else in pooled dynamic mode (no reload),
// and reload as a re-keyed route does where routes are not re-keyed at
// runtime.
func TestHTTPOptionsChange(t *testing.T) {
	edge := route("shop")
	edge.Kind, edge.TLS = dcm.KindEdge, &dcm.TLSRef{Secret: "demo/shop-tls", Version: "aa"}
	s1 := ep("shop-1", "127.0.2.1", dcm.StateReady)
	with := func(o dcm.HTTPOptions) dcm.Desired {
		r := edge
		r.HTTP = o
		return desiredAll(desiredBackend(r, s1))
	}
	pooled := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true}
	st := idle(Fresh(with(dcm.HTTPOptions{}), pooled))
	for _, step := range []struct {
		o   dcm.HTTPOptions
		ops []string
	}{
		{dcm.HTTPOptions{Forwarded: dcm.ForwardReplace}, []string{"map-replace forwarded +1 -0"}},
		{dcm.HTTPOptions{Forwarded: dcm.ForwardReplace, TimeoutMillis: 2000}, []string{"map-replace timeout_server +1 -0"}},
		{dcm.HTTPOptions{Forwarded: dcm.ForwardReplace, TimeoutMillis: 3000, TunnelMillis: 60000},
			[]string{"map-replace timeout_server +1 -0", "map-replace timeout_tunnel +1 -0"}},
		{dcm.HTTPOptions{HSTS: "max-age=1;preload"},
			[]string{"map-replace forwarded +0 -1", "map-replace timeout_server +0 -1", "map-replace timeout_tunnel +0 -1", "map-replace hsts +1 -0"}},
		{dcm.HTTPOptions{HSTS: "max-age=1;preload"}, nil},
		{dcm.HTTPOptions{HSTS: "max-age=1;preload", RewriteTarget: "/"}, []string{"map-replace rewrite +1 -0"}},
		{dcm.HTTPOptions{HSTS: "max-age=1;preload", RewriteTarget: "/v2"}, []string{"map-replace rewrite +1 -0"}},
	} {
		d := with(step.o)
		p := Compute(st, d, pooled)
		if got := opStrings(p.Ops); p.Reload || !slices.Equal(got, step.ops) {
			t.Fatalf("%+v: reload %v, ops %q, want %q", step.o, p.Reload, got, step.ops)
		}
		if again := Compute(p.Next, d, pooled); !again.Empty() {
			t.Fatalf("%+v: compute(next) not empty: %q", step.o, opStrings(again.Ops))
		}
		st = idle(p.Next)
	}

	slots := dcm.Caps{Mode: dcm.ModeSlots, AddServer: true, Slots: 4, RuntimeCerts: true}
	st = idle(Fresh(with(dcm.HTTPOptions{}), slots))
	p := Compute(st, with(dcm.HTTPOptions{TimeoutMillis: 2000}), slots)
	if !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonRouteChanged}) {
		t.Errorf("slots mode: reload %v %v, want route-changed", p.Reload, p.Reasons)
	}
}

// TestPassthroughTimeoutReloads: a passthrough route's timeouts live in its
// TCP backend: a change, and a new passthrough route with one, reload with
// passthrough-timeout even with free spares; a change of its endpoints
// alone still does not.
func TestPassthroughTimeoutReloads(t *testing.T) {
	db := route("db")
	db.Kind, db.Path, db.Balance = dcm.KindPassthrough, "/", dcm.BalanceSource
	s1 := ep("db-1", "127.0.2.1", dcm.StateReady)
	with := func(ms int64, eps ...dcm.Endpoint) dcm.Desired {
		r := db
		r.HTTP.TimeoutMillis = ms
		return desiredAll(desiredBackend(r, eps...))
	}
	pooled := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true}
	st := idle(Fresh(with(5000, s1), pooled))
	if p := Compute(st, with(5000, s1, ep("db-2", "127.0.2.2", dcm.StateReady)), pooled); p.Reload {
		t.Errorf("an endpoint added reloads: %v", p.Reasons)
	}
	want := []dcm.ReloadReason{dcm.ReasonPassthroughTimeout}
	if p := Compute(st, with(7000, s1), pooled); !p.Reload || !slices.Equal(p.Reasons, want) {
		t.Errorf("timeout changed: reload %v %v, want %v", p.Reload, p.Reasons, want)
	}
	if p := Compute(st, with(0, s1), pooled); !p.Reload || !slices.Equal(p.Reasons, want) {
		t.Errorf("timeout removed: reload %v %v, want %v", p.Reload, p.Reasons, want)
	}
	empty := idle(Fresh(dcm.Desired{}, pooled))
	if p := Compute(empty, with(5000, s1), pooled); !p.Reload || !slices.Equal(p.Reasons, want) {
		t.Errorf("new route with a timeout: reload %v %v, want %v", p.Reload, p.Reasons, want)
	}
	if p := Compute(empty, with(0, s1), pooled); p.Reload {
		t.Errorf("new route without a timeout reloads: %v", p.Reasons)
	}
}

// TestCookieSettingsChange: a sticky route's cookie name and SameSite are
// cookie maps' entries: a custom name, and SameSite on a secure route,
// change by a map replace and no reload; a route without stickiness has
// none.
func TestCookieSettingsChange(t *testing.T) {
	edge := route("shop")
	edge.Kind, edge.TLS, edge.Insecure, edge.Sticky = dcm.KindEdge, &dcm.TLSRef{Secret: "demo/shop-tls", Version: "aa"}, dcm.InsecureRedirect, true
	s1 := ep("shop-1", "127.0.2.1", dcm.StateReady)
	with := func(o dcm.HTTPOptions) dcm.Desired {
		r := edge
		r.HTTP = o
		return desiredAll(desiredBackend(r, s1))
	}
	pooled := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, StickyPool: 1, RuntimeCerts: true}
	st := idle(Fresh(with(dcm.HTTPOptions{}), pooled))
	for _, step := range []struct {
		o   dcm.HTTPOptions
		ops []string
	}{
		{dcm.HTTPOptions{CookieName: "shop_session"}, []string{"map-replace cookie_name +1 -0"}},
		{dcm.HTTPOptions{CookieName: "shop_session", CookieSameSite: dcm.SameSiteLax}, []string{"map-replace cookie_samesite +1 -0"}},
		{dcm.HTTPOptions{}, []string{"map-replace cookie_name +1 -0", "map-replace cookie_samesite +1 -0"}},
	} {
		d := with(step.o)
		p := Compute(st, d, pooled)
		if got := opStrings(p.Ops); p.Reload || !slices.Equal(got, step.ops) {
			t.Fatalf("%+v: reload %v %v, ops %q, want %q", step.o, p.Reload, p.Reasons, got, step.ops)
		}
		if again := Compute(p.Next, d, pooled); !again.Empty() {
			t.Fatalf("%+v: compute(next) not empty: %q", step.o, opStrings(again.Ops))
		}
		st = idle(p.Next)
	}
}
