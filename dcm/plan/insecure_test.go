package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// TestInsecurePolicyChange: a TLS route's insecure policy or redirect code
// changes with one replace of the insecure map and nothing else where
// routes are re-keyed at runtime (pooled dynamic mode), and reloads, as a
// re-keyed route does, where they are not; a new route with Redirect brings
// its entry along with its routing keys, keyed by the spare that carries it.
func TestInsecurePolicyChange(t *testing.T) {
	edge := route("shop")
	edge.Kind, edge.TLS = dcm.KindEdge, &dcm.TLSRef{Secret: "demo/shop-tls", Version: "aa"}
	s1 := ep("shop-1", "127.0.2.1", dcm.StateReady)
	with := func(p dcm.InsecurePolicy, code int) dcm.Desired {
		r := edge
		r.Insecure, r.RedirectCode = p, code
		return desiredAll(desiredBackend(r, s1))
	}
	pooled := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true}
	st := idle(Fresh(with(dcm.InsecureRedirect, 0), pooled))
	if got := routing.Tables(st.Backends)[dcm.MapInsecure]; len(got) != 1 || got[0].Key != edge.BackendName() || got[0].Value() != "redirect-302" {
		t.Fatalf("insecure map %+v", got)
	}
	for _, step := range []struct {
		policy dcm.InsecurePolicy
		code   int
		ops    []string
	}{
		{dcm.InsecureRedirect, 0, nil},
		{dcm.InsecureRedirect, 302, nil}, // the default, spelt out
		{dcm.InsecureAllow, 0, []string{"map-replace insecure +0 -1"}},
		{"", 0, nil}, // empty is Allow
		{dcm.InsecureNone, 0, []string{"map-replace insecure +1 -0"}},
		{dcm.InsecureRedirect, 308, []string{"map-replace insecure +1 -0"}},
	} {
		d := with(step.policy, step.code)
		p := Compute(st, d, pooled)
		if got := opStrings(p.Ops); p.Reload || !slices.Equal(got, step.ops) {
			t.Fatalf("%q %d: reload %v, ops %q, want %q", step.policy, step.code, p.Reload, got, step.ops)
		}
		if again := Compute(p.Next, d, pooled); !again.Empty() {
			t.Fatalf("%q %d: compute(next) not empty: %q", step.policy, step.code, opStrings(again.Ops))
		}
		st = idle(p.Next)
	}

	// A new route with Redirect takes a spare: its entry is keyed by it.
	api := edge
	api.Name, api.Path, api.Insecure = "api", "/api", dcm.InsecureRedirect
	d := desiredAll(desiredBackend(edge, s1), desiredBackend(api, ep("api-1", "127.0.3.1", dcm.StateReady)))
	p := Compute(st, d, pooled)
	if p.Reload {
		t.Fatalf("new route reloads: %v", p.Reasons)
	}
	b, _ := p.Next.Backend(api.BackendName())
	var entry dcm.MapEntry
	for _, e := range routing.Tables(p.Next.Backends)[dcm.MapInsecure] {
		if e.Backend == api.BackendName() {
			entry = e
		}
	}
	if b.Slot == "" || entry.Key != b.Slot || entry.Value() != "redirect-302" {
		t.Fatalf("new route on %q: insecure entry %+v", b.Slot, entry)
	}

	for _, caps := range []dcm.Caps{{Mode: dcm.ModeSlots, Slots: 2, AddServer: true}, {Mode: dcm.ModeReload, AddServer: true}} {
		st := idle(Fresh(with(dcm.InsecureRedirect, 0), caps))
		p := Compute(st, with(dcm.InsecureNone, 0), caps)
		if !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonRouteChanged}) {
			t.Errorf("%s: reload %v, reasons %v, want route-changed", caps.Mode, p.Reload, p.Reasons)
		}
	}
}
