package plan

import (
	"maps"
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func reencryptBackend(name, caVersion string, eps ...dcm.Endpoint) dcm.DesiredBackend {
	r := edgeRoute(name, name+".test", "aa")
	r.Kind = dcm.KindReencrypt
	r.Upstream = &dcm.UpstreamTLS{CA: "secret:demo/" + name + "-ca", Version: caVersion, ServerName: name + ".demo.svc"}
	return desiredBackend(r, eps...).WithUpstreamNames()
}

// TestReencryptLifecycle: a reencrypt route takes a reencrypt spare, its CA
// file added before its servers; a CA rotation adds the new CA's file and
// servers before the old servers leave (never a moment without a ready
// server), and the old file goes with the last old server. Without runtime
// certificates a rotation reloads with cert-changed.
func TestReencryptLifecycle(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 1, RuntimeCerts: true}
	a := ep("shop-a", "127.0.1.1", dcm.StateReady)
	st := idle(Fresh(desiredAll(), caps))
	step := func(name string, d dcm.Desired, wantOps []string) {
		t.Helper()
		checkPlan(t, name, st, d, caps)
		p := Compute(st, d, caps)
		if got := opStrings(p.Ops); !slices.Equal(got, wantOps) || p.Reload {
			t.Fatalf("%s: ops (reload %v %v)\n got %q\nwant %q", name, p.Reload, p.Reasons, got, wantOps)
		}
		st = idle(p.Next)
	}
	v1 := desiredAll(reencryptBackend("shop", "c1", a))
	s1 := v1.Backends[0].Endpoints[0].Name
	step("add", v1, []string{
		"ca-add secret:demo/shop-ca@c1",
		"cert-add shop.test demo/shop-tls@aa",
		"add-server be_reencrypt:demo:shop/" + s1 + " 127.0.1.1:8080 weight 1 ssl ca c1 sni shop.demo.svc",
		"set-state be_reencrypt:demo:shop/" + s1 + " ready",
		"map-replace host_prefix +1 -0",
	})
	if b, _ := st.Backend("be_reencrypt:demo:shop"); b.Slot != "be_reencrypt:_pool:1" {
		t.Fatalf("slot %q, want the reencrypt spare", b.Slot)
	}
	v2 := desiredAll(reencryptBackend("shop", "c2", a))
	s2 := v2.Backends[0].Endpoints[0].Name
	if s1 == s2 {
		t.Fatalf("a new CA keeps the server name %s", s1)
	}
	step("rotate", v2, []string{
		"ca-add secret:demo/shop-ca@c2",
		"add-server be_reencrypt:demo:shop/" + s2 + " 127.0.1.1:8080 weight 1 ssl ca c2 sni shop.demo.svc",
		"set-state be_reencrypt:demo:shop/" + s2 + " ready",
		"set-state be_reencrypt:demo:shop/" + s1 + " maint",
	})
	step("old server idle", v2, []string{
		"del-server be_reencrypt:demo:shop/" + s1,
		"ca-del secret:demo/shop-ca@c1",
	})

	noRuntime := caps
	noRuntime.RuntimeCerts = false
	if p := Compute(st, desiredAll(reencryptBackend("shop", "c3", a)), noRuntime); !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonCertChanged}) {
		t.Fatalf("rotation without runtime certificates: reload %v %v", p.Reload, p.Reasons)
	}
}

// TestReencryptWithoutCA: a reencrypt route whose CA is unknown gets no
// servers (they could not verify their pods), and servers whose TLS no
// longer matches their route but kept their names (a source that did not
// rename them) reload rather than keep verifying with the old CA.
func TestReencryptWithoutCA(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 1, RuntimeCerts: true}
	a := ep("shop-a", "127.0.1.1", dcm.StateReady)
	noCA := reencryptBackend("shop", "", a)
	noCA.Endpoints = []dcm.Endpoint{a}
	st := Fresh(desiredAll(noCA), caps)
	if b, _ := st.Backend(noCA.Name); len(b.Servers) != 0 {
		t.Fatalf("servers without a CA: %+v", b.Servers)
	}
	withCA := reencryptBackend("shop", "c1", a)
	st = idle(Fresh(desiredAll(withCA), caps))
	unrenamed := withCA
	unrenamed.Route.Upstream = &dcm.UpstreamTLS{CA: "secret:demo/shop-ca", Version: "c2", ServerName: "shop.demo.svc"}
	if p := Compute(st, desiredAll(unrenamed), caps); !p.Reload || !slices.Equal(p.Reasons, []dcm.ReloadReason{dcm.ReasonCertChanged}) {
		t.Fatalf("servers kept their names across a CA change: reload %v %v, ops %q", p.Reload, p.Reasons, opStrings(p.Ops))
	}
}

// TestSimulateCARotation: rotating the Secret that holds a reencrypt
// route's CA previews the runtime rotation: the new CA file, new servers
// before the old ones leave, no reload.
func TestSimulateCARotation(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 1, RuntimeCerts: true}
	d := desiredAll(reencryptBackend("shop", "c1", ep("shop-a", "127.0.1.1", dcm.StateReady), ep("shop-b", "127.0.1.2", dcm.StateReady)))
	sim := Simulate(snapshotOf(d, caps), []dcm.WhatIf{{Kind: dcm.WhatIfRotateCert, Namespace: "demo", Secret: "demo/shop-ca"}}, dcm.HAProxy26MemoryCosts())
	if len(sim.Errors) > 0 {
		t.Fatalf("simulate: %v", sim.Errors)
	}
	got := opCounts(sim)
	want := map[string]int{"ca-add": 1, "add-server": 2, "set-state:ready": 2, "set-state:maint": 2}
	if !maps.Equal(got, want) || sim.Reloads != 0 {
		t.Fatalf("ops %v (reloads %d), want %v and no reload", got, sim.Reloads, want)
	}
}
