package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func TestMerge(t *testing.T) {
	known := dcm.State{Backends: []*dcm.Backend{
		{Name: "be_http:a:x", Servers: []dcm.Server{
			{Name: "p1:http", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady, Origin: dcm.OriginRuntime, Pod: "p1", Endpoint: "p1:http", Sessions: 4},
			{Name: "p2:http", Addr: "10.0.0.2", Port: 80, Weight: 1, State: dcm.StateMaint, Pod: "p2", Endpoint: "p2:http", Unobserved: true, Sessions: 3},
		}},
		{Name: "be_http:a:y"},
	}}
	tests := []struct {
		name        string
		obs         map[string][]dcm.Server
		names       []string
		traffic     bool
		wantDrift   int
		wantMissing bool
		check       func(t *testing.T, st dcm.State)
	}{
		{
			name: "figures refreshed, dcm's bookkeeping kept",
			obs: map[string][]dcm.Server{"be_http:a:x": {
				{Name: "p1:http", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady, Health: "UP", Sessions: 2},
				{Name: "p2:http", Addr: "10.0.0.2", Port: 80, Weight: 1, State: dcm.StateMaint, Health: "MAINT"},
			}, "be_http:a:y": {}},
			traffic: true,
			check: func(t *testing.T, st dcm.State) {
				p1, _ := st.Backends[0].Server("p1:http")
				p2, _ := st.Backends[0].Server("p2:http")
				if p1.Sessions != 2 || p1.Health != "UP" || p1.Pod != "p1" || p1.Origin != dcm.OriginRuntime {
					t.Errorf("p1 = %+v", p1)
				}
				if !p2.Idle() {
					t.Errorf("p2 observed with no traffic is not idle: %+v", p2)
				}
			},
		},
		{
			name: "state-only observation proves no idleness",
			obs: map[string][]dcm.Server{"be_http:a:x": {
				{Name: "p1:http", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady},
				{Name: "p2:http", Addr: "10.0.0.2", Port: 80, Weight: 1, State: dcm.StateMaint},
			}},
			names: []string{"be_http:a:x"},
			check: func(t *testing.T, st dcm.State) {
				p2, _ := st.Backends[0].Server("p2:http")
				if p2.Idle() || p2.Sessions != 3 {
					t.Errorf("p2 = %+v: figures lost or idleness assumed", p2)
				}
			},
		},
		{
			name: "drift: changed by hand, deleted by hand, added by hand",
			obs: map[string][]dcm.Server{"be_http:a:x": {
				{Name: "p1:http", Addr: "10.0.0.1", Port: 80, Weight: 7, State: dcm.StateDrain},
				{Name: "rogue", Addr: "10.0.0.9", Port: 80, Weight: 1, State: dcm.StateReady},
			}, "be_http:a:y": {}},
			traffic:   true,
			wantDrift: 3,
			check: func(t *testing.T, st dcm.State) {
				names := []string{}
				for _, s := range st.Backends[0].Servers {
					names = append(names, s.Name)
				}
				if !slices.Equal(names, []string{"p1:http", "rogue"}) {
					t.Errorf("servers %v", names)
				}
				if p1, _ := st.Backends[0].Server("p1:http"); p1.Weight != 7 || p1.State != dcm.StateDrain {
					t.Errorf("HAProxy's word is not taken: %+v", p1)
				}
			},
		},
		{
			name:        "a backend HAProxy lacks needs a reload",
			obs:         map[string][]dcm.Server{"be_http:a:x": {}},
			traffic:     true,
			wantDrift:   3,
			wantMissing: true,
		},
		{
			name:    "a backend not asked for is not missing",
			obs:     map[string][]dcm.Server{},
			names:   []string{},
			traffic: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, drift, missing := Merge(known, tt.obs, tt.names, tt.traffic)
			if len(drift) != tt.wantDrift || missing != tt.wantMissing {
				t.Errorf("drift %q missing %v, want %d, %v", drift, missing, tt.wantDrift, tt.wantMissing)
			}
			if tt.check != nil {
				tt.check(t, st)
			}
			if p1 := known.Backends[0].Servers[0]; p1.Sessions != 4 {
				t.Error("Merge modified its input")
			}
		})
	}
}

func TestDriftBackends(t *testing.T) {
	drift := []string{
		"be_http:a:x/p1:http: dcm has 10.0.0.1:80 w1 ready, HAProxy 10.0.0.1:80 w3 ready",
		"be_http:a:y: backend missing in HAProxy",
		"be_edge:b:z/ip-10.0.0.9:8443: unknown server",
	}
	want := []string{"be_http:a:x", "be_http:a:y", "be_edge:b:z"}
	if got := DriftBackends(drift); !slices.Equal(got, want) {
		t.Errorf("DriftBackends = %q, want %q", got, want)
	}
}

func TestHealthChanged(t *testing.T) {
	before := dcm.State{Backends: []*dcm.Backend{
		{Name: "be_http:a:x", Servers: []dcm.Server{{Name: "s1", State: dcm.StateReady, Health: "UP", Sessions: 1}}},
		{Name: "be_http:a:y", Servers: []dcm.Server{{Name: "s1", State: dcm.StateReady, Health: "UP"}}},
	}}
	with := func(s dcm.Server) dcm.State {
		return dcm.State{Backends: []*dcm.Backend{
			{Name: "be_http:a:x", Servers: []dcm.Server{s}},
			{Name: "be_http:a:y", Servers: []dcm.Server{{Name: "s1", State: dcm.StateReady, Health: "UP"}}},
			{Name: "be_http:a:new", Servers: []dcm.Server{{Name: "s1", State: dcm.StateReady, Health: "DOWN"}}},
		}}
	}
	tests := []struct {
		name  string
		after dcm.State
		want  []string
	}{
		{name: "sessions alone are no news", after: with(dcm.Server{Name: "s1", State: dcm.StateReady, Health: "UP", Sessions: 9})},
		{name: "health", after: with(dcm.Server{Name: "s1", State: dcm.StateReady, Health: "DOWN"}), want: []string{"be_http:a:x"}},
		{name: "admin state", after: with(dcm.Server{Name: "s1", State: dcm.StateDrain, Health: "UP"}), want: []string{"be_http:a:x"}},
		{name: "another server", after: with(dcm.Server{Name: "s2", State: dcm.StateReady, Health: "UP"}), want: []string{"be_http:a:x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HealthChanged(before, tt.after); !slices.Equal(got, tt.want) {
				t.Errorf("HealthChanged = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMergeInPlace: the servers of a backend that changed are obs's own
// slice, written over, not a copy; a backend that did not change is the
// very one it was; the order of the known servers does not matter.
func TestMergeInPlace(t *testing.T) {
	srv := func(name string, health string) dcm.Server {
		return dcm.Server{Name: name, Endpoint: name, Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady, Health: health, Pod: "p-" + name}
	}
	changed := &dcm.Backend{Name: "be_http:a:x", Servers: []dcm.Server{srv("b", ""), srv("a", "")}} // unsorted
	same := &dcm.Backend{Name: "be_http:a:y", Servers: []dcm.Server{srv("c", "UP")}}
	st := dcm.State{Backends: []*dcm.Backend{changed, same}}
	seenX := []dcm.Server{{Name: "a", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady, Health: "UP"},
		{Name: "b", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady, Health: "DOWN"}}
	seenY := []dcm.Server{{Name: "c", Addr: "10.0.0.1", Port: 80, Weight: 1, State: dcm.StateReady, Health: "UP"}}
	got, drift, missing := Merge(st, map[string][]dcm.Server{"be_http:a:x": seenX, "be_http:a:y": seenY}, nil, false)
	if len(drift) != 0 || missing {
		t.Fatalf("drift %q, missing %v", drift, missing)
	}
	x := got.Backends[0].Servers
	if &x[0] != &seenX[0] || len(x) != 2 || x[0].Name != "a" || x[0].Pod != "p-a" || x[1].Health != "DOWN" || x[1].Pod != "p-b" {
		t.Errorf("changed backend's servers %+v (obs's slice: %v)", x, &x[0] == &seenX[0])
	}
	if got.Backends[1] != same {
		t.Error("a backend HAProxy reports as it was is not kept")
	}
	if changed.Servers[0].Health != "" || changed.Servers[0].Name != "b" {
		t.Errorf("Merge wrote into the state it was given: %+v", changed.Servers)
	}
}

// TestMergeNamedByProxy: a read-back of some backends finds them by their
// HAProxy names, a route riding a spare by the spare's; the others are
// left as they were, shared.
func TestMergeNamedByProxy(t *testing.T) {
	srv := func(state dcm.AdminState) []dcm.Server {
		return []dcm.Server{{Name: "p1:http", Addr: "10.0.0.1", Port: 80, Weight: 1, State: state}}
	}
	st := dcm.State{Backends: []*dcm.Backend{
		{Name: "be_http:a:w", Servers: srv(dcm.StateReady)},
		{Name: "be_http:a:x", Servers: srv(dcm.StateReady)},
		{Name: "be_http:a:z", Slot: "be_http:_pool:1", Servers: srv(dcm.StateReady)},
	}}
	obs := map[string][]dcm.Server{"be_http:_pool:1": srv(dcm.StateMaint)}
	got, drift, missing := Merge(st, obs, []string{"be_http:_pool:1", "be_http:a:w"}, false)
	if !missing || !slices.Equal(drift, []string{
		"be_http:a:w: backend missing in HAProxy",
		"be_http:a:z/p1:http: dcm has 10.0.0.1:80 w1 ready, HAProxy 10.0.0.1:80 w1 maint",
	}) {
		t.Errorf("missing %v, drift %q", missing, drift)
	}
	if got.Backends[2].Servers[0].State != dcm.StateMaint {
		t.Errorf("the route on the spare: %+v, want its server as HAProxy has it", got.Backends[2].Servers)
	}
	if got.Backends[0] != st.Backends[0] || got.Backends[1] != st.Backends[1] {
		t.Error("backends not read back were replaced")
	}
}
