package dcm

import "slices"

// ServeTerminating applies kube-proxy's terminating-endpoint fallback to a
// backend's endpoints, service by service (Endpoint.Service; "" is the
// only service of a route with one): while a service has no ready endpoint,
// its endpoints that still serve while terminating (Terminating) are ready,
// so that the last pod of a rollout keeps its clients until a new one is
// ready or it stops serving; once a ready endpoint is back they drain.
// It is the one rule the sources and the what-if both apply, so the
// preview is what dcm does. It only rewrites the State of Terminating
// endpoints, from Terminating and the others' states, so applying it again
// changes nothing. eps is not modified; the result shares it when nothing
// changes.
func ServeTerminating(eps []Endpoint) []Endpoint {
	ready := map[string]bool{}
	for _, e := range eps {
		if e.State == StateReady && !e.Terminating {
			ready[e.Service] = true
		}
	}
	out, cloned := eps, false
	for i, e := range eps {
		if !e.Terminating {
			continue
		}
		want := StateReady
		if ready[e.Service] {
			want = StateDrain
		}
		if e.State == want {
			continue
		}
		if !cloned {
			out, cloned = slices.Clone(eps), true
		}
		out[i].State = want
	}
	return out
}

// ServeTerminating is the backend with the terminating-endpoint fallback
// applied to its endpoints (ServeTerminating). Weights of a route with
// several services follow the states it gives (Reweigh, after it).
func (b DesiredBackend) ServeTerminating() DesiredBackend {
	b.Endpoints = ServeTerminating(b.Endpoints)
	return b
}
