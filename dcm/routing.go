package dcm

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Routing: HAProxy finds a request's backend in four maps, tried in this
// order — exact keys before prefixes, a named host before any host — and the
// first match wins. A fifth map, sni, sends TLS connections of passthrough
// routes by the ClientHello's server name to their TCP backends, before
// any TLS is terminated. Two more, insecure and insecure_host, say what
// plain HTTP for a TLS route gets (Route.Insecure). The maps are derived from the routes alone, so the cfg
// renderer, the runtime map replace and the planner all read them from here
// and cannot disagree on a key or on the order.

// MapTable names one routing map.
type MapTable string

const (
	MapHostExact  MapTable = "host_exact"
	MapHostPrefix MapTable = "host_prefix"
	MapAnyExact   MapTable = "any_exact"
	MapAnyPrefix  MapTable = "any_prefix"
	// MapSNI maps a passthrough route's host to its backend.
	MapSNI MapTable = "sni"
	// MapInsecure maps the HAProxy backend of a route that terminates TLS
	// to what a plain HTTP request routed to it gets (InsecureAction),
	// when its policy is not Allow. fe_http routes a request by the HTTP
	// maps first and asks this map about the backend found, so the most
	// specific route decides: /api with Redirect and / with Allow on one
	// host each keep their own policy.
	MapInsecure MapTable = "insecure"
	// MapInsecureHost maps the host of a passthrough route with the
	// Redirect policy to its InsecureAction: HAProxy serves no path of
	// such a host, so fe_http redirects the whole host before routing.
	MapInsecureHost MapTable = "insecure_host"
)

// HTTPMapTables lists the maps of HTTP requests in the order HAProxy tries them.
var HTTPMapTables = []MapTable{MapHostExact, MapHostPrefix, MapAnyExact, MapAnyPrefix}

// MapTables lists every routing map: the HTTP maps, the SNI map, then the
// insecure-policy maps.
var MapTables = []MapTable{MapHostExact, MapHostPrefix, MapAnyExact, MapAnyPrefix, MapSNI, MapInsecure, MapInsecureHost}

// HTTPSOnly reports whether a map is read only when HAProxy has an HTTPS
// frontend: the SNI map by it, the insecure maps by fe_http only to send
// plain HTTP over to it.
func (t MapTable) HTTPSOnly() bool {
	return t == MapSNI || t == MapInsecure || t == MapInsecureHost
}

// Insecure reports whether a map holds insecure-policy actions rather than
// backends.
func (t MapTable) Insecure() bool { return t == MapInsecure || t == MapInsecureHost }

// InsecureActionNone is the action of the None policy: fe_http answers as
// for a request no route matches.
const InsecureActionNone = "none"

// InsecureAction is the value an insecure map holds for a route: "none",
// or "redirect-<code>"; "" for Allow, which has no entry.
func (r Route) InsecureAction() string {
	switch r.InsecureEffective() {
	case InsecureRedirect:
		return "redirect-" + strconv.Itoa(r.RedirectStatus())
	case InsecureNone:
		if r.Kind == KindPassthrough {
			return "" // its host is in no HTTP map: nothing to stop
		}
		return InsecureActionNone
	}
	return ""
}

// ValidateInsecureAction checks a value of an insecure map.
func ValidateInsecureAction(field, s string) error {
	if s == InsecureActionNone {
		return nil
	}
	if code, ok := strings.CutPrefix(s, "redirect-"); ok {
		for _, c := range RedirectCodes {
			if code == strconv.Itoa(c) {
				return nil
			}
		}
	}
	return invalid(RejectInvalidValue, field, s)
}

// Prefix reports whether the map matches keys by prefix (map_beg).
func (t MapTable) Prefix() bool { return t == MapHostPrefix || t == MapAnyPrefix }

// MapEntry is one line of a routing map: requests whose key matches go to
// the backend. Backend is the route's backend as dcm names it; Slot, when
// set, is the spare backend that carries it in HAProxy.
type MapEntry struct {
	Key     string `json:"key"`
	Backend string `json:"backend"`
	Slot    string `json:"slot,omitempty"`
	// Action is the value of an insecure map's entry (InsecureAction).
	Action string `json:"action,omitempty"`
}

// Value is what the map says to HAProxy: the backend's HAProxy name, or
// an insecure map's action.
func (e MapEntry) Value() string {
	if e.Action != "" {
		return e.Action
	}
	if e.Slot != "" {
		return e.Slot
	}
	return e.Backend
}

// MapKey is one key of a route in one routing map.
type MapKey struct {
	Table MapTable
	Key   string
}

// MapKeys are the keys a route puts into the maps. A Prefix route "/api"
// yields the exact key host/api and the prefix key host/api/, so /api and
// /api/x match and /apix does not; Prefix "/" yields the prefix key host/.
//
// A passthrough route is found by its host alone, in the SNI map: HAProxy
// sees no path of a connection it does not decrypt.
func (r Route) MapKeys() []MapKey {
	if r.Kind == KindPassthrough {
		return []MapKey{{MapSNI, r.Host}}
	}
	exact, prefix := MapAnyExact, MapAnyPrefix
	if r.Host != "" {
		exact, prefix = MapHostExact, MapHostPrefix
	}
	if r.PathType == PathExact {
		return []MapKey{{exact, r.Host + r.Path}}
	}
	p := strings.TrimRight(r.Path, "/")
	if p == "" {
		return []MapKey{{prefix, r.Host + "/"}}
	}
	return []MapKey{{exact, r.Host + p}, {prefix, r.Host + p + "/"}}
}

// Routed reports whether a backend has entries in the maps: it serves a
// route that is not being retired.
func (b Backend) Routed() bool { return b.Route.Name != "" && !b.Retiring }

// RoutingTables builds the routing maps of the routed backends, each in
// the order its file lists it and the runtime receives it. Two routes with
// the same key: the first in route order (State.Routes) wins, the other is
// skipped (the kube layer rejects such conflicts anyway). It does not
// validate: the renderer does, before anything reaches HAProxy.
func RoutingTables(backends []Backend) map[MapTable][]MapEntry {
	routed := make([]Backend, 0, len(backends))
	for _, b := range backends {
		if b.Routed() {
			routed = append(routed, b)
		}
	}
	slices.SortStableFunc(routed, func(a, b Backend) int {
		switch {
		case a.Route.Less(b.Route):
			return -1
		case b.Route.Less(a.Route):
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	out := make(map[MapTable][]MapEntry, len(MapTables))
	seen := make(map[MapTable]map[string]bool, len(MapTables))
	for _, t := range MapTables {
		out[t] = []MapEntry{}
		seen[t] = map[string]bool{}
	}
	for _, b := range routed {
		for _, k := range b.Route.MapKeys() {
			if seen[k.Table][k.Key] {
				continue
			}
			seen[k.Table][k.Key] = true
			out[k.Table] = append(out[k.Table], MapEntry{Key: k.Key, Backend: b.Name, Slot: b.Slot})
		}
		if a := b.Route.InsecureAction(); a != "" {
			t, key := MapInsecure, b.ProxyName()
			if b.Route.Kind == KindPassthrough {
				t, key = MapInsecureHost, b.Route.Host
			}
			if !seen[t][key] {
				seen[t][key] = true
				out[t] = append(out[t], MapEntry{Key: key, Backend: b.Name, Slot: b.Slot, Action: a})
			}
		}
	}
	for t, es := range out {
		SortMapEntries(t, es)
	}
	return out
}

// SortMapEntries puts a map's entries in file order. map_beg scans a list and
// takes the first match, so prefix maps list longer keys first; exact maps
// are sorted by key. The order depends on the keys alone, so a map changed
// entry by entry sorts back to the map rendered from scratch.
func SortMapEntries(t MapTable, es []MapEntry) {
	if t.Prefix() {
		slices.SortFunc(es, func(a, b MapEntry) int {
			if c := cmp.Compare(len(b.Key), len(a.Key)); c != 0 {
				return c
			}
			return strings.Compare(a.Key, b.Key)
		})
		return
	}
	slices.SortFunc(es, func(a, b MapEntry) int { return strings.Compare(a.Key, b.Key) })
}

// ValidateMapKey checks a routing map key: a host followed by a path, both
// already restricted to characters that need no quoting in a map file or an
// `add map` command.
func ValidateMapKey(field, s string) error {
	if s == "" || len(s) > 253+2048 {
		return invalid(RejectInvalidPath, field, s)
	}
	for i := 0; i < len(s); i++ {
		if !pathByte(s[i]) {
			return invalid(RejectInvalidPath, field, s)
		}
	}
	return nil
}

// Pools: in dynamic mode HAProxy starts with spare, empty backends per route
// kind. A new route takes one (add server, then a map replace points its
// keys at it) instead of a reload; a deleted route's spare goes back once
// its servers are gone, and so does a deleted route's own backend when it
// is rendered like a spare (an HTTP backend with the pool's balance).
// "_pool" cannot be a Kubernetes namespace (no underscore), so a numbered
// spare's name never collides with a route's.

// PoolKinds are the route kinds that get spare backends: HTTP backends
// (plain and edge routes), TCP backends (passthrough routes) and HTTP
// backends whose servers are TLS (reencrypt routes: the TLS settings come
// with each add server, but a spare of their own keeps them apart in the
// pool's accounting and the metrics).
var PoolKinds = []RouteKind{KindHTTP, KindPassthrough, KindReencrypt}

// PoolSticky is the pool kind of sticky spares (not a route kind, so an
// untyped constant): HTTP backends rendered with
// a dynamic cookie, for sticky routes (Caps.StickyPool).
const PoolSticky = "sticky"

const poolInfix = ":_pool:"

// PoolBackendName is the n-th spare backend of a kind: be_<kind>:_pool:<n>.
func PoolBackendName(kind RouteKind, n int) string {
	return "be_" + string(kind) + poolInfix + strconv.Itoa(n)
}

// ParsePoolBackend reads a spare backend's name back.
func ParsePoolBackend(name string) (RouteKind, int, bool) {
	rest, ok := strings.CutPrefix(name, "be_")
	if !ok {
		return "", 0, false
	}
	kind, num, ok := strings.Cut(rest, poolInfix)
	if !ok || kind == "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || strconv.Itoa(n) != num {
		return "", 0, false
	}
	return RouteKind(kind), n, true
}

// PoolKind is the kind of spare a route of kind k takes. An edge route's
// backend is an HTTP backend (TLS ends in the frontend), so it takes an
// HTTP spare.
// A reencrypt route takes a reencrypt spare.
func PoolKind(k RouteKind) RouteKind {
	if k == KindEdge {
		return KindHTTP
	}
	return k
}

// SpareKind is the kind of a free spare backend: a numbered spare's own,
// or, for a route's backend that joined the pool once its route was
// deleted and its servers were gone (be_<kind>:<namespace>:<route>), the
// pool kind of that route's kind.
func SpareKind(name string) (RouteKind, bool) {
	if k, _, ok := ParsePoolBackend(name); ok {
		return k, true
	}
	rest, ok := strings.CutPrefix(name, "be_")
	if !ok {
		return "", false
	}
	kind, route, ok := strings.Cut(rest, ":")
	if !ok || kind == "" || route == "" {
		return "", false
	}
	return PoolKind(RouteKind(kind)), true
}

// SortPool orders spare backends the way they are taken: by kind, the
// numbered ones by number (pool:2 before pool:10), then the recycled
// route backends by name.
func SortPool(names []string) {
	slices.SortFunc(names, comparePool)
}

func comparePool(a, b string) int {
	ka, _ := SpareKind(a)
	kb, _ := SpareKind(b)
	if c := strings.Compare(string(ka), string(kb)); c != 0 {
		return c
	}
	_, na, oka := ParsePoolBackend(a)
	_, nb, okb := ParsePoolBackend(b)
	switch {
	case oka && !okb:
		return -1
	case !oka && okb:
		return 1
	}
	if c := cmp.Compare(na, nb); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}
