package plan

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// phaseOps lists each step's ops (Op.String) by phase.
func phaseOps(sim dcm.Simulation) map[string][]string {
	out := map[string][]string{}
	for _, st := range sim.Steps {
		out[st.Phase] = append(out[st.Phase], opStrings(st.Ops)...)
	}
	return out
}

func hasOp(ops []string, sub string) bool {
	return slices.ContainsFunc(ops, func(o string) bool { return strings.Contains(o, sub) })
}

// TestSimulateTerminatingFallback: the what-if predicts kube-proxy's
// terminating-endpoint fallback (dcm.ServeTerminating) as the kube layer
// applies it. The last pod of a service keeps serving while it terminates,
// until a ready pod is there; a pod with a ready sibling drains at once.
func TestSimulateTerminatingFallback(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	web := &dcm.WorkloadRef{Kind: "Deployment", Name: "web"}
	// web-0 is terminating and still the one ready server; its
	// replacement is not ready yet.
	rolling := webApp(0)
	old := ep("web-0", "10.0.0.1", dcm.StateReady)
	old.Terminating = true
	rolling.Backends[0].Endpoints = []dcm.Endpoint{old, ep("web-1", "10.0.0.2", dcm.StateMaint)}
	tests := []struct {
		name    string
		snap    dcm.Snapshot
		whatif  dcm.WhatIf
		phase   string   // the phase checked; "" for all
		want    []string // ops the phase has
		notWant []string // ops it must not have
	}{
		{name: "delete the only pod: it serves until its replacement is ready",
			snap:   snapshotOf(webApp(1), caps),
			whatif: dcm.WhatIf{Kind: dcm.WhatIfDeletePod, Namespace: "demo", Pod: "web-0"},
			phase:  "pods terminating", want: []string{"add-server be_http:demo:web/web-0-replacement:http"},
			notWant: []string{"web-0:http drain", "web-0:http maint"}},
		{name: "delete one of two pods: it drains",
			snap:   snapshotOf(webApp(2), caps),
			whatif: dcm.WhatIf{Kind: dcm.WhatIfDeletePod, Namespace: "demo", Pod: "web-0"},
			phase:  "pods terminating", want: []string{"set-state be_http:demo:web/web-0:http drain"}},
		{name: "scale to zero: the pods serve while they terminate",
			snap:   snapshotOf(webApp(2), caps),
			whatif: dcm.WhatIf{Kind: dcm.WhatIfScale, Namespace: "demo", Workload: web, Replicas: 0},
			want:   []string{"web-0:http maint", "web-1:http maint"}, notWant: []string{"drain"}},
		{name: "a pod turns ready: the terminating one drains",
			snap:   snapshotOf(rolling, caps),
			whatif: dcm.WhatIf{Kind: dcm.WhatIfScale, Namespace: "demo", Workload: web, Replicas: 2},
			phase:  "new pods ready", want: []string{"web-new-1:http ready", "set-state be_http:demo:web/web-0:http drain"},
			notWant: []string{"web-1:http"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := Simulate(tt.snap, []dcm.WhatIf{tt.whatif}, dcm.HAProxy26MemoryCosts())
			if len(sim.Errors) > 0 {
				t.Fatal(sim.Errors)
			}
			ops := phaseOps(sim)[tt.phase]
			if tt.phase == "" {
				for _, st := range sim.Steps {
					ops = append(ops, opStrings(st.Ops)...)
				}
			}
			for _, w := range tt.want {
				if !hasOp(ops, w) {
					t.Errorf("phase %q: no %q in %q", tt.phase, w, ops)
				}
			}
			for _, w := range tt.notWant {
				if hasOp(ops, w) {
					t.Errorf("phase %q: %q in %q", tt.phase, w, ops)
				}
			}
		})
	}
}

// TestSimulateTerminatingNoGap: deleting the only pod, no op of the
// preview leaves the backend without a ready server: the old pod serves
// until the new one is ready.
func TestSimulateTerminatingNoGap(t *testing.T) {
	snap := snapshotOf(webApp(1), dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true})
	sim := Simulate(snap, []dcm.WhatIf{{Kind: dcm.WhatIfDeletePod, Namespace: "demo", Pod: "web-0"}}, dcm.HAProxy26MemoryCosts())
	state := map[string]dcm.AdminState{}
	for _, s := range snap.Backends[0].Servers {
		state[s.Name] = s.State
	}
	for _, st := range sim.Steps {
		for _, o := range st.Ops {
			switch o.Kind {
			case dcm.OpAddServer:
				state[o.Server] = dcm.StateMaint
			case dcm.OpSetState:
				state[o.Server] = o.State
			case dcm.OpDelServer:
				delete(state, o.Server)
			}
			if !slices.Contains(slices.Collect(maps.Values(state)), dcm.StateReady) {
				t.Fatalf("%s: after %s no server is ready (%v)", st.Phase, o, state)
			}
		}
	}
	if sim.After.Ready != 1 || len(state) != 1 {
		t.Errorf("after: %d ready, servers %v; want the replacement alone", sim.After.Ready, state)
	}
}

// TestSimulateTerminatingPerService: on a route split between services the
// fallback is per service, as kube-proxy's: the canary's only pod keeps
// serving the canary's share while it terminates, though the primary has
// ready pods.
func TestSimulateTerminatingPerService(t *testing.T) {
	r := route("web")
	r.Workload = &dcm.WorkloadRef{Kind: "Deployment", Name: "web"}
	r.Services = []dcm.ServiceRef{{Name: "web", Port: "http", Weight: 80}, {Name: "canary", Port: "http", Weight: 20}}
	w := dcm.ServerWeights([]int{80, 20}, []int{1, 1})
	eps := []dcm.Endpoint{
		{Name: "canary-0:http", Addr: "10.0.1.1", Port: 8080, Weight: w[1], State: dcm.StateReady, Pod: "canary-0", Service: "canary"},
		{Name: "web-0:http", Addr: "10.0.0.1", Port: 8080, Weight: w[0], State: dcm.StateReady, Pod: "web-0", Service: "web"},
	}
	sim := Simulate(snapshotOf(desiredOf(r, eps...), dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}),
		[]dcm.WhatIf{{Kind: dcm.WhatIfDeletePod, Namespace: "demo", Pod: "canary-0"}}, dcm.HAProxy26MemoryCosts())
	if ops := phaseOps(sim)["pods terminating"]; hasOp(ops, "canary-0:http drain") || hasOp(ops, "set-weight") {
		t.Errorf("pods terminating: the canary's last pod should keep serving its share, got %q", ops)
	}
}

// TestMarkRetiredTerminating: a snapshot says which servers Kubernetes has
// as terminating, so a what-if started from it knows that a ready server
// is only the fallback; DesiredOf reads it back.
func TestMarkRetiredTerminating(t *testing.T) {
	d := webApp(2)
	st := Fresh(d, dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true})
	d.Backends[0].Endpoints[0].Terminating = true
	got := MarkRetired(st.Backends, d)
	if !got[0].Servers[0].Terminating || got[0].Servers[1].Terminating {
		t.Fatalf("servers %+v: want web-0 alone terminating", got[0].Servers)
	}
	if st.Backends[0].Servers[0].Terminating {
		t.Error("MarkRetired modified its input")
	}
	back := DesiredOf(dcm.State{Backends: got})
	if !back.Backends[0].Endpoints[0].Terminating || back.Backends[0].Endpoints[1].Terminating {
		t.Errorf("DesiredOf: %+v", back.Backends[0].Endpoints)
	}
}

// TestComputeTerminatingFallback: what the kube layer asks as a pod
// terminates, then as its replacement turns ready: the old server stays
// ready (no op, but Next knows it terminates), then drains.
func TestComputeTerminatingFallback(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	d := webApp(1)
	st := idle(Fresh(d, caps))
	d.Backends[0].Endpoints[0].Terminating = true
	p := Compute(st, d, caps)
	if !p.Empty() || !p.Next.Backends[0].Servers[0].Terminating {
		t.Fatalf("the last pod terminating: ops %q, next %+v; want no op and the server marked", opStrings(p.Ops), p.Next.Backends[0].Servers)
	}
	d.Backends[0].Endpoints = dcm.ServeTerminating(append(slices.Clone(d.Backends[0].Endpoints), ep("web-1", "10.0.0.2", dcm.StateReady)))
	p = Compute(p.Next, d, caps)
	if ops := opStrings(p.Ops); !hasOp(ops, "web-0:http drain") || !hasOp(ops, "web-1:http ready") {
		t.Errorf("a replacement ready: ops %q; want web-0 drained and web-1 ready", ops)
	}
}

// TestComputeReadyBeforeLeaving: as the last pod's replacement turns ready
// and the old pod drains or is gone in the same sync, the replacement's
// set-state ready comes first, whatever the names' order and the mode:
// between the two commands HAProxy still has a ready server.
func TestComputeReadyBeforeLeaving(t *testing.T) {
	old := ep("web-a", "10.0.0.1", dcm.StateReady)
	old.Terminating = true
	fresh := ep("web-b", "10.0.0.2", dcm.StateReady)
	starting := ep("web-b", "10.0.0.2", dcm.StateMaint)
	for _, tc := range []struct {
		name  string
		caps  dcm.Caps
		after []dcm.Endpoint
		leave string // the old server's op
	}{
		{"dynamic: drains", dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}, []dcm.Endpoint{old, fresh}, "web-a:http drain"},
		{"dynamic: gone", dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}, []dcm.Endpoint{fresh}, "web-a:http maint"},
		{"slots: drains", dcm.Caps{Mode: dcm.ModeSlots, Slots: 2, AddServer: true}, []dcm.Endpoint{old, fresh}, "drain"},
		{"slots: gone", dcm.Caps{Mode: dcm.ModeSlots, Slots: 2, AddServer: true}, []dcm.Endpoint{fresh}, "maint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := webApp(0)
			d.Backends[0].Endpoints = []dcm.Endpoint{old, starting}
			st := idle(Fresh(d, tc.caps))
			d.Backends[0].Endpoints = dcm.ServeTerminating(tc.after)
			ops := opStrings(Compute(st, d, tc.caps).Ops)
			ready := slices.IndexFunc(ops, func(o string) bool { return strings.HasSuffix(o, " ready") })
			leave := slices.IndexFunc(ops, func(o string) bool { return strings.HasSuffix(o, tc.leave) })
			if ready < 0 || leave < 0 || ready > leave {
				t.Errorf("ops %q: want web-b ready before web-a's %q", ops, tc.leave)
			}
		})
	}
}
