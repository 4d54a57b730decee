package dcm

import "testing"

func TestFleetDecide(t *testing.T) {
	st := func(applied string, pending bool) *ReplicaStatus {
		return &ReplicaStatus{Applied: applied, Pending: pending}
	}
	for _, tt := range []struct {
		name   string
		in     []*ReplicaStatus
		latest []bool
		inStep bool
	}{
		{"alone", []*ReplicaStatus{st("a", false)}, []bool{true}, true},
		{"agree", []*ReplicaStatus{st("a", false), st("a", false)}, []bool{true, true}, true},
		{"differ", []*ReplicaStatus{st("a", false), st("b", false)}, []bool{false, false}, false},
		{"one pending", []*ReplicaStatus{st("a", false), st("a", true)}, []bool{false, false}, false},
		{"one not started", []*ReplicaStatus{st("a", false), st("", false)}, []bool{false, false}, false},
		{"one unreachable", []*ReplicaStatus{st("a", false), nil, st("a", false)}, []bool{true, false, true}, false},
		{"none answered", []*ReplicaStatus{nil}, []bool{false}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var f Fleet
			for _, s := range tt.in {
				f.Replicas = append(f.Replicas, Replica{Status: s})
			}
			f.Decide()
			for i, r := range f.Replicas {
				if r.Latest != tt.latest[i] {
					t.Errorf("replica %d: latest %v, want %v", i, r.Latest, tt.latest[i])
				}
			}
			if f.InStep != tt.inStep {
				t.Errorf("in step %v, want %v", f.InStep, tt.inStep)
			}
		})
	}
}
