package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
)

// override is what an admin asked of one endpoint's server from the portal
// or API, on top of what Kubernetes asks. It is kept until the admin hands
// the server back or the endpoint goes away.
type override struct {
	state  dcm.AdminState // drain or maint; "" none
	weight int            // -1 none
}

// overrideKey names the endpoint: in slots mode the server is a slot that
// other endpoints take later, so the override follows the endpoint.
func overrideKey(backend, endpoint string) string { return backend + "/" + endpoint }

// withOverrides applies the admins' overrides to what Kubernetes asks. A
// state override only ever takes traffic away (a pod that is not ready stays
// in maint whatever an admin says), so it cannot send requests to a pod
// Kubernetes does not consider ready.
func withOverrides(d dcm.Desired, ov map[string]override) dcm.Desired {
	if len(ov) == 0 {
		return d
	}
	out := dcm.Desired{Backends: slices.Clone(d.Backends), DefaultCert: d.DefaultCert}
	for i, b := range out.Backends {
		var eps []dcm.Endpoint
		for k, e := range b.Endpoints {
			o, ok := ov[overrideKey(b.Name, e.Name)]
			if !ok {
				continue
			}
			if eps == nil {
				eps = slices.Clone(b.Endpoints)
			}
			if o.state != "" && rank(o.state) < rank(e.State) {
				eps[k].State = o.state
			}
			if o.weight >= 0 {
				eps[k].Weight = o.weight
			}
		}
		if eps != nil {
			nb := *b // a copy: d shares its backends
			nb.Endpoints = eps
			out.Backends[i] = &nb
		}
	}
	return out
}

// rank orders states by how much traffic they take.
func rank(s dcm.AdminState) int {
	switch s {
	case dcm.StateReady:
		return 2
	case dcm.StateDrain:
		return 1
	}
	return 0
}

// pruneOverrides drops overrides of endpoints Kubernetes no longer has.
func pruneOverrides(d dcm.Desired, ov map[string]override) {
	for k := range ov {
		backend, endpoint, _ := strings.Cut(k, "/")
		b, ok := d.Backend(backend)
		if !ok || !plan.HasEndpoint(b, endpoint) {
			delete(ov, k)
		}
	}
}

// SetServerState overrides a server's admin state: drain or maint hold until
// the server is set back to ready, which returns it to Kubernetes.
func (e *Engine) SetServerState(actor, backend, server string, state dcm.AdminState) error {
	return e.setOverride(actor, backend, server, func(o *override) string {
		if state == dcm.StateReady {
			o.state = ""
			return "handed back to Kubernetes"
		}
		o.state = state
		return "set to " + string(state)
	})
}

// SetServerWeight overrides a server's weight (0-256); -1 hands the weight
// back to Kubernetes.
func (e *Engine) SetServerWeight(actor, backend, server string, weight int) error {
	if weight < -1 || weight > 256 {
		return fmt.Errorf("weight %d: want 0-256, or -1", weight)
	}
	return e.setOverride(actor, backend, server, func(o *override) string {
		o.weight = weight
		if weight < 0 {
			return "weight handed back to Kubernetes"
		}
		return fmt.Sprintf("weight set to %d", weight)
	})
}

func (e *Engine) setOverride(actor, backend, server string, change func(*override) string) error {
	e.mu.Lock()
	b, ok := e.actual.Backend(backend)
	var srv dcm.Server
	if ok {
		srv, ok = b.Server(server)
	}
	if !ok || srv.Endpoint == "" {
		e.mu.Unlock()
		return fmt.Errorf("server %s/%s: %w", backend, server, dcm.ErrNotFound)
	}
	key := overrideKey(backend, srv.Endpoint)
	o, exists := e.overrides[key]
	if !exists {
		o = override{weight: -1}
	}
	what := change(&o)
	if o.state == "" && o.weight < 0 {
		delete(e.overrides, key)
	} else {
		e.overrides[key] = o
	}
	obj := dcm.ObjectRef{Kind: "Server", Namespace: b.Route.Namespace, Name: backend + "/" + server}
	e.hub.Publish(dcm.Event{Type: dcm.EventAction, Actor: actor, Object: &obj, Backends: []string{backend},
		Message: fmt.Sprintf("%s %s by %s", backend+"/"+server, what, actor)})
	e.mu.Unlock()
	e.log.Info("override", "actor", actor, "server", backend+"/"+server, "change", what)
	e.kick()
	return nil
}
