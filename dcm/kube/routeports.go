package kube

import "github.com/dcm-router/dcm/dcm"

// everyPortEndpoints are the endpoints of a Route without spec.port: one
// server per address and port of the Service's EndpointSlices, every port
// of the Service, as OpenShift's router serves such a Route (it takes the
// ports of all the endpoints it is given). Server names carry the port
// name, so a pod's two ports are two servers. A Service of one port, or
// none, is served as a Route naming no port always was: its first port.
func everyPortEndpoints(v *serviceView) []dcm.Endpoint {
	if v.svc == nil || len(v.svc.Spec.Ports) == 0 {
		return nil
	}
	if len(v.svc.Spec.Ports) == 1 {
		return validServiceEndpoints(v.svc, v.slices, v.svc.Spec.Ports[0].Name)
	}
	var out []dcm.Endpoint
	seen := map[string]bool{}
	for _, p := range v.svc.Spec.Ports {
		for _, e := range validServiceEndpoints(v.svc, v.slices, p.Name) {
			if !seen[e.Name] {
				seen[e.Name] = true
				out = append(out, e)
			}
		}
	}
	return out
}
