package kube

import (
	"slices"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

// hostnameMatch intersects one HTTPRoute hostname with one listener
// hostname, both lower case, "*.d" a wildcard that matches one label or
// more in front of d (the Gateway API's rule, which differs from
// Ingress's one label). It returns the more specific of the two, or false
// when no host matches both.
func hostnameMatch(route, listener string) (string, bool) {
	rw, lw := strings.HasPrefix(route, "*."), strings.HasPrefix(listener, "*.")
	switch {
	case !rw && !lw:
		return route, route == listener
	case !rw:
		return route, strings.HasSuffix(route, listener[1:])
	case !lw:
		return listener, strings.HasSuffix(listener, route[1:])
	case len(route) >= len(listener):
		return route, strings.HasSuffix(route, listener[1:])
	default:
		return listener, strings.HasSuffix(listener, route[1:])
	}
}

// intersectHostnames are the hosts an HTTPRoute answers on a listener:
// the intersection of its hostnames and the listener's, sorted. any is
// true when both are unset (every host); an empty result with any false
// means the route does not attach to the listener.
func intersectHostnames(route []gwv1.Hostname, listener *gwv1.Hostname) (hosts []string, any bool) {
	l := ""
	if listener != nil {
		l = strings.ToLower(string(*listener))
	}
	if len(route) == 0 {
		if l == "" {
			return nil, true
		}
		return []string{l}, false
	}
	for _, h := range route {
		h := strings.ToLower(string(h))
		if l == "" {
			hosts = append(hosts, h)
			continue
		}
		if m, ok := hostnameMatch(h, l); ok {
			hosts = append(hosts, m)
		}
	}
	slices.Sort(hosts)
	return slices.Compact(hosts), false
}

// validHostnames checks the hostnames an HTTPRoute brings to HAProxy.
func validHostnames(hosts []string) error {
	for _, h := range hosts {
		if err := dcm.ValidateRouteHost("spec.hostnames", h); err != nil {
			return err
		}
	}
	return nil
}
