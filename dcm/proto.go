package dcm

import (
	"slices"
	"sort"
)

// Proto is the protocol HAProxy speaks to a pod, beyond what the route's
// kind says (HTTP/1.1, or TLS with ALPN for reencrypt routes).
type Proto string

const (
	// ProtoDefault is the route's: HTTP/1.1 in clear, ALPN over TLS.
	ProtoDefault Proto = ""
	// ProtoH2 is HTTP/2 in clear text (h2c, prior knowledge): what a
	// Service port with appProtocol h2c or kubernetes.io/h2c asks for, and
	// what gRPC needs end to end.
	ProtoH2 Proto = "h2"
)

// ValidateProto accepts the protocols dcm renders.
func ValidateProto(field string, p Proto) error {
	if p != ProtoDefault && p != ProtoH2 {
		return invalid(RejectInvalidValue, field, string(p))
	}
	return nil
}

// ProtoOfAppProtocol is the Proto of a Service or EndpointSlice port's
// appProtocol: h2c (the name gRPC and Knative use) and kubernetes.io/h2c
// (the standard one) ask for ProtoH2; anything else is left to the route.
func ProtoOfAppProtocol(appProtocol string) Proto {
	switch appProtocol {
	case "h2c", "kubernetes.io/h2c":
		return ProtoH2
	}
	return ProtoDefault
}

// WithProtoNames names the endpoints of a backend that speak a protocol
// of their own <name>.<proto>: a server's protocol is fixed when it is
// added, so a Service port whose appProtocol changes gets new servers,
// added next to the old ones, which are retired only after (as a CA
// rotation does, WithUpstreamNames). Sources call it once per backend.
func (b DesiredBackend) WithProtoNames() DesiredBackend {
	if !slices.ContainsFunc(b.Endpoints, func(e Endpoint) bool { return e.Proto != ProtoDefault }) {
		return b
	}
	eps := slices.Clone(b.Endpoints)
	for i := range eps {
		if eps[i].Proto != ProtoDefault {
			eps[i].Name += "." + string(eps[i].Proto)
		}
	}
	sort.Slice(eps, func(i, j int) bool { return eps[i].Name < eps[j].Name })
	b.Endpoints = eps
	return b
}
