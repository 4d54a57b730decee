package plan

import "github.com/dcm-router/dcm/dcm"

// withMaxConn brings the servers of a planned backend to their route's
// connection limit (dcm.Route.MaxConn): one set maxconn server each, a
// runtime change in every mode that has runtime ops. Servers added by the
// plan already carry it (serverFor); the ops go first, so that a server
// made ready by the plan takes traffic under its new limit.
func withMaxConn(r backendPlan, route dcm.Route) backendPlan {
	if r.reason != "" {
		return r
	}
	var ops []dcm.Op
	var servers []dcm.Server // nil until the first change: unchanged backends share their slice
	for i, s := range r.next.Servers {
		if s.MaxConn == route.MaxConn {
			continue
		}
		if servers == nil {
			servers = append([]dcm.Server(nil), r.next.Servers...)
		}
		servers[i].MaxConn = route.MaxConn
		ops = append(ops, dcm.Op{Kind: dcm.OpSetMaxConn, Backend: r.next.Name, Server: s.Name, MaxConn: route.MaxConn, Endpoint: s.Endpoint, Pod: s.Pod})
	}
	if servers == nil {
		return r
	}
	r.next.Servers = servers
	r.ops = append(ops, r.ops...)
	return r
}
