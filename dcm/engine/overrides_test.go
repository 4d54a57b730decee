package engine

import (
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func TestWithOverrides(t *testing.T) {
	desired := dcm.Desired{Backends: []*dcm.DesiredBackend{{Name: "be", Endpoints: []dcm.Endpoint{
		{Name: "a", State: dcm.StateReady, Weight: 1},
		{Name: "b", State: dcm.StateMaint, Weight: 1}, // not ready in Kubernetes
		{Name: "c", State: dcm.StateDrain, Weight: 1}, // terminating
	}}}}
	tests := []struct {
		name string
		ov   map[string]override
		want []dcm.Endpoint
	}{
		{name: "none", want: desired.Backends[0].Endpoints},
		{name: "drain a ready one", ov: map[string]override{"be/a": {state: dcm.StateDrain, weight: -1}},
			want: []dcm.Endpoint{{Name: "a", State: dcm.StateDrain, Weight: 1}, {Name: "b", State: dcm.StateMaint, Weight: 1}, {Name: "c", State: dcm.StateDrain, Weight: 1}}},
		{name: "an admin cannot make a pod ready that Kubernetes does not", ov: map[string]override{"be/b": {state: dcm.StateDrain, weight: -1}},
			want: desired.Backends[0].Endpoints},
		{name: "maint wins over terminating", ov: map[string]override{"be/c": {state: dcm.StateMaint, weight: -1}},
			want: []dcm.Endpoint{{Name: "a", State: dcm.StateReady, Weight: 1}, {Name: "b", State: dcm.StateMaint, Weight: 1}, {Name: "c", State: dcm.StateMaint, Weight: 1}}},
		{name: "weight", ov: map[string]override{"be/a": {weight: 7}},
			want: []dcm.Endpoint{{Name: "a", State: dcm.StateReady, Weight: 7}, {Name: "b", State: dcm.StateMaint, Weight: 1}, {Name: "c", State: dcm.StateDrain, Weight: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withOverrides(desired, tt.ov).Backends[0].Endpoints
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("endpoint %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
			if desired.Backends[0].Endpoints[0].State != dcm.StateReady || desired.Backends[0].Endpoints[0].Weight != 1 {
				t.Fatal("withOverrides modified its input")
			}
		})
	}
	ov := map[string]override{"be/a": {weight: 2}, "be/gone": {weight: 2}, "other/a": {weight: 2}}
	pruneOverrides(desired, ov)
	if len(ov) != 1 {
		t.Errorf("after pruning: %v, want only be/a", ov)
	}
}
