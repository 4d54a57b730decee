package corpus

import (
	"fmt"
	"slices"

	"github.com/dcm-router/dcm/dcm"
)

// withAccess gives some routes a client allowlist and rate limits, picked
// by name (pickBy) so that no other draw of the corpus moves: previews
// then carry replaces of the allowlist map, some with the chunks of a
// long list, and of the rate-limit map.
func withAccess(r *dcm.Route) {
	switch pickBy(r.Name+"/allow", []string{"", "", "one", "two", "long"}) {
	case "one":
		r.Allowlist = []string{"10.0.0.0/8"}
	case "two":
		r.Allowlist = []string{"10.0.0.0/8", "2001:db8::/32"}
	case "long":
		r.Allowlist = longAllowlist("127.0.0.2")
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

// longAllowlist is a list too long for one map value (400 networks and
// the given address, about 6 KB): two chunks, the second the same
// whatever the address, so lists share it.
func longAllowlist(addr string) []string {
	list := []string{addr}
	for i := range 400 {
		list = append(list, fmt.Sprintf("10.%d.%d.0/24", i/250, i%250))
	}
	slices.Sort(list)
	return list
}
