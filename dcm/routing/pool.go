package routing

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

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
var PoolKinds = []dcm.RouteKind{dcm.KindHTTP, dcm.KindPassthrough, dcm.KindReencrypt}

// PoolSticky is the pool kind of sticky spares (not a route kind, so an
// untyped constant): HTTP backends rendered with
// a dynamic cookie, for sticky routes (Caps.StickyPool).
const PoolSticky = "sticky"

const poolInfix = ":_pool:"

// PoolBackendName is the n-th spare backend of a kind: be_<kind>:_pool:<n>.
func PoolBackendName(kind dcm.RouteKind, n int) string {
	return "be_" + string(kind) + poolInfix + strconv.Itoa(n)
}

// ParsePoolBackend reads a spare backend's name back.
func ParsePoolBackend(name string) (dcm.RouteKind, int, bool) {
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
	return dcm.RouteKind(kind), n, true
}

// PoolKind is the kind of spare a route of kind k takes. An edge route's
// backend is an HTTP backend (TLS ends in the frontend), so it takes an
// HTTP spare.
// A reencrypt route takes a reencrypt spare.
func PoolKind(k dcm.RouteKind) dcm.RouteKind {
	if k == dcm.KindEdge {
		return dcm.KindHTTP
	}
	return k
}

// SpareKind is the kind of a free spare backend: a numbered spare's own,
// or, for a route's backend that joined the pool once its route was
// deleted and its servers were gone (be_<kind>:<namespace>:<route>), the
// pool kind of that route's kind.
func SpareKind(name string) (dcm.RouteKind, bool) {
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
	return PoolKind(dcm.RouteKind(kind)), true
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

// TCPBackend reports whether a backend carries connections, not requests:
// a passthrough route's, or a spare for one. The renderer gives such a
// backend mode tcp and its route's rules; the planner's memory estimate
// counts it at MemoryCosts.PerTCPBackend, as those rules make it cost.
func TCPBackend(b *dcm.Backend) bool {
	if b.Route.Name != "" {
		return b.Route.Kind == dcm.KindPassthrough
	}
	return TCPSpare(b.ProxyName())
}

// TCPSpare reports whether a free spare (a name of State.Pool) is a
// passthrough one, a TCP backend.
func TCPSpare(name string) bool {
	k, ok := SpareKind(name)
	return ok && k == dcm.KindPassthrough
}
