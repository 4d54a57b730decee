package kube

import "github.com/dcm-router/dcm/dcm"

// servedEndpoints are the endpoints of a route's i-th service with
// kube-proxy's terminating-endpoint fallback applied (dcm.ServeTerminating):
// per service, as kube-proxy decides it per service, and before the
// services of a split route are merged and weighed, so a service served
// by its terminating pods keeps its share.
func servedEndpoints(r dcm.Route, i int, v *serviceView) []dcm.Endpoint {
	eps := withProtos(r, routeEndpoints(r, i, v), v)
	for k := range eps {
		// EndpointState gives drain to exactly the endpoints that serve
		// while terminating and are not ready.
		eps[k].Terminating = eps[k].State == dcm.StateDrain
	}
	return dcm.ServeTerminating(eps)
}
