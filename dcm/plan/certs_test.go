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
	v1 := desiredAll(base.Backends[0], desiredBackend(edgeRoute("shop", "shop.test", "aa"), a))
	step("edge route added", caps, v1, []string{
		"cert-add shop.test demo/shop-tls@aa",
		"add-server be_edge:demo:shop/web-a:http 127.0.1.1:8080 weight 1",
		"set-state be_edge:demo:shop/web-a:http ready",
		"map-replace host_prefix +1 -0",
	})
	if got := st.Backends[0].Slot; got != "be_http:_pool:1" {
		t.Fatalf("edge route carried by %q, want an HTTP spare", got)
	}
	v2 := desiredAll(base.Backends[0], desiredBackend(edgeRoute("shop", "shop.test", "bb"), a))
	step("rotated", caps, v2, []string{"cert-update shop.test demo/shop-tls@bb"})
	invalid := desiredAll(base.Backends[0], desiredBackend(edgeRoute("shop", "shop.test", ""), a))
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
