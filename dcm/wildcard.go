package dcm

import "strings"

// WildcardPrefix starts the host of a wildcard route: "*.example.com"
// serves every single label under example.com. An Ingress spells its
// wildcard host so; an OpenShift Route with wildcardPolicy Subdomain and
// host www.example.com is given the same host, so one rule serves both.
const WildcardPrefix = "*."

// Wildcard reports whether the route serves every single-label host under
// its domain (after exact hosts, as OpenShift's router tries them).
func (r Route) Wildcard() bool { return strings.HasPrefix(r.Host, WildcardPrefix) }

// WildcardKey is the key of a wildcard host in the wildcard maps: its
// domain with the leading dot, ".example.com". HAProxy derives the same
// string from a request's host by dropping its first label, so a.example.com
// finds it and a.b.example.com does not.
func WildcardKey(host string) string { return strings.TrimPrefix(host, "*") }

// WildcardHost is the wildcard host of the domain under host's first
// label: www.example.com → *.example.com, as OpenShift takes the domain of
// a Subdomain Route from its host.
func WildcardHost(host string) string {
	_, domain, _ := strings.Cut(host, ".")
	return WildcardPrefix + domain
}

// ValidateRouteHost checks the host of a route: ValidateHost's names, and
// a wildcard "*.<domain>" whose domain has two labels at least, so that no
// route claims a whole top-level domain.
func ValidateRouteHost(field, s string) error {
	domain, ok := strings.CutPrefix(s, WildcardPrefix)
	if !ok {
		return ValidateHost(field, s)
	}
	if !strings.Contains(domain, ".") {
		return invalid(RejectInvalidHost, field, s)
	}
	if err := ValidateHost(field, domain); err != nil {
		return invalid(RejectInvalidHost, field, s)
	}
	return nil
}
