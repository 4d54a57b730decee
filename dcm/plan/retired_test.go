package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func TestMarkRetired(t *testing.T) {
	desired := dcm.Desired{Backends: []*dcm.DesiredBackend{
		{Name: "be_http:ns:a", Endpoints: []dcm.Endpoint{{Name: "a-1"}, {Name: "a-3"}}},
	}}
	srv := func(name, endpoint string, retired bool) dcm.Server {
		return dcm.Server{Name: name, Endpoint: endpoint, Retired: retired}
	}
	tests := []struct {
		name     string
		backends []*dcm.Backend
		want     map[string][]string // backend → retired servers
		shared   bool                // the input comes back as it was, uncopied
	}{
		{
			name:     "an endpoint Kubernetes dropped is retired",
			backends: []*dcm.Backend{{Name: "be_http:ns:a", Servers: []dcm.Server{srv("a-1", "a-1", false), srv("a-2", "a-2", false)}}},
			want:     map[string][]string{"be_http:ns:a": {"a-2"}},
		},
		{
			name:     "a backend Kubernetes dropped has every endpoint's server retired",
			backends: []*dcm.Backend{{Name: "be_http:ns:gone", Servers: []dcm.Server{srv("g-1", "g-1", false), srv("slot1", "", false)}}},
			want:     map[string][]string{"be_http:ns:gone": {"g-1"}},
		},
		{
			name:     "a flag Kubernetes no longer warrants is cleared",
			backends: []*dcm.Backend{{Name: "be_http:ns:a", Servers: []dcm.Server{srv("a-3", "a-3", true)}}},
			want:     map[string][]string{},
		},
		{
			name:     "nothing to change: the input itself",
			backends: []*dcm.Backend{{Name: "be_http:ns:a", Servers: []dcm.Server{srv("a-1", "a-1", false), srv("a-2", "a-2", true)}}},
			want:     map[string][]string{"be_http:ns:a": {"a-2"}},
			shared:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.backends[0].Servers)
			got := MarkRetired(tt.backends, desired)
			retired := map[string][]string{}
			for _, b := range got {
				for _, s := range b.Servers {
					if s.Retired {
						retired[b.Name] = append(retired[b.Name], s.Name)
					}
				}
			}
			if len(retired) != len(tt.want) {
				t.Errorf("retired %v, want %v", retired, tt.want)
			}
			for b, names := range tt.want {
				if !slices.Equal(retired[b], names) {
					t.Errorf("%s: retired %v, want %v", b, retired[b], names)
				}
			}
			if !slices.Equal(tt.backends[0].Servers, before) {
				t.Error("MarkRetired modified its input")
			}
			if shared := got[0] == tt.backends[0]; shared != tt.shared {
				t.Errorf("result shares the input: %v, want %v", shared, tt.shared)
			}
		})
	}
}

func TestWaitingBackends(t *testing.T) {
	desired := dcm.Desired{Backends: []*dcm.DesiredBackend{
		{Name: "be_http:ns:a", Endpoints: []dcm.Endpoint{{Name: "a-1"}}},
		{Name: "be_http:ns:b", Endpoints: []dcm.Endpoint{{Name: "b-1"}}},
	}}
	tests := []struct {
		name   string
		server dcm.Server
		slot   string
		want   bool
	}{
		{name: "retired, in maint, with a session", server: dcm.Server{Name: "a-2", Endpoint: "a-2", State: dcm.StateMaint, Sessions: 1}, want: true},
		{name: "retired, in maint, unobserved since", server: dcm.Server{Name: "a-2", Endpoint: "a-2", State: dcm.StateMaint, Unobserved: true}, want: true},
		{name: "retired, in maint, an idle connection kept", server: dcm.Server{Name: "a-2", Endpoint: "a-2", State: dcm.StateMaint, IdleConn: 1}, want: true},
		{name: "retired and idle: deletable now, not waiting", server: dcm.Server{Name: "a-2", Endpoint: "a-2", State: dcm.StateMaint}},
		{name: "retired but not yet in maint: the plan puts it there", server: dcm.Server{Name: "a-2", Endpoint: "a-2", State: dcm.StateDrain, Sessions: 1}},
		{name: "an endpoint Kubernetes has", server: dcm.Server{Name: "a-1", Endpoint: "a-1", State: dcm.StateMaint, Sessions: 1}},
		{name: "a free slot", server: dcm.Server{Name: "slot1", State: dcm.StateMaint, Unobserved: true}},
		{name: "named by the spare that carries it", slot: "be_http:_pool:1", server: dcm.Server{Name: "a-2", Endpoint: "a-2", State: dcm.StateMaint, Sessions: 1}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := dcm.State{Backends: []*dcm.Backend{
				{Name: "be_http:ns:a", Slot: tt.slot, Servers: []dcm.Server{{Name: "a-1", Endpoint: "a-1", State: dcm.StateReady}, tt.server}},
				{Name: "be_http:ns:b", Servers: []dcm.Server{{Name: "b-1", Endpoint: "b-1", State: dcm.StateMaint, Sessions: 3}}},
			}}
			var want []string
			if tt.want {
				want = []string{st.Backends[0].ProxyName()}
			}
			if got := WaitingBackends(st, desired); !slices.Equal(got, want) {
				t.Errorf("WaitingBackends = %q, want %q", got, want)
			}
		})
	}
}

func TestHasEndpoint(t *testing.T) {
	b := dcm.DesiredBackend{Endpoints: []dcm.Endpoint{{Name: "a"}, {Name: "c"}, {Name: "e"}}}
	for name, want := range map[string]bool{"a": true, "c": true, "e": true, "b": false, "": false, "f": false} {
		if got := HasEndpoint(&b, name); got != want {
			t.Errorf("HasEndpoint(%q) = %v, want %v", name, got, want)
		}
	}
}
