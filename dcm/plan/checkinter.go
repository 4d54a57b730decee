package plan

import (
	"slices"

	"github.com/dcm-router/dcm/dcm"
)

// withCheckInter reloads a backend whose servers would go on checking at
// another interval than their route's: HAProxy 2.6 fixes a server's
// check interval when it is added. Sources name servers after the
// interval (dcm.DesiredBackend.WithUpstreamNames), so in dynamic mode a
// new interval brings new servers and the old ones retire, beside them:
// only a server that carries a desired endpoint's name counts. Slots are
// rendered with the interval, free ones included, so any slot counts.
func withCheckInter(r backendPlan, d dcm.DesiredBackend) backendPlan {
	if r.reason != "" {
		return r
	}
	want := dcm.CheckInterOf(d.Route)
	if !slices.ContainsFunc(r.next.Servers, func(s dcm.Server) bool { return s.CheckInterMillis != want }) {
		return r // the common case, without a map of the endpoints
	}
	wanted := make(map[string]bool, len(d.Endpoints))
	for _, e := range d.Endpoints {
		wanted[e.Name] = true
	}
	for _, s := range r.next.Servers {
		slot := s.Endpoint != s.Name
		if s.CheckInterMillis != want && (slot || wanted[s.Name]) {
			return backendPlan{reason: dcm.ReasonCheckInterval}
		}
	}
	return r
}
