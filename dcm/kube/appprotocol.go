package kube

import (
	"github.com/dcm-router/dcm/dcm"
)

// withProtos gives endpoints the protocol their port's appProtocol asks
// for (dcm.ProtoOfAppProtocol): h2c makes HAProxy speak HTTP/2 in clear
// text to the pod, as gRPC needs. The appProtocol is read from the
// EndpointSlices' ports, which the endpointslice controller copies from
// the Service's, by port number: an endpoint's port is its slice port's.
// Any other appProtocol (http, https, kubernetes.io/ws, a vendor's name)
// leaves the route's default; it never reaches HAProxy as text. A
// passthrough route's pods get none: HAProxy speaks no HTTP to them.
func withProtos(r dcm.Route, eps []dcm.Endpoint, v *serviceView) []dcm.Endpoint {
	if r.Kind == dcm.KindPassthrough {
		return eps
	}
	if r.Source == dcm.SourceGRPCRoute {
		// A GRPCRoute's pods speak gRPC, HTTP/2, whatever their port's
		// appProtocol says.
		for i := range eps {
			eps[i].Proto = dcm.ProtoH2
		}
		return eps
	}
	protos := map[int]dcm.Proto{}
	for _, sl := range v.slices {
		for _, p := range sl.Ports {
			if p.Port != nil && p.AppProtocol != nil {
				if pr := dcm.ProtoOfAppProtocol(*p.AppProtocol); pr != dcm.ProtoDefault {
					protos[int(*p.Port)] = pr
				}
			}
		}
	}
	if len(protos) == 0 {
		return eps
	}
	for i := range eps {
		eps[i].Proto = protos[eps[i].Port]
	}
	return eps
}
