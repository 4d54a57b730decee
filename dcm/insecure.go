package dcm

import "strconv"

// InsecurePolicy says what a plain HTTP request for a route that serves
// HTTPS gets. The names are OpenShift's insecureEdgeTerminationPolicy.
type InsecurePolicy string

const (
	// InsecureAllow serves plain HTTP like HTTPS.
	InsecureAllow InsecurePolicy = "Allow"
	// InsecureRedirect answers plain HTTP with a redirect to the same URL
	// over https (RedirectCode, 302 by default).
	InsecureRedirect InsecurePolicy = "Redirect"
	// InsecureNone never lets a plain HTTP request reach the route's pods:
	// HAProxy answers it as it answers a request no route matches (503 from
	// be_default), as OpenShift's router does.
	InsecureNone InsecurePolicy = "None"
)

// DefaultRedirectCode is the status of an HTTP→HTTPS redirect when the
// route names none: 302, as OpenShift's router answers.
const DefaultRedirectCode = 302

// RedirectCodes are the statuses a route may ask for: HAProxy's
// `redirect … code` accepts these.
var RedirectCodes = []int{301, 302, 303, 307, 308}

// TerminatesTLS reports whether HAProxy terminates the route's TLS with a
// certificate of its own (edge, reencrypt): such a route's requests are
// also seen decrypted, and plain HTTP for its host follows its Insecure
// policy.
func (r Route) TerminatesTLS() bool {
	return r.Kind == KindEdge || r.Kind == KindReencrypt
}

// InsecureEffective is the policy a route is served with. An empty Insecure
// keeps the meaning it had before the field existed, so older snapshots,
// feeds and what-if inputs replay unchanged: Allow for a route that
// terminates TLS (dcm served edge hosts on both frontends), None for
// passthrough (its host was never in the HTTP maps). A plain HTTP route
// is always Allow.
func (r Route) InsecureEffective() InsecurePolicy {
	switch {
	case r.TerminatesTLS():
		if r.Insecure == "" {
			return InsecureAllow
		}
		return r.Insecure
	case r.Kind == KindPassthrough:
		if r.Insecure == "" {
			return InsecureNone
		}
		return r.Insecure
	}
	return InsecureAllow
}

// RedirectStatus is the status of the route's redirect: RedirectCode, or
// DefaultRedirectCode when unset.
func (r Route) RedirectStatus() int {
	if r.RedirectCode == 0 {
		return DefaultRedirectCode
	}
	return r.RedirectCode
}

// ValidateInsecure checks a route's insecure policy and redirect code
// against its kind. Passthrough allows None and Redirect only, as in
// OpenShift: HAProxy cannot serve a passed-through host's plain HTTP
// itself. A plain HTTP route carries no policy (or Allow, which it is).
func ValidateInsecure(r Route) error {
	switch r.Insecure {
	case "", InsecureAllow, InsecureRedirect, InsecureNone:
	default:
		return invalid(RejectInvalidValue, "insecure policy", string(r.Insecure))
	}
	switch {
	case r.TerminatesTLS():
	case r.Kind == KindPassthrough:
		if r.Insecure == InsecureAllow {
			return invalid(RejectUnsupported, "insecure policy Allow on a passthrough route", string(r.Insecure))
		}
	default:
		if r.Insecure != "" && r.Insecure != InsecureAllow {
			return invalid(RejectUnsupported, "insecure policy on a route without TLS", string(r.Insecure))
		}
	}
	if r.RedirectCode != 0 {
		ok := false
		for _, c := range RedirectCodes {
			ok = ok || c == r.RedirectCode
		}
		if !ok {
			return invalid(RejectInvalidValue, "redirect code", strconv.Itoa(r.RedirectCode))
		}
	}
	return nil
}
