package routing

import (
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func gwBackend(name, bind, rank string, hosts []string, ms ...dcm.HTTPMatch) *dcm.Backend {
	r := dcm.Route{Namespace: "gw", Name: name, Kind: dcm.KindHTTP, Balance: dcm.BalanceRoundRobin,
		Gateway: &dcm.GatewayRoute{Bind: bind, Hostnames: hosts, Matches: ms, Rank: rank}}
	return &dcm.Backend{Name: r.BackendName(), Kind: r.Kind, Route: r}
}

func prefix(p string) dcm.HTTPMatch { return dcm.HTTPMatch{PathType: dcm.GatewayPathPrefix, Path: p} }

// TestGatewayPrecedence: the candidates of one bind and host are listed
// in the Gateway API's precedence, whatever the routes' order.
func TestGatewayPrecedence(t *testing.T) {
	const bind = "10.0.0.1:80"
	withMethod := prefix("/a")
	withMethod.Method = "GET"
	twoHeaders := prefix("/a")
	twoHeaders.Headers = []dcm.ValueMatch{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}}
	oneHeader := prefix("/a")
	oneHeader.Headers = []dcm.ValueMatch{{Name: "a", Value: "1"}}
	oneQuery := prefix("/a")
	oneQuery.Query = []dcm.ValueMatch{{Name: "q", Value: "1"}}
	exact := dcm.HTTPMatch{PathType: dcm.GatewayPathExact, Path: "/a"}
	backends := []*dcm.Backend{
		gwBackend("root", bind, "1", nil, prefix("/")),
		gwBackend("query", bind, "1", nil, oneQuery),
		gwBackend("older", bind, "0", nil, prefix("/a/")), // the trailing slash does not count
		gwBackend("newer", bind, "2", nil, prefix("/a")),
		gwBackend("headers", bind, "1", nil, oneHeader, twoHeaders),
		gwBackend("method", bind, "1", nil, withMethod),
		gwBackend("exact", bind, "9", nil, exact),
		gwBackend("longer", bind, "9", nil, prefix("/a/b")),
		gwBackend("host", bind, "0", []string{"a.example", "*.example"}, prefix("/")),
		gwBackend("other-bind", "10.0.0.2:80", "0", nil, prefix("/")),
	}
	es := Tables(backends)[dcm.MapGateway]
	got := map[string]string{}
	for _, e := range es {
		got[e.Key] = e.Value()
	}
	want := map[string]string{
		"10.0.0.1:80/": "be_http:gw:exact/0,be_http:gw:longer/0,be_http:gw:method/0,be_http:gw:headers/1,be_http:gw:headers/0," +
			"be_http:gw:query/0,be_http:gw:older/0,be_http:gw:newer/0,be_http:gw:root/0",
		"10.0.0.1:80/a.example": "be_http:gw:host/0",
		"10.0.0.1:80/*.example": "be_http:gw:host/0",
		"10.0.0.2:80/":          "be_http:gw:other-bind/0",
	}
	if len(got) != len(want) {
		t.Errorf("keys %v", got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n got %s\nwant %s", k, got[k], w)
		}
	}
	for _, e := range es {
		if err := ValidateGatewayValue(dcm.MapGateway, "v", e.Value()); err != nil {
			t.Errorf("%s: %v", e.Key, err)
		}
	}
	for _, e := range Tables(backends)[dcm.MapGatewayRule] {
		if err := ValidateGatewayValue(dcm.MapGatewayRule, "v", e.Value()); err != nil {
			t.Errorf("%s: %v", e.Key, err)
		}
	}
	for _, m := range []dcm.MapTable{dcm.MapAnyPrefix, dcm.MapAnyExact, dcm.MapHostPrefix, dcm.MapInsecure} {
		if len(Tables(backends)[m]) > 0 {
			t.Errorf("Gateway routes in %s: %v", m, Tables(backends)[m])
		}
	}
}

// TestGatewayChunks: a host's list too long for one command line is cut
// into entries that each fit and chain with ",~".
func TestGatewayChunks(t *testing.T) {
	var backends []*dcm.Backend
	for i := range 400 {
		backends = append(backends, gwBackend(strings.Repeat("r", 40)+dcm.HexUint(uint64(i), 3), "10.0.0.1:80", dcm.HexUint(uint64(i), 3), nil, prefix("/")))
	}
	es := Tables(backends)[dcm.MapGateway]
	if len(es) < 3 {
		t.Fatalf("%d entries", len(es))
	}
	items := 0
	for i, e := range es {
		if len(e.Value()) > gatewayChunk+2 {
			t.Errorf("%s: %d bytes", e.Key, len(e.Value()))
		}
		if more := strings.HasSuffix(e.Value(), ",~"); more != (i < len(es)-1) {
			t.Errorf("%s: continued %v", e.Key, more)
		}
		items += len(strings.Split(strings.TrimSuffix(e.Value(), ",~"), ","))
	}
	if items != 400 || es[0].Key != "10.0.0.1:80/" || es[1].Key != "10.0.0.1:80/~1" {
		t.Errorf("%d items, keys %s %s", items, es[0].Key, es[1].Key)
	}
}

// TestGatewayRuleValue: texts are hex, so nothing in them reaches the
// structure, a map line or a command.
func TestGatewayRuleValue(t *testing.T) {
	m := dcm.HTTPMatch{PathType: dcm.GatewayPathExact, Path: "/a b;c", Method: "GET",
		Headers: []dcm.ValueMatch{{Name: "X-A", Value: "v\t-.;"}}, Query: []dcm.ValueMatch{{Name: "q", Value: "x", Regex: true}}}
	b := gwBackend("r", "10.0.0.1:80", "0", nil, m)
	b.Route.Gateway.Filters = &dcm.HTTPFilters{
		RequestHeaders:  &dcm.HeaderMods{Set: []dcm.HeaderValue{{Name: "S", Value: "1"}}, Add: []dcm.HeaderValue{{Name: "A", Value: ""}}, Remove: []string{"D"}},
		ResponseHeaders: &dcm.HeaderMods{Remove: []string{"R"}},
		Rewrite:         &dcm.URLRewrite{Hostname: "h.example", Path: &dcm.PathModifier{Type: dcm.ReplacePrefixMatch, Value: "/p"}},
	}
	b.Route.Gateway.Unresolved = true
	b.Route.Gateway.ListenerHostname = "*.ex"
	got := GatewayRuleValue(b.Route)
	want := "m-e2F6120623B63-v474554-h782D61-t76092D2E3B-q71-g78.a-s53-t31-a41-t-d44.b-d52.w-h682E6578616D706C65-x2F70.u.l-t2A2E6578.k-t30"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if err := ValidateGatewayValue(dcm.MapGatewayRule, "v", got); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "m-e2F 61", "m;", "m-e2F\n", strings.Repeat("A", dcm.MaxGatewayRuleValue+1)} {
		if ValidateGatewayValue(dcm.MapGatewayRule, "v", bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
