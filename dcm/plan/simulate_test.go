package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// snapshotOf is the snapshot of an engine that has applied desired.
func snapshotOf(d dcm.Desired, caps dcm.Caps) dcm.Snapshot {
	st := idle(Fresh(d, caps))
	return dcm.Snapshot{Seq: 42, Mode: caps.Mode, Caps: caps, Backends: st.Backends, Pool: st.Pool, GatewayBinds: st.GatewayBinds}
}

func webApp(pods int) dcm.Desired {
	r := route("web")
	r.Workload = &dcm.WorkloadRef{Kind: "Deployment", Name: "web"}
	var eps []dcm.Endpoint
	for i := range pods {
		eps = append(eps, ep(fmt.Sprintf("web-%d", i), fmt.Sprintf("10.0.0.%d", i+1), dcm.StateReady))
	}
	return desiredOf(r, eps...)
}

// withService names the service behind the routes of d: web, port http.
func withService(d dcm.Desired) dcm.Desired {
	for i := range d.Backends {
		d.Backends[i].Route.Services = []dcm.ServiceRef{{Name: "web", Port: "http"}}
	}
	return d
}

func opCounts(sim dcm.Simulation) map[string]int {
	out := map[string]int{}
	for _, st := range sim.Steps {
		for _, o := range st.Ops {
			k := string(o.Kind)
			if o.Kind == dcm.OpSetState {
				k += ":" + string(o.State)
			}
			out[k]++
		}
	}
	return out
}

func TestSimulate(t *testing.T) {
	scaleTo := func(n int) []dcm.WhatIf {
		return []dcm.WhatIf{{Kind: dcm.WhatIfScale, Namespace: "demo", Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: "web"}, Replicas: n}}
	}
	dynamic := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	slots1 := dcm.Caps{Mode: dcm.ModeSlots, Slots: 1, AddServer: true}
	pooled := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2}
	web2 := &dcm.Route{Namespace: "demo", Name: "web2", Kind: dcm.KindHTTP, Host: "web2.example", Path: "/",
		PathType: dcm.PathPrefix, Balance: "roundrobin", Services: []dcm.ServiceRef{{Name: "web", Port: "http"}}}
	tests := []struct {
		name        string
		snap        dcm.Snapshot
		whatifs     []dcm.WhatIf
		wantOps     map[string]int
		wantReasons []dcm.ReloadReason
		wantReady   int
		wantErr     bool
	}{
		{name: "scale out 2 to 5 at runtime", snap: snapshotOf(webApp(2), dynamic), whatifs: scaleTo(5),
			wantOps: map[string]int{"add-server": 3, "enable-health": 3, "set-state:ready": 3}, wantReady: 5},
		{name: "scale in 5 to 2: drain, retire, delete", snap: snapshotOf(webApp(5), dynamic), whatifs: scaleTo(2),
			wantOps: map[string]int{"set-state:drain": 3, "set-state:maint": 3, "del-server": 3}, wantReady: 2},
		{name: "no change", snap: snapshotOf(webApp(2), dynamic), whatifs: scaleTo(2), wantOps: map[string]int{}, wantReady: 2},
		{name: "slots run out", snap: snapshotOf(webApp(2), slots1), whatifs: scaleTo(5),
			wantOps: map[string]int{"set-state:ready": 3}, wantReasons: []dcm.ReloadReason{dcm.ReasonSlotsExhausted}, wantReady: 5},
		{name: "delete a pod: replaced", snap: snapshotOf(webApp(2), dynamic),
			whatifs: []dcm.WhatIf{{Kind: dcm.WhatIfDeletePod, Namespace: "demo", Pod: "web-0"}},
			wantOps: map[string]int{"set-state:drain": 1, "add-server": 1, "enable-health": 1, "set-state:maint": 1, "set-state:ready": 1, "del-server": 1}, wantReady: 2},
		{name: "a new route reloads", snap: snapshotOf(webApp(2), dynamic),
			whatifs: []dcm.WhatIf{{Kind: dcm.WhatIfAddRoute, Route: &dcm.Route{Namespace: "demo", Name: "web2", Kind: dcm.KindHTTP,
				Host: "web2.example", Path: "/", PathType: dcm.PathPrefix, Balance: "roundrobin"}}},
			wantOps: map[string]int{}, wantReasons: []dcm.ReloadReason{dcm.ReasonRouteAdded}, wantReady: 2},
		{name: "a new route takes a spare", snap: snapshotOf(withService(webApp(2)), pooled),
			whatifs: []dcm.WhatIf{{Kind: dcm.WhatIfAddRoute, Route: web2}},
			wantOps: map[string]int{"add-server": 2, "set-state:ready": 2, "map-replace": 1}, wantReady: 4},
		{name: "a deleted route leaves the maps, then retires", snap: snapshotOf(webApp(2), pooled),
			whatifs: []dcm.WhatIf{{Kind: dcm.WhatIfDeleteRoute, Backend: "be_http:demo:web"}},
			wantOps: map[string]int{"map-replace": 1, "set-state:maint": 2}, wantReady: 0},
		{name: "unknown workload", snap: snapshotOf(webApp(2), dynamic),
			whatifs: []dcm.WhatIf{{Kind: dcm.WhatIfScale, Namespace: "demo", Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: "nope"}, Replicas: 3}},
			wantOps: map[string]int{}, wantReady: 2, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := Simulate(tt.snap, tt.whatifs, dcm.HAProxy26MemoryCosts())
			got := opCounts(sim)
			if len(got) != len(tt.wantOps) {
				t.Errorf("ops %v, want %v", got, tt.wantOps)
			}
			for k, n := range tt.wantOps {
				if got[k] != n {
					t.Errorf("ops %v, want %v", got, tt.wantOps)
					break
				}
			}
			if !slices.Equal(sim.Reasons, tt.wantReasons) {
				t.Errorf("reasons %v, want %v", sim.Reasons, tt.wantReasons)
			}
			if sim.After.Ready != tt.wantReady {
				t.Errorf("%d ready after, want %d", sim.After.Ready, tt.wantReady)
			}
			if (len(sim.Errors) > 0) != tt.wantErr {
				t.Errorf("errors %v", sim.Errors)
			}
			if sim.Seq != 42 {
				t.Errorf("seq %d, want the snapshot's", sim.Seq)
			}
			a, _ := json.Marshal(sim)
			b, _ := json.Marshal(Simulate(tt.snap, tt.whatifs, dcm.HAProxy26MemoryCosts()))
			if string(a) != string(b) {
				t.Error("two simulations of the same input differ")
			}
		})
	}
}

func TestSimulateTotals(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	sim := Simulate(snapshotOf(webApp(2), caps), []dcm.WhatIf{{Kind: dcm.WhatIfScale, Namespace: "demo",
		Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: "web"}, Replicas: 4}}, dcm.HAProxy26MemoryCosts())
	c := dcm.HAProxy26MemoryCosts()
	if sim.Before.MemoryBytes != c.PerBackend+2*c.PerCfgServer {
		t.Errorf("memory before %d", sim.Before.MemoryBytes)
	}
	if sim.After.RuntimeServers != 2 || sim.After.MemoryBytes != sim.Before.MemoryBytes+2*c.PerRuntimeServer {
		t.Errorf("after: %+v", sim.After)
	}
	if len(sim.Traffic) != 4 || sim.Traffic[0].Share != 0.25 {
		t.Errorf("traffic %+v", sim.Traffic)
	}
	in := Simulate(snapshotOf(webApp(3), caps), []dcm.WhatIf{{Kind: dcm.WhatIfScale, Namespace: "demo",
		Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: "web"}, Replicas: 1}}, c)
	if len(in.Draining) != 2 {
		t.Errorf("draining %+v, want the 2 pods scaled in", in.Draining)
	}
}

func TestFollow(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	snap := snapshotOf(webApp(2), caps)
	next := snapshotOf(webApp(3), caps)
	tests := []struct {
		name     string
		ev       dcm.Event
		wantOK   bool
		wantSeq  uint64
		wantSrvs int // of the first backend; -1: no backend left
	}{
		{"applied event replaces its backends", dcm.Event{Seq: 43, Type: dcm.EventApplied, State: next.Backends}, true, 43, 3},
		{"an event without state moves the seq", dcm.Event{Seq: 43, Type: dcm.EventAction}, true, 43, 2},
		{"a reload needs a snapshot", dcm.Event{Seq: 43, Type: dcm.EventReload}, false, 43, 2},
		{"a gap needs a snapshot", dcm.Event{Seq: 45, Type: dcm.EventApplied, State: next.Backends}, false, 42, 2},
		{"an old event is ignored", dcm.Event{Seq: 40, Type: dcm.EventApplied, State: next.Backends}, true, 42, 2},
		{"a touched backend an observation does not carry is gone", dcm.Event{Seq: 43, Type: dcm.EventObserved,
			Backends: []string{snap.Backends[0].Name}}, true, 43, -1},
		{"an action naming a backend removes nothing", dcm.Event{Seq: 43, Type: dcm.EventAction,
			Backends: []string{snap.Backends[0].Name}}, true, 43, 2},
		{"a map replace needs a snapshot", dcm.Event{Seq: 43, Type: dcm.EventApplied, State: next.Backends,
			Ops: []dcm.Op{{Kind: dcm.OpMapReplace, Map: dcm.MapHostPrefix}}}, false, 43, 2},
		{"a backend gone needs a snapshot", dcm.Event{Seq: 43, Type: dcm.EventApplied, Backends: []string{"be_http:demo:gone"}}, false, 43, 2},
	}
	for _, tt := range tests {
		got, ok := Follow(snap, tt.ev)
		srvs := -1
		if len(got.Backends) > 0 {
			srvs = len(got.Backends[0].Servers)
		}
		if ok != tt.wantOK || got.Seq != tt.wantSeq || srvs != tt.wantSrvs {
			t.Errorf("%s: ok %v seq %d servers %d", tt.name, ok, got.Seq, srvs)
		}
	}
	if len(snap.Backends[0].Servers) != 2 {
		t.Error("Follow modified its input")
	}
}

// TestSimulateCountsSpares: a route that takes a spare backend moves it from
// the pool to the backends; the memory estimate counts spares as backends.
func TestSimulateCountsSpares(t *testing.T) {
	pooled := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2}
	web2 := &dcm.Route{Namespace: "demo", Name: "web2", Kind: dcm.KindHTTP, Host: "web2.example", Path: "/",
		PathType: dcm.PathPrefix, Balance: "roundrobin", Services: []dcm.ServiceRef{{Name: "web", Port: "http"}}}
	costs := dcm.HAProxy26MemoryCosts()
	sim := Simulate(snapshotOf(withService(webApp(2)), pooled), []dcm.WhatIf{{Kind: dcm.WhatIfAddRoute, Route: web2}}, costs)
	b, a := sim.Before, sim.After
	// Two spares per pooled kind: HTTP, passthrough and reencrypt.
	if b.SpareBackends != 6 || a.SpareBackends != 5 || a.Backends != b.Backends+1 {
		t.Fatalf("spares %d → %d, backends %d → %d; want 6 → 5 and one backend more", b.SpareBackends, a.SpareBackends, b.Backends, a.Backends)
	}
	if grew := a.MemoryBytes - b.MemoryBytes; grew != 2*costs.PerRuntimeServer {
		t.Errorf("memory grows by %d, want the 2 servers added at runtime (%d): the spare existed already", grew, 2*costs.PerRuntimeServer)
	}
}

// TestSimulateCountsTCPBackends: a passthrough backend, a route's or a
// spare's, is counted at PerTCPBackend, every other at PerBackend. A
// passthrough route that takes a passthrough spare costs only its
// servers; without a pool, its new backend costs PerTCPBackend; a
// deleted one gives it back.
func TestSimulateCountsTCPBackends(t *testing.T) {
	db := &dcm.Route{Namespace: "demo", Name: "db", Kind: dcm.KindPassthrough, Host: "db.example", Path: "/",
		PathType: dcm.PathPrefix, Balance: dcm.BalanceSource, Services: []dcm.ServiceRef{{Name: "web", Port: "http"}}}
	add := []dcm.WhatIf{{Kind: dcm.WhatIfAddRoute, Route: db}}
	c := dcm.HAProxy26MemoryCosts()

	pooled := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2}
	sim := Simulate(snapshotOf(withService(webApp(2)), pooled), add, c)
	b, a := sim.Before, sim.After
	// The web route's HTTP backend, 2 HTTP and 2 reencrypt spares; 2
	// passthrough spares.
	if want := 5*c.PerBackend + 2*c.PerTCPBackend + 2*c.PerCfgServer; b.TCPBackends != 0 || b.MemoryBytes != want {
		t.Errorf("before: %d TCP backends, memory %d, want 0 and %d", b.TCPBackends, b.MemoryBytes, want)
	}
	if a.TCPBackends != 1 || a.SpareBackends != 5 || a.MemoryBytes != b.MemoryBytes+2*c.PerRuntimeServer {
		t.Errorf("after: %+v, want 1 TCP backend, 5 spares, the memory of 2 runtime servers more", a)
	}

	plain := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	sim = Simulate(snapshotOf(withService(webApp(2)), plain), add, c)
	b, a = sim.Before, sim.After
	if want := b.MemoryBytes + c.PerTCPBackend + 2*c.PerCfgServer; a.TCPBackends != 1 || a.MemoryBytes != want {
		t.Errorf("after a reload: %+v, want 1 TCP backend and memory %d", a, want)
	}

	// From a state with the passthrough route, deleting it.
	withDB := withService(webApp(2))
	withDB.Backends = append(withDB.Backends, desiredOf(*db, ep("db-0", "10.0.1.1", dcm.StateReady)).Backends...)
	sim = Simulate(snapshotOf(withDB, plain), []dcm.WhatIf{{Kind: dcm.WhatIfDeleteRoute, Backend: db.BackendName()}}, c)
	b, a = sim.Before, sim.After
	if b.TCPBackends != 1 || b.MemoryBytes != c.PerBackend+c.PerTCPBackend+3*c.PerCfgServer {
		t.Errorf("with the passthrough route: %+v", b)
	}
	if want := b.MemoryBytes - c.PerTCPBackend - c.PerCfgServer; a.TCPBackends != 0 || a.MemoryBytes != want {
		t.Errorf("after deleting it: %+v, want no TCP backend and memory %d", a, want)
	}
}

// TestSimulateSplitRoute: scaling the primary of a route split 80/20
// predicts the weights the kube layer will compute: every server's weight
// follows, the canary's included.
func TestSimulateSplitRoute(t *testing.T) {
	caps := dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	r := route("web")
	r.Workload = &dcm.WorkloadRef{Kind: "Deployment", Name: "web"}
	r.Services = []dcm.ServiceRef{{Name: "web", Port: "http", Weight: 80}, {Name: "canary", Port: "http", Weight: 20}}
	w := dcm.ServerWeights([]int{80, 20}, []int{2, 1})
	eps := []dcm.Endpoint{
		{Name: "canary-0:http", Addr: "10.0.1.1", Port: 8080, Weight: w[1], State: dcm.StateReady, Pod: "canary-0", Service: "canary"},
		{Name: "web-0:http", Addr: "10.0.0.1", Port: 8080, Weight: w[0], State: dcm.StateReady, Pod: "web-0", Service: "web"},
		{Name: "web-1:http", Addr: "10.0.0.2", Port: 8080, Weight: w[0], State: dcm.StateReady, Pod: "web-1", Service: "web"},
	}
	sim := Simulate(snapshotOf(desiredOf(r, eps...), caps), []dcm.WhatIf{{Kind: dcm.WhatIfScale, Namespace: "demo",
		Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: "web"}, Replicas: 6}}, dcm.HAProxy26MemoryCosts())
	if len(sim.Errors) > 0 {
		t.Fatal(sim.Errors)
	}
	want := dcm.ServerWeights([]int{80, 20}, []int{6, 1})
	var web int
	var canaryShare float64
	for _, sh := range sim.Traffic {
		wantW := want[0]
		if sh.Pod == "canary-0" {
			wantW, canaryShare = want[1], sh.Share
		} else {
			web++
		}
		if sh.Weight != wantW {
			t.Errorf("server %s: predicted weight %d, want %d", sh.Server, sh.Weight, wantW)
		}
	}
	if web != 6 || canaryShare < 0.199 || canaryShare > 0.201 {
		t.Errorf("%d web servers, canary share %.3f; want 6 and 0.2 (traffic %+v)", web, canaryShare, sim.Traffic)
	}
}
