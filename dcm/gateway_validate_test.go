package dcm

import (
	"strings"
	"testing"
)

func validGatewayRoute() Route {
	return Route{Namespace: "gw", Name: "r", Source: SourceHTTPRoute, Kind: KindHTTP, Balance: BalanceRoundRobin,
		Services: []ServiceRef{{Name: "svc", Port: "80", Weight: 1}},
		Gateway: &GatewayRoute{Gateway: "gw/g", Listener: "http", Bind: "127.0.20.1:18080", Hostnames: []string{"a.example", "*.example"},
			Matches: []HTTPMatch{{PathType: GatewayPathPrefix, Path: "/"}}, Rank: "0"}}
}

// TestValidateGatewayRoute: what of a Gateway route reaches HAProxy is
// checked, and a rule too long for one command line is refused with its
// reason rather than sent.
func TestValidateGatewayRoute(t *testing.T) {
	if err := ValidateRoute(validGatewayRoute()); err != nil {
		t.Fatalf("valid route refused: %v", err)
	}
	for _, tt := range []struct {
		name   string
		change func(*Route)
	}{
		{"host", func(r *Route) { r.Host = "a.example" }},
		{"path", func(r *Route) { r.Path = "/" }},
		{"passthrough", func(r *Route) { r.Kind = KindPassthrough }},
		{"edge without certificate", func(r *Route) { r.Kind = KindEdge }},
		{"bind without port", func(r *Route) { r.Gateway.Bind = "127.0.20.1" }},
		{"bind not an address", func(r *Route) { r.Gateway.Bind = "a b:80" }},
		{"bind ipv6", func(r *Route) { r.Gateway.Bind = "[::1]:80" }},
		{"hostname", func(r *Route) { r.Gateway.Hostnames = []string{"A_B"} }},
		{"hostname wildcard alone", func(r *Route) { r.Gateway.Hostnames = []string{"*."} }},
		{"no match", func(r *Route) { r.Gateway.Matches = nil }},
		{"path type", func(r *Route) { r.Gateway.Matches[0].PathType = "Glob" }},
		{"relative path", func(r *Route) { r.Gateway.Matches[0].Path = "a" }},
		{"path with a query", func(r *Route) { r.Gateway.Matches[0].Path = "/a?b" }},
		{"method", func(r *Route) { r.Gateway.Matches[0].Method = "GET POST" }},
		{"header name", func(r *Route) { r.Gateway.Matches[0].Headers = []ValueMatch{{Name: "X A", Value: "v"}} }},
		{"header value CR LF", func(r *Route) { r.Gateway.Matches[0].Headers = []ValueMatch{{Name: "X-A", Value: "v\r\nX-B: w"}} }},
		{"set header CR LF", func(r *Route) {
			r.Gateway.Filters = &HTTPFilters{RequestHeaders: &HeaderMods{Set: []HeaderValue{{Name: "X-A", Value: "v\nw"}}}}
		}},
		{"remove header name", func(r *Route) {
			r.Gateway.Filters = &HTTPFilters{ResponseHeaders: &HeaderMods{Remove: []string{"a:b"}}}
		}},
		{"redirect scheme", func(r *Route) { r.Gateway.Filters = &HTTPFilters{Redirect: &HTTPRedirect{Scheme: "ftp"}} }},
		{"redirect code", func(r *Route) { r.Gateway.Filters = &HTTPFilters{Redirect: &HTTPRedirect{StatusCode: 200}} }},
		{"redirect port", func(r *Route) { r.Gateway.Filters = &HTTPFilters{Redirect: &HTTPRedirect{Port: 70000}} }},
		{"rewrite hostname", func(r *Route) { r.Gateway.Filters = &HTTPFilters{Rewrite: &URLRewrite{Hostname: "a b"}} }},
		{"prefix replace of an exact match", func(r *Route) {
			r.Gateway.Matches[0].PathType = GatewayPathExact
			r.Gateway.Filters = &HTTPFilters{Rewrite: &URLRewrite{Path: &PathModifier{Type: ReplacePrefixMatch, Value: "/x"}}}
		}},
		{"too long for a command line", func(r *Route) {
			for i := range 4 {
				r.Gateway.Matches = append(r.Gateway.Matches, HTTPMatch{PathType: GatewayPathExact, Path: "/" + strings.Repeat("a", 1600) + string(rune('a'+i))})
			}
		}},
	} {
		r := validGatewayRoute()
		tt.change(&r)
		if err := ValidateRoute(r); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}
