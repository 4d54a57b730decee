package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestDefaultCertPlan: the default certificate is a planner input. A new
// version (the self-signed one replaced by a Secret's, or a Secret
// rotated) is one cert-update on the default with runtime certificates,
// no reload, and the plan converges; without them it reloads with
// cert-changed. Nothing else in the plan moves.
func TestDefaultCertPlan(t *testing.T) {
	runtime := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true}
	noRuntime := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	v1 := dcm.Cert{Secret: "ingress/default-tls", Version: "aa"}
	v2 := dcm.Cert{Secret: "ingress/default-tls", Version: "bb"}
	for _, tc := range []struct {
		name     string
		caps     dcm.Caps
		from, to dcm.Cert
		reload   bool
	}{
		{"self-signed to Secret", runtime, dcm.Cert{}, v1, false},
		{"rotated", runtime, v1, v2, false},
		{"back to self-signed", runtime, v1, dcm.Cert{}, false},
		{"rotated without runtime certificates", noRuntime, v1, v2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := desiredAll(desiredBackend(route("web"), ep("web-a", "127.0.1.1", dcm.StateReady)),
				desiredBackend(edgeRoute("shop", "shop.test", "cc"), ep("shop-a", "127.0.2.1", dcm.StateReady)))
			d.DefaultCert = tc.from
			st := idle(Fresh(d, tc.caps))
			d.DefaultCert = tc.to
			p := Compute(st, d, tc.caps)
			if p.Next.DefaultCert != tc.to {
				t.Errorf("next default %+v, want %+v", p.Next.DefaultCert, tc.to)
			}
			if tc.reload {
				if !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonCertChanged}) {
					t.Fatalf("plan %+v, want a reload for cert-changed", p)
				}
				return
			}
			if p.Reload || len(p.Ops) != 1 {
				t.Fatalf("plan: reload %v ops %q, want one cert-update", p.Reload, opStrings(p.Ops))
			}
			o := p.Ops[0]
			if o.Kind != dcm.OpCertUpdate || o.Cert == nil || !o.Cert.IsDefault() || *o.Cert != tc.to || o.Backend != "" {
				t.Errorf("op %s (%+v), want cert-update of the default to %+v", o, o.Cert, tc.to)
			}
			if again := Compute(p.Next, d, tc.caps); !again.Empty() {
				t.Errorf("not idempotent: %q", opStrings(again.Ops))
			}
		})
	}
}

// TestSimulateRotateDefaultCert: the what-if of a rotation of the default
// certificate's Secret predicts one set ssl cert on the default, not a
// reload; in reload mode it predicts the reload.
func TestSimulateRotateDefaultCert(t *testing.T) {
	d := desiredAll(desiredBackend(route("web"), ep("web-a", "127.0.1.1", dcm.StateReady)))
	d.DefaultCert = dcm.Cert{Secret: "ingress/default-tls", Version: "aa"}
	w := []dcm.WhatIf{{Kind: dcm.WhatIfRotateCert, Secret: "ingress/default-tls"}}
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true}
	snap := snapshotOf(d, caps)
	snap.DefaultCert = d.DefaultCert
	sim := Simulate(snap, w, dcm.MemoryCosts{})
	if len(sim.Errors) > 0 || sim.Reloads != 0 || len(sim.Steps) != 1 || len(sim.Steps[0].Ops) != 1 {
		t.Fatalf("rotation: %+v", sim)
	}
	if o := sim.Steps[0].Ops[0]; o.Kind != dcm.OpCertUpdate || !o.Cert.IsDefault() || o.Cert.Version == "aa" || o.Cert.Secret != "ingress/default-tls" {
		t.Errorf("op %s, want cert-update of the default", o)
	}
	reload := dcm.Caps{Mode: dcm.ModeReload, AddServer: true}
	snap = snapshotOf(d, reload)
	snap.DefaultCert = d.DefaultCert
	if sim := Simulate(snap, w, dcm.MemoryCosts{}); sim.Reloads != 1 || !slices.Equal(sim.Reasons, []dcm.ReloadReason{dcm.ReasonCertChanged}) {
		t.Errorf("reload mode: %+v", sim)
	}
}

// TestFollowDefaultCert: the browser's planner, following the feed, knows
// the default certificate an applied event installed, so its next preview
// starts from it.
func TestFollowDefaultCert(t *testing.T) {
	v2 := dcm.Cert{Secret: "ingress/default-tls", Version: "bb"}
	snap := dcm.Snapshot{Seq: 7, DefaultCert: dcm.Cert{Secret: "ingress/default-tls", Version: "aa"}}
	next, ok := Follow(snap, dcm.Event{Seq: 8, Type: dcm.EventApplied, Ops: []dcm.Op{{Kind: dcm.OpCertUpdate, Cert: &v2}}})
	if !ok || next.DefaultCert != v2 {
		t.Errorf("followed: ok %v, default %+v, want %+v", ok, next.DefaultCert, v2)
	}
}
