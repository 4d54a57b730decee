package plan

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func TestBackendsOf(t *testing.T) {
	tests := []struct {
		name string
		ops  []dcm.Op
		want []string
	}{
		{name: "none", want: nil},
		{name: "server ops, sorted and once each", ops: []dcm.Op{
			{Kind: dcm.OpSetState, Backend: "be_http:ns:b"}, {Kind: dcm.OpAddServer, Backend: "be_http:ns:a"}, {Kind: dcm.OpSetWeight, Backend: "be_http:ns:b"},
		}, want: []string{"be_http:ns:a", "be_http:ns:b"}},
		{name: "a map replace names the entries' backends, not its own", ops: []dcm.Op{
			{Kind: dcm.OpMapReplace, Map: dcm.MapHostExact, Set: []dcm.MapEntry{{Key: "a.test", Backend: "be_http:ns:a"}}, Del: []dcm.MapEntry{{Key: "c.test", Backend: "be_http:ns:c"}}},
			{Kind: dcm.OpDelServer, Backend: "be_http:ns:b"},
		}, want: []string{"be_http:ns:a", "be_http:ns:b", "be_http:ns:c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BackendsOf(tt.ops); !slices.Equal(got, tt.want) {
				t.Errorf("BackendsOf = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestBackendsNamed(t *testing.T) {
	st := dcm.State{Backends: []*dcm.Backend{
		{Name: "be_http:ns:a", Servers: []dcm.Server{{Name: "a-1", Endpoint: "a-1"}, {Name: "a-2", Endpoint: "a-2"}}},
		{Name: "be_http:ns:b"},
	}}
	desired := dcm.Desired{Backends: []*dcm.DesiredBackend{{Name: "be_http:ns:a", Endpoints: []dcm.Endpoint{{Name: "a-1"}}}}}
	tests := []struct {
		name  string
		names []string
		want  []string
	}{
		{name: "none", want: []string{}},
		{name: "a backend gone is left out", names: []string{"be_http:ns:a", "be_http:ns:gone"}, want: []string{"be_http:ns:a"}},
		{name: "several", names: []string{"be_http:ns:a", "be_http:ns:b"}, want: []string{"be_http:ns:a", "be_http:ns:b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BackendsNamed(st, desired, tt.names)
			names := []string{}
			for _, b := range got {
				names = append(names, b.Name)
				for _, s := range b.Servers {
					if s.Retired != (s.Name == "a-2") {
						t.Errorf("%s/%s retired %v", b.Name, s.Name, s.Retired)
					}
				}
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("BackendsNamed = %q, want %q", names, tt.want)
			}
		})
	}
	if st.Backends[0].Servers[1].Retired {
		t.Error("BackendsNamed modified its input")
	}
}
