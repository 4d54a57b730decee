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

// withHeaders gives some routes that HAProxy reads requests of header
// actions, picked by name like withAccess: previews then carry replaces of
// the headers map.
func withHeaders(r *dcm.Route) {
	if r.Kind == dcm.KindPassthrough {
		return
	}
	switch pickBy(r.Name+"/headers", []string{"", "", "set", "both"}) {
	case "set":
		r.Headers = &dcm.HeaderActions{Request: []dcm.HeaderAction{{Name: "X-Team", Type: dcm.HeaderSet, Value: "web"}}}
	case "both":
		r.Headers = &dcm.HeaderActions{
			Request:  []dcm.HeaderAction{{Name: "X-Forwarded-Client", Type: dcm.HeaderSet, Value: "%[req.hdr(host)]"}},
			Response: []dcm.HeaderAction{{Name: "X-Powered-By", Type: dcm.HeaderDelete}},
		}
	}
}
