package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// Apply predicts what HAProxy's state becomes when ops are applied to st,
// refusing what HAProxy refuses (adding a server twice, deleting one that is
// not in maint, touching one that does not exist). The planner's properties
// are stated with it, and the what-if simulator uses it.
func Apply(st dcm.State, ops []dcm.Op) (dcm.State, error) {
	backends := slices.Clone(st.Backends)
	copied := make(map[int]bool)
	for n, op := range ops {
		bi, ok := slices.BinarySearchFunc(backends, op.Backend, func(b dcm.Backend, name string) int { return strings.Compare(b.Name, name) })
		if !ok {
			return dcm.State{}, fmt.Errorf("op %d (%s): no such backend", n, op)
		}
		b := backends[bi]
		if !copied[bi] {
			b.Servers = slices.Clone(b.Servers)
			copied[bi] = true
		}
		si, exists := slices.BinarySearchFunc(b.Servers, op.Server, func(s dcm.Server, name string) int { return strings.Compare(s.Name, name) })
		if op.Kind == dcm.OpAddServer {
			if exists {
				return dcm.State{}, fmt.Errorf("op %d (%s): server already exists", n, op)
			}
			s := dcm.Server{
				Name: op.Server, Addr: op.Addr, Port: op.Port, Weight: op.Weight, State: dcm.StateMaint,
				Origin: dcm.OriginRuntime, Endpoint: op.Endpoint, Pod: op.Pod, Check: op.Check, Unobserved: true,
			}
			b.Servers = slices.Insert(b.Servers, si, s)
			backends[bi] = b
			continue
		}
		if !exists {
			return dcm.State{}, fmt.Errorf("op %d (%s): no such server", n, op)
		}
		s := &b.Servers[si]
		switch op.Kind {
		case dcm.OpDelServer:
			if s.State != dcm.StateMaint {
				return dcm.State{}, fmt.Errorf("op %d (%s): only servers in maint can be deleted", n, op)
			}
			b.Servers = slices.Delete(b.Servers, si, si+1)
		case dcm.OpSetAddr:
			s.Addr, s.Port, s.Endpoint, s.Pod = op.Addr, op.Port, op.Endpoint, op.Pod
			s.Unobserved = true
		case dcm.OpSetState:
			s.State = op.State
			s.Unobserved = true
		case dcm.OpSetWeight:
			s.Weight = op.Weight
		case dcm.OpEnableHealth:
			if !s.Check {
				return dcm.State{}, fmt.Errorf("op %d (%s): server has no health check", n, op)
			}
		default:
			return dcm.State{}, fmt.Errorf("op %d: unknown op %q", n, op.Kind)
		}
		backends[bi] = b
	}
	return dcm.State{Backends: backends}, nil
}
