package corpus

import "github.com/dcm-router/dcm/dcm"

// withAccess gives some routes a client allowlist and rate limits, picked
// by name (pickBy) so that no other draw of the corpus moves: previews
// then carry acl-replace ops and replaces of the rate-limit map.
func withAccess(r *dcm.Route) {
	switch pickBy(r.Name+"/allow", []string{"", "", "one", "two"}) {
	case "one":
		r.Allowlist = []string{"10.0.0.0/8"}
	case "two":
		r.Allowlist = []string{"10.0.0.0/8", "2001:db8::/32"}
	}
	switch pickBy(r.Name+"/rate", []string{"", "", "track", "limits"}) {
	case "track":
		r.RateLimit = &dcm.RateLimit{}
	case "limits":
		r.RateLimit = &dcm.RateLimit{ConcurrentTCP: 50, RateHTTP: 100}
	}
}
