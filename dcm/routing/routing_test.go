package routing

import (
	"slices"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func TestTables(t *testing.T) {
	route := func(name, host, path string, pt dcm.PathType, kind dcm.RouteKind) dcm.Backend {
		r := dcm.Route{Namespace: "ns", Name: name, Kind: kind, Host: host, Path: path, PathType: pt}
		return dcm.Backend{Name: r.BackendName(), Route: r}
	}
	tests := []struct {
		name     string
		backends []*dcm.Backend
		want     map[dcm.MapTable][]string // table → "key value", sorted by key
	}{
		{
			name:     "a prefix route has an exact and a prefix key",
			backends: dcm.BackendList(route("a", "a.test", "/api", dcm.PathPrefix, dcm.KindHTTP)),
			want: map[dcm.MapTable][]string{
				dcm.MapHostExact:  {"a.test/api be_http:ns:a"},
				dcm.MapHostPrefix: {"a.test/api/ be_http:ns:a"},
			},
		},
		{
			name: "every map sorted by key; any host in its own maps",
			backends: dcm.BackendList(
				route("root", "a.test", "/", dcm.PathPrefix, dcm.KindHTTP),
				route("deep", "a.test", "/x/y", dcm.PathPrefix, dcm.KindHTTP),
				route("any", "", "/z", dcm.PathExact, dcm.KindHTTP),
			),
			want: map[dcm.MapTable][]string{
				dcm.MapHostExact:  {"a.test/x/y be_http:ns:deep"},
				dcm.MapHostPrefix: {"a.test/ be_http:ns:root", "a.test/x/y/ be_http:ns:deep"},
				dcm.MapAnyExact:   {"/z be_http:ns:any"},
			},
		},
		{
			name:     "a passthrough route is found by SNI",
			backends: dcm.BackendList(route("p", "p.test", "", dcm.PathPrefix, dcm.KindPassthrough)),
			want: map[dcm.MapTable][]string{
				dcm.MapSNI:          {"p.test be_passthrough:ns:p"},
				dcm.MapInsecureHost: {}, // None: no HTTP map names the host
			},
		},
		{
			name: "a wildcard route is keyed by its domain in the wildcard maps; an exact host stays exact",
			backends: dcm.BackendList(
				route("wild", "*.w.test", "/api", dcm.PathPrefix, dcm.KindHTTP),
				route("www", "www.w.test", "/", dcm.PathPrefix, dcm.KindHTTP),
			),
			want: map[dcm.MapTable][]string{
				dcm.MapHostPrefix: {"www.w.test/ be_http:ns:www"},
				dcm.MapWildExact:  {".w.test/api be_http:ns:wild"},
				dcm.MapWildPrefix: {".w.test/api/ be_http:ns:wild"},
			},
		},
		{
			name:     "a wildcard passthrough route is found by the SNI's domain",
			backends: dcm.BackendList(route("p", "*.p.test", "", dcm.PathPrefix, dcm.KindPassthrough)),
			want: map[dcm.MapTable][]string{
				dcm.MapSNIWild:      {".p.test be_passthrough:ns:p"},
				dcm.MapInsecureHost: {},
			},
		},
		{
			name: "two routes with one key: the first in route order wins",
			backends: dcm.BackendList(
				route("b", "a.test", "/", dcm.PathPrefix, dcm.KindHTTP),
				route("a", "a.test", "/", dcm.PathPrefix, dcm.KindHTTP),
			),
			want: map[dcm.MapTable][]string{dcm.MapHostPrefix: {"a.test/ be_http:ns:a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Tables(tt.backends)
			for _, table := range dcm.MapTables {
				lines := []string{}
				for _, e := range got[table] {
					lines = append(lines, e.Key+" "+e.Value())
				}
				want := tt.want[table]
				if want == nil {
					want = []string{}
				}
				if !slices.Equal(lines, want) {
					t.Errorf("%s: %q, want %q", table, lines, want)
				}
			}
		})
	}
}

func TestInsecureAction(t *testing.T) {
	tests := []struct {
		route dcm.Route
		want  string
	}{
		{dcm.Route{Kind: dcm.KindHTTP}, ""},
		{dcm.Route{Kind: dcm.KindEdge}, ""},
		{dcm.Route{Kind: dcm.KindEdge, Insecure: dcm.InsecureRedirect}, "redirect-302"},
		{dcm.Route{Kind: dcm.KindReencrypt, Insecure: dcm.InsecureRedirect, RedirectCode: 308}, "redirect-308"},
		{dcm.Route{Kind: dcm.KindEdge, Insecure: dcm.InsecureNone}, ActionNone},
		{dcm.Route{Kind: dcm.KindPassthrough}, ""},
		{dcm.Route{Kind: dcm.KindPassthrough, Insecure: dcm.InsecureRedirect, RedirectCode: 301}, "redirect-301"},
	}
	for _, tt := range tests {
		got := InsecureAction(tt.route)
		if got != tt.want {
			t.Errorf("%s %q %d: %q, want %q", tt.route.Kind, tt.route.Insecure, tt.route.RedirectCode, got, tt.want)
		}
		if got != "" {
			if err := ValidateInsecureAction("action", got); err != nil {
				t.Errorf("%q: %v", got, err)
			}
		}
	}
	for _, bad := range []string{"", "redirect-200", "redirect-", "allow", "none "} {
		if ValidateInsecureAction("action", bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPoolNames(t *testing.T) {
	tests := []struct {
		name  string
		kind  dcm.RouteKind
		n     int
		ok    bool
		spare dcm.RouteKind
	}{
		{name: "be_http:_pool:1", kind: dcm.KindHTTP, n: 1, ok: true, spare: dcm.KindHTTP},
		{name: "be_reencrypt:_pool:12", kind: dcm.KindReencrypt, n: 12, ok: true, spare: dcm.KindReencrypt},
		{name: "be_passthrough:_pool:3", kind: dcm.KindPassthrough, n: 3, ok: true, spare: dcm.KindPassthrough},
		// Not numbered spares; SpareKind reads them as route backends.
		{name: "be_http:_pool:01", spare: dcm.KindHTTP},
		{name: "be_http:_pool:0", spare: dcm.KindHTTP},
		{name: "be_edge:ns:r", spare: dcm.KindHTTP},
		{name: "be_passthrough:ns:r", spare: dcm.KindPassthrough},
		{name: "fe_http"},
	}
	for _, tt := range tests {
		kind, n, ok := ParsePoolBackend(tt.name)
		if ok != tt.ok || kind != tt.kind || n != tt.n {
			t.Errorf("ParsePoolBackend(%q) = %q, %d, %v; want %q, %d, %v", tt.name, kind, n, ok, tt.kind, tt.n, tt.ok)
		}
		if ok && PoolBackendName(kind, n) != tt.name {
			t.Errorf("PoolBackendName(%q, %d) = %q", kind, n, PoolBackendName(kind, n))
		}
		if k, ok := SpareKind(tt.name); k != tt.spare || ok != (tt.spare != "") {
			t.Errorf("SpareKind(%q) = %q, %v; want %q", tt.name, k, ok, tt.spare)
		}
		if tcp := TCPSpare(tt.name); tcp != (tt.spare == dcm.KindPassthrough) {
			t.Errorf("TCPSpare(%q) = %v", tt.name, tcp)
		}
	}
	names := []string{"be_http:ns:old", "be_http:_pool:10", "be_passthrough:_pool:1", "be_http:_pool:2"}
	SortPool(names)
	if want := []string{"be_http:_pool:2", "be_http:_pool:10", "be_http:ns:old", "be_passthrough:_pool:1"}; !slices.Equal(names, want) {
		t.Errorf("SortPool: %q, want %q", names, want)
	}
}
