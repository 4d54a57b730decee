package engine

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func TestKeepBusy(t *testing.T) {
	srv := func(name string, st dcm.AdminState) dcm.Server {
		return dcm.Server{Name: name, Endpoint: name, Addr: "10.0.0.1", Port: 80, Weight: 1, State: st}
	}
	actual := dcm.State{Backends: []dcm.Backend{
		{Name: "be_http:ns:a", Servers: []dcm.Server{srv("a-1", dcm.StateMaint), srv("a-2", dcm.StateReady), srv("a-3", dcm.StateMaint)}},
		{Name: "be_http:ns:b", Slot: "be_http:_pool:1", Servers: []dcm.Server{srv("b-1", dcm.StateMaint)}},
	}}
	del := func(be, name string) dcm.Op { return dcm.Op{Kind: dcm.OpDelServer, Backend: be, Server: name} }
	tests := []struct {
		name    string
		next    dcm.State
		busy    []string
		ok      bool
		servers map[string][]string // backend → server names in the result
		ops     int
	}{
		{
			name: "a refused delete is put back, the other stays deleted",
			next: dcm.State{Backends: []dcm.Backend{
				{Name: "be_http:ns:a", Servers: []dcm.Server{srv("a-2", dcm.StateReady)}},
				{Name: "be_http:ns:b", Slot: "be_http:_pool:1", Servers: []dcm.Server{srv("b-1", dcm.StateMaint)}},
			}},
			busy: []string{"be_http:ns:a/a-3"}, ok: true, ops: 2,
			servers: map[string][]string{"be_http:ns:a": {"a-2", "a-3"}, "be_http:ns:b": {"b-1"}},
		},
		{
			name: "a spare backend is named by its slot",
			next: dcm.State{Backends: []dcm.Backend{
				{Name: "be_http:ns:a", Servers: []dcm.Server{srv("a-2", dcm.StateReady)}},
				{Name: "be_http:ns:b", Slot: "be_http:_pool:1", Servers: []dcm.Server{}},
			}},
			busy: []string{"be_http:_pool:1/b-1"}, ok: true, ops: 2,
			servers: map[string][]string{"be_http:ns:a": {"a-2"}, "be_http:ns:b": {"b-1"}},
		},
		{
			name: "a backend gone from next cannot keep its server",
			next: dcm.State{Backends: []dcm.Backend{{Name: "be_http:ns:a", Servers: []dcm.Server{srv("a-2", dcm.StateReady)}}}},
			busy: []string{"be_http:_pool:1/b-1"}, ok: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := []dcm.Op{del("be_http:ns:a", "a-1"), del("be_http:ns:a", "a-3"), del("be_http:ns:b", "b-1")}
			before := tt.next.Backends[0].Servers
			gotOps, next, ok := keepBusy(actual, ops, tt.next, tt.busy)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if len(before) != 1 || len(tt.next.Backends[0].Servers) != 1 {
				t.Error("keepBusy wrote into the plan's state")
			}
			for _, b := range next.Backends {
				var names []string
				for _, s := range b.Servers {
					names = append(names, s.Name)
					if slices.Contains(tt.busy, b.ProxyName()+"/"+s.Name) && (s.State != dcm.StateMaint || !s.Unobserved) {
						t.Errorf("%s/%s kept as %s (unobserved %v), want maint and unobserved", b.Name, s.Name, s.State, s.Unobserved)
					}
				}
				if !slices.Equal(names, tt.servers[b.Name]) {
					t.Errorf("%s: servers %v, want %v", b.Name, names, tt.servers[b.Name])
				}
			}
			if len(gotOps) != tt.ops {
				t.Errorf("%d ops left, want %d: %v", len(gotOps), tt.ops, gotOps)
			}
		})
	}
}
