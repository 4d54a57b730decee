package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func edgeRoute(name, host, version string) dcm.Route {
	r := route(name)
	r.Kind, r.Host, r.Check = dcm.KindEdge, host, false
	r.TLS = &dcm.TLSRef{Secret: "demo/" + name + "-tls", Version: version}
	return r
}

// TestCertLifecycle: an edge route comes with its certificate (added before
// the maps route its host), the certificate is rotated in one op without a
// reload, and goes after the maps stop routing the host. Without runtime
// certificates every certificate change reloads with cert-changed.
func TestCertLifecycle(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true}
	a := ep("web-a", "127.0.1.1", dcm.StateReady)
	base := desiredAll(desiredBackend(route("web"), ep("web-b", "127.0.1.2", dcm.StateReady)))
	st := idle(Fresh(base, caps))
	step := func(name string, caps dcm.Caps, d dcm.Desired, wantOps []string, wantReasons ...dcm.ReloadReason) {
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
	}
	v1 := desiredAll(*base.Backends[0], desiredBackend(edgeRoute("shop", "shop.test", "aa"), a))
	step("edge route added", caps, v1, []string{
		"cert-add shop.test demo/shop-tls@aa",
		"add-server be_edge:demo:shop/web-a:http 127.0.1.1:8080 weight 1",
		"set-state be_edge:demo:shop/web-a:http ready",
		"map-replace host_prefix +1 -0",
	})
	if got := st.Backends[0].Slot; got != "be_http:_pool:1" {
		t.Fatalf("edge route carried by %q, want an HTTP spare", got)
	}
	v2 := desiredAll(*base.Backends[0], desiredBackend(edgeRoute("shop", "shop.test", "bb"), a))
	step("rotated", caps, v2, []string{"cert-update shop.test demo/shop-tls@bb"})
	invalid := desiredAll(*base.Backends[0], desiredBackend(edgeRoute("shop", "shop.test", ""), a))
	step("secret turned invalid: the default certificate serves", caps, invalid, []string{"cert-del shop.test demo/shop-tls@bb"})
	step("valid again", caps, v2, []string{"cert-add shop.test demo/shop-tls@bb"})
	step("edge route removed", caps, base, []string{
		"map-replace host_prefix +0 -1",
		"set-state be_edge:demo:shop/web-a:http maint",
		"cert-del shop.test demo/shop-tls@bb",
	})

	reloadCaps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	st = idle(Fresh(v1, reloadCaps))
	step("rotated without runtime certificates", reloadCaps, v2, nil, dcm.ReasonCertChanged)
}

// TestSimulateRotateCert: a what-if rotation of a Secret is one cert-update
// per host of its edge routes, no reload, with runtime certificates; a
// reload for cert-changed without; an unknown Secret is an error.
func TestSimulateRotateCert(t *testing.T) {
	shop, api := edgeRoute("shop", "shop.test", "aa"), edgeRoute("api", "api.test", "aa")
	api.TLS.Secret = shop.TLS.Secret // one Secret, two hosts
	d := desiredAll(desiredBackend(route("web"), ep("web-a", "127.0.1.1", dcm.StateReady)),
		desiredBackend(shop, ep("shop-a", "127.0.2.1", dcm.StateReady)), desiredBackend(api, ep("api-a", "127.0.3.1", dcm.StateReady)))
	w := []dcm.WhatIf{{Kind: dcm.WhatIfRotateCert, Namespace: "demo", Secret: shop.TLS.Secret}}

	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true}
	sim := Simulate(snapshotOf(d, caps), w, dcm.MemoryCosts{})
	if len(sim.Errors) > 0 || sim.Reloads != 0 || len(sim.Steps) != 1 || sim.Ops != 2 {
		t.Fatalf("rotation: %+v", sim)
	}
	for _, o := range sim.Steps[0].Ops {
		if o.Kind != dcm.OpCertUpdate || o.Cert.Version == "aa" || dcm.ValidateCertVersion("v", o.Cert.Version) != nil {
			t.Errorf("op %s", o)
		}
	}
	if want := []string{api.BackendName(), shop.BackendName()}; !slices.Equal(sim.Backends, want) {
		t.Errorf("touched %v, want %v", sim.Backends, want)
	}
	again := Simulate(snapshotOf(d, caps), w, dcm.MemoryCosts{})
	if a, b := opStrings(sim.Steps[0].Ops), opStrings(again.Steps[0].Ops); !slices.Equal(a, b) {
		t.Errorf("not deterministic: %q, %q", a, b)
	}

	reload := dcm.Caps{Mode: dcm.ModeReload, AddServer: true}
	if sim := Simulate(snapshotOf(d, reload), w, dcm.MemoryCosts{}); sim.Reloads != 1 || !slices.Equal(sim.Reasons, []dcm.ReloadReason{dcm.ReasonCertChanged}) {
		t.Errorf("reload mode: %+v", sim)
	}
	for _, secret := range []string{"demo/unknown", "bad", "demo/x;y"} {
		sim := Simulate(snapshotOf(d, caps), []dcm.WhatIf{{Kind: dcm.WhatIfRotateCert, Secret: secret}}, dcm.MemoryCosts{})
		if len(sim.Errors) != 1 || len(sim.Steps) != 0 {
			t.Errorf("secret %q: %+v", secret, sim)
		}
	}
}

// TestCertChangeNamedWithOtherReasons: without runtime certificates, a
// rotation that comes in the same sync as another reason to reload is
// named among the reasons; with them, it is not a reason (the reload
// writes it anyway).
func TestCertChangeNamedWithOtherReasons(t *testing.T) {
	a := ep("shop-a", "127.0.1.1", dcm.StateReady)
	b := ep("shop-b", "127.0.1.2", dcm.StateReady)
	for _, tt := range []struct {
		caps dcm.Caps
		want []dcm.ReloadReason
	}{
		{dcm.Caps{Mode: dcm.ModeReload, AddServer: true}, []dcm.ReloadReason{dcm.ReasonCertChanged, dcm.ReasonEndpointsChange}},
		{dcm.Caps{Mode: dcm.ModeSlots, AddServer: true, Slots: 1}, []dcm.ReloadReason{dcm.ReasonCertChanged, dcm.ReasonSlotsExhausted}},
		{dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 1, RuntimeCerts: true}, []dcm.ReloadReason{dcm.ReasonRouteChanged}},
	} {
		st := idle(Fresh(desiredAll(desiredBackend(edgeRoute("shop", "shop.test", "aa"), a)), tt.caps))
		next := edgeRoute("shop", "shop.test", "bb")
		if tt.caps.Mode == dcm.ModeDynamic {
			next.Balance = dcm.BalanceLeastConn // something only a reload changes
		}
		d := desiredAll(desiredBackend(next, a, b))
		if tt.caps.Mode == dcm.ModeSlots {
			d = desiredAll(desiredBackend(next, a, b, ep("shop-c", "127.0.1.3", dcm.StateReady)))
		}
		if tt.caps.Mode != dcm.ModeDynamic { // checkPlan holds pooled mode to reloading only for an empty pool
			checkPlan(t, string(tt.caps.Mode), st, d, tt.caps)
		}
		if p := Compute(st, d, tt.caps); !slices.Equal(p.Reasons, tt.want) {
			t.Errorf("%s: reasons %v, want %v", tt.caps.Mode, p.Reasons, tt.want)
		}
	}
}

// TestCertSharedLosesH2: a second route serving the same certificate takes
// HTTP/2 from the first (dcm.Cert.H2): its crt-list line is listed again,
// at runtime, before the new route's; when the second goes, the first
// gets h2 back the same way. No reload either time.
func TestCertSharedLosesH2(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true}
	shop := desiredBackend(edgeRoute("shop", "shop.test", "aa"), ep("shop-a", "127.0.1.1", dcm.StateReady))
	one := desiredAll(shop)
	st := idle(Fresh(one, caps))
	if c := dcm.CertsOf(st.Backends); len(c) != 1 || !c[0].H2 {
		t.Fatalf("certificates %+v: want shop.test with h2", c)
	}
	shared := edgeRoute("blog", "blog.test", "aa")
	shared.TLS.Secret = "demo/shop-tls"
	two := desiredAll(shop, desiredBackend(shared, ep("blog-a", "127.0.1.2", dcm.StateReady)))
	p := Compute(st, two, caps)
	var certOps []string
	for _, o := range p.Ops {
		if IsCertOp(o) {
			certOps = append(certOps, o.String()+" h2="+map[bool]string{true: "yes", false: "no"}[o.Cert.H2])
		}
	}
	want := []string{"cert-add blog.test demo/shop-tls@aa h2=no", "cert-del shop.test demo/shop-tls@aa h2=yes", "cert-add shop.test demo/shop-tls@aa h2=no"}
	if !slices.Equal(certOps, want) || p.Reload {
		t.Fatalf("shared: cert ops %q (reload %v), want %q and no reload", certOps, p.Reload, want)
	}
	if again := Compute(p.Next, two, caps); !again.Empty() {
		t.Fatalf("compute(next) not empty: %q", opStrings(again.Ops))
	}
	back := Compute(idle(p.Next), one, caps)
	if c := dcm.CertsOf(back.Next.Backends); len(c) != 1 || !c[0].H2 || back.Reload {
		t.Fatalf("unshared: certificates %+v (reload %v), want shop.test with h2 again, no reload", c, back.Reload)
	}
}
