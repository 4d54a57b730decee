// Package routing holds the rules that turn dcm's routes into HAProxy's
// routing: the keys a route puts into the maps and their order, the values
// of the insecure-policy maps, and the names of the pool's spare backends.
// The cfg renderer and the runtime map replace (dcm/haproxy) and the
// planner (dcm/plan) all read them from here, so they cannot disagree on a
// key, an order or a name; the model (dcm) keeps the types they work on.
// Like the planner it imports only dcm and the standard library: it is
// compiled to WebAssembly with it and runs in the browser.
//
// HAProxy finds a request's backend in six maps, tried in this order —
// exact keys before prefixes, a named host before a wildcard domain
// (wildcard.go) before any host (dcm.HTTPMapTables) — and the first map
// that matches wins. Within a map the order of entries does not matter:
// exact maps are looked up in a tree, and a prefix map returns its longest
// key that begins the request's (dcm.MapTable.Prefix), so every map is a
// set of keys, kept sorted by key in files and plans for a stable text. The sni map (then sni_wild) sends TLS connections of passthrough
// routes by the ClientHello's server name to their TCP backends, before
// any TLS is terminated. Two more, insecure
// and insecure_host, say what plain HTTP for a TLS route gets
// (dcm.Route.Insecure), the setting maps hold each route's
// dcm.HTTPOptions (settings.go), and the allowlist map each backend's
// client allowlist (allowlist.go). The maps are derived from the routes alone.
package routing

import (
	"sort"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// key is one key of a route in one routing map.
type key struct {
	table dcm.MapTable
	key   string
}

// keys are the keys a route puts into the maps. A Prefix route "/api"
// yields the exact key host/api and the prefix key host/api/, so /api and
// /api/x match and /apix does not; Prefix "/" yields the prefix key host/.
//
// A passthrough route is found by its host alone, in the SNI map: HAProxy
// sees no path of a connection it does not decrypt.
//
// A wildcard route (dcm.Route.Wildcard) puts the same keys, with its
// domain in place of the host, into the wildcard maps (wildcard.go).
func keys(r dcm.Route) []key {
	if r.Wildcard() {
		return wildcardKeys(r)
	}
	if r.Kind == dcm.KindPassthrough {
		return []key{{dcm.MapSNI, r.Host}}
	}
	exact, prefix := dcm.MapAnyExact, dcm.MapAnyPrefix
	if r.Host != "" {
		exact, prefix = dcm.MapHostExact, dcm.MapHostPrefix
	}
	return pathKeys(r, exact, prefix, r.Host)
}

// pathKeys are the keys of r's path under host in the exact and prefix maps.
func pathKeys(r dcm.Route, exact, prefix dcm.MapTable, host string) []key {
	if r.PathType == dcm.PathExact {
		return []key{{exact, host + r.Path}}
	}
	p := strings.TrimRight(r.Path, "/")
	if p == "" {
		return []key{{prefix, host + "/"}}
	}
	return []key{{exact, host + p}, {prefix, host + p + "/"}}
}

// Tables builds the routing maps of the routed backends (and the
// allowlist map of every backend, retiring ones too), each sorted by key
// (SortEntries). Two routes with the same key: the first in route order
// (State.Routes) wins, the other is skipped (the kube layer rejects such
// conflicts anyway); such routes have the same host (a key starts with
// its route's host or wildcard domain, and no host holds a '/'). It does
// not validate: the renderer does, before anything reaches HAProxy.
//
// Of any subset of backends that holds, with each backend, every other
// one of the same host, it builds the entries the whole state has for
// their keys (the maps not keyed by host and path are keyed by HAProxy
// backend, one per backend) — but for the chunks of long allowlists,
// whose ids depend on every list (Chunked): the planner changes maps by
// such subsets (dcm/plan's mapOps).
func Tables(backends []*dcm.Backend) map[dcm.MapTable][]dcm.MapEntry {
	routed := make([]*dcm.Backend, 0, len(backends))
	for _, b := range backends {
		if b.Routed() {
			routed = append(routed, b)
		}
	}
	sort.SliceStable(routed, func(i, j int) bool {
		a, b := routed[i], routed[j]
		if a.Route.Less(b.Route) || b.Route.Less(a.Route) {
			return a.Route.Less(b.Route)
		}
		return a.Name < b.Name
	})
	out := make(map[dcm.MapTable][]dcm.MapEntry, len(dcm.MapTables))
	seen := make(map[dcm.MapTable]map[string]bool, len(dcm.MapTables))
	for _, t := range dcm.MapTables {
		out[t] = []dcm.MapEntry{}
		seen[t] = map[string]bool{}
	}
	var gateway []*dcm.Backend
	for _, b := range routed {
		if b.Route.Gateway != nil {
			// Found by the Gateway maps alone (gateway.go).
			gateway = append(gateway, b)
			out[dcm.MapGatewayRule] = append(out[dcm.MapGatewayRule], dcm.MapEntry{Key: b.ProxyName(), Backend: b.Name, Slot: b.Slot, Action: GatewayRuleValue(b.Route)})
			continue
		}
		for _, k := range keys(b.Route) {
			if seen[k.table][k.key] {
				continue
			}
			seen[k.table][k.key] = true
			out[k.table] = append(out[k.table], dcm.MapEntry{Key: k.key, Backend: b.Name, Slot: b.Slot})
		}
		if a := InsecureAction(b.Route); a != "" {
			t, key := dcm.MapInsecure, b.ProxyName()
			if b.Route.Kind == dcm.KindPassthrough {
				t, key = dcm.MapInsecureHost, insecureHostKey(b.Route)
			}
			if !seen[t][key] {
				seen[t][key] = true
				out[t] = append(out[t], dcm.MapEntry{Key: key, Backend: b.Name, Slot: b.Slot, Action: a})
			}
		}
		if e, ok := rateLimitEntry(b); ok {
			out[dcm.MapRateLimit] = append(out[dcm.MapRateLimit], e)
		}
		for _, t := range dcm.SettingMapTables {
			if v := SettingValue(t, b.Route); v != "" && !seen[t][b.ProxyName()] {
				seen[t][b.ProxyName()] = true
				out[t] = append(out[t], dcm.MapEntry{Key: b.ProxyName(), Backend: b.Name, Slot: b.Slot, Action: v})
			}
		}
		if v := HeaderValue(b.Route); v != "" {
			out[dcm.MapHeaders] = append(out[dcm.MapHeaders], dcm.MapEntry{Key: b.ProxyName(), Backend: b.Name, Slot: b.Slot, Action: v})
		}
	}
	out[dcm.MapGateway] = append(out[dcm.MapGateway], gatewayEntries(gateway)...)
	out[dcm.MapAllowlist] = append(out[dcm.MapAllowlist], allowlistEntries(backends)...)
	for _, es := range out {
		SortEntries(es)
	}
	return out
}

// SortEntries puts a map's entries in file order: by key. No lookup
// depends on it (dcm.MapTable.Prefix); it gives a map one text, so a map
// changed entry by entry sorts back to the map rendered from scratch, and
// the runtime's map (in the order its entries came) compares with the
// file once sorted. The allowlist map's chunks (dcm.AllowlistChunkPrefix)
// sort before the backends' lists that name them.
func SortEntries(es []dcm.MapEntry) {
	sort.Slice(es, func(i, j int) bool { return es[i].Key < es[j].Key })
}
