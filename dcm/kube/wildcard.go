package kube

import (
	"github.com/dcm-router/dcm/dcm"
)

// FlagAllowWildcardRoutes is the flag that turns wildcard routes on; the
// refusals name it.
const FlagAllowWildcardRoutes = "--allow-wildcard-routes"

// routeWildcard reads a Route's wildcardPolicy: Subdomain serves every
// single label under the domain of spec.host, as OpenShift's router does
// when its admin allows wildcard routes; dcm's admin says so with
// --allow-wildcard-routes, and without it the Route is refused, as
// OpenShift's router refuses it (RouteNotAdmitted).
func routeWildcard(policy string, opts RouteOptions) (bool, error) {
	switch policy {
	case "", "None":
		return false, nil
	case "Subdomain":
		if !opts.AllowWildcard {
			return false, routeErr(dcm.RejectUnsupported, "spec.wildcardPolicy", "Subdomain (wildcard routes need "+FlagAllowWildcardRoutes+")")
		}
		return true, nil
	}
	return false, routeErr(dcm.RejectUnsupported, "spec.wildcardPolicy", policy)
}

// wildcardHost is the host of a Subdomain Route: www.example.com serves
// *.example.com (its domain, as OpenShift's GetDomainForHost takes it).
// The domain must have two labels, so that no Route claims a top-level
// domain.
func wildcardHost(field, raw, host string) (string, error) {
	w := dcm.WildcardHost(host)
	if err := dcm.ValidateRouteHost(field, w); err != nil {
		return "", invalidAt(err, field, raw)
	}
	return w, nil
}

// refuseWildcards refuses an Ingress with a wildcard host when wildcard
// routes are off: served otherwise it would take traffic of hosts the
// admin did not let anyone claim.
func refuseWildcards(routes []dcm.Route) error {
	for _, r := range routes {
		if r.Wildcard() {
			return routeErr(dcm.RejectUnsupported, "spec.rules.host", r.Host+" (wildcard hosts need "+FlagAllowWildcardRoutes+")")
		}
	}
	return nil
}
