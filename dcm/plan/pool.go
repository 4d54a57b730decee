package plan

import (
	"slices"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// Pooled routes (dynamic mode with caps.Pool): a new route takes a free spare
// backend — add server for its endpoints, then a map replace points its keys
// at the spare. A deleted route leaves the maps first, then its servers are
// retired as any retired server is (maint, del server once idle), and when
// the last one is gone its spare returns to the pool. A route rendered under
// its own name at the last reload has no spare: its own backend, empty and
// in no map, becomes one when it is rendered as spares are (same kind, same
// balance), and carries new routes under its old name; pages, events and
// metrics keep naming each route's backend after its route (Backend.Name,
// with the HAProxy name in Backend.Slot). A route whose host or
// path changes is re-keyed in the maps in place. Only what HAProxy cannot
// change at runtime (balance, checks) and an empty pool reload.
//
// A reload renders every route as a backend of its own name and a full pool
// (Fresh): the reload rewrites everything anyway, and it keeps the cfg of a
// fresh start free of history. Between reloads the cfg is rendered from the
// state as it is, spares included, so a restart of HAProxy finds exactly
// the runtime state.

// pool hands out the free spares of a plan. Spares released by the plan are
// not handed out again by it: their old route's keys leave the maps only when
// the plan's map replace commits, after the new route's servers were added.
type pool struct {
	free     []string // from actual, in taking order
	released []string
	sticky   bool // sticky spares are rendered
	// exhausted are the kinds a route found no spare of: the reload
	// that follows renders them PoolBurst spares (burstPool).
	exhausted []dcm.RouteKind
}

func newPool(st dcm.State, caps dcm.Caps) *pool {
	if !caps.Pooled() {
		return &pool{}
	}
	return &pool{free: slices.Clone(st.Pool), sticky: caps.StickyPool > 0}
}

// take returns the spare that carries the new route d ("" when it is d's
// own backend, back from the pool), or why the route needs a reload.
func (p *pool) take(d *dcm.DesiredBackend) (string, dcm.ReloadReason) {
	if !slices.Contains(routing.PoolKinds, routing.PoolKind(d.Route.Kind)) || !poolBalanced(d.Route) {
		return "", dcm.ReasonRouteAdded // spares are rendered for this kind and balance only
	}
	if s, t := d.Route.TCPTimeouts(); s != 0 || t != 0 {
		return "", dcm.ReasonPassthroughTimeout // spares have no timeouts of their own
	}
	kind := routing.PoolKind(d.Route.Kind)
	if d.Route.Sticky {
		// Plain spares have no cookie (with cookie insert, HAProxy expires
		// the cookie in every response of a server without one, so plain
		// routes must not get it): sticky routes take sticky spares.
		if !p.sticky {
			return "", dcm.ReasonRouteAdded
		}
		kind = routing.PoolSticky
	} else if i := slices.Index(p.free, d.Name); i >= 0 {
		// A route that comes back finds its own backend if it is still
		// free: HAProxy knows it by the route's name again.
		p.free = slices.Delete(p.free, i, i+1)
		return "", ""
	}
	for i, name := range p.free {
		if k, ok := routing.SpareKind(name); ok && k == kind {
			p.free = slices.Delete(p.free, i, i+1)
			return name, ""
		}
	}
	if !slices.Contains(p.exhausted, kind) {
		p.exhausted = append(p.exhausted, kind)
	}
	return "", dcm.ReasonPoolExhausted
}

// spareLike reports whether a route's backend is rendered as a spare of
// its kind is, so a spare can carry the route and, empty again, the
// route's own backend can be a spare.
// A sticky route's backend is rendered with its cookie, which a plain
// spare must not have, so it is never one.
func spareLike(r dcm.Route) bool {
	s, t := r.TCPTimeouts()
	return slices.Contains(routing.PoolKinds, routing.PoolKind(r.Kind)) && poolBalanced(r) && !r.Sticky && s == 0 && t == 0
}

// sameTCPTimeouts reports whether two routes render the same timeouts
// into a passthrough backend (dcm.ReasonPassthroughTimeout).
func sameTCPTimeouts(a, d dcm.Route) bool {
	as, at := a.TCPTimeouts()
	ds, dt := d.TCPTimeouts()
	return as == ds && at == dt
}

// release returns the HAProxy backend of a deleted route whose servers are
// all gone to the pool: its spare, or the route's own backend (rendered for
// it at the last reload) when it is rendered as a spare is. Any other stays
// in HAProxy, empty and in no map, until the next reload drops it.
func (p *pool) release(b dcm.Backend) {
	switch {
	case b.Slot != "" && b.Slot != b.Route.BackendName():
		p.released = append(p.released, b.Slot)
	case spareLike(b.Route):
		// Its route's own backend, rendered for it (a backend its route
		// moved away from carries it as its Slot).
		p.released = append(p.released, b.ProxyName())
	}
}

func (p *pool) names() []string {
	if len(p.free)+len(p.released) == 0 {
		return nil
	}
	if len(p.released) == 0 {
		return p.free // what is left of a sorted pool is sorted
	}
	out := append(slices.Clone(p.free), p.released...)
	routing.SortPool(out)
	return out
}

// poolBalanced reports whether a route has the balance algorithm the
// spares of its kind are rendered with (routing.PoolBalance); HAProxy
// cannot change a backend's algorithm at runtime.
func poolBalanced(r dcm.Route) bool {
	return r.BalanceOf() == routing.PoolBalance(routing.PoolKind(r.Kind))
}

// PoolShare sizes the pool at every render: each kind gets at least a
// PoolShare-th of the desired routes that would take a spare of that kind
// (and never fewer than Caps.Pool, or Caps.StickyPool, or for HTTP
// Caps.Pool+Caps.GatewayPool), so a cluster can
// grow by a tenth of its routes of a kind between reloads whatever its
// size. An empty spare costs about 11 KB of HAProxy's memory (docs/bench.md)
// against some 60 KB for a route of 10 servers: a tenth is under 2 % of it.
const PoolShare = 10

// PoolBurst is how many spares a kind that ran out gets at the reload
// that follows (at most as many as it has routes): a cluster that is
// growing reloads once for up to PoolBurst new routes of a kind (or for
// doubling, when smaller), not once per tenth. A tenth is the steady
// state's share; the burst is paid only by a kind that grew through its
// whole pool, costs at most PoolBurst empty backends (12 MB, docs/bench.md),
// and shrinks as the growth takes the spares and back to a tenth at the
// next reload for any other reason. The reload it saves costs more: an
// old worker that holds its memory while its connections drain.
const PoolBurst = 1000

// freshPool is the pool a configuration rendered for desired starts with.
func freshPool(caps dcm.Caps, desired dcm.Desired) []string {
	return sizedPool(caps, desired, nil)
}

// burstPool is freshPool where the kinds in exhausted ran out of spares:
// each gets PoolBurst spares, or as many as it has routes when fewer,
// if that is more than its share.
func burstPool(caps dcm.Caps, desired dcm.Desired, exhausted []dcm.RouteKind) []string {
	return sizedPool(caps, desired, exhausted)
}

// sizedPool renders each kind's spares: the kind's share of its routes,
// never under its floor, and for a kind in burst its burst.
func sizedPool(caps dcm.Caps, desired dcm.Desired, burst []dcm.RouteKind) []string {
	if !caps.Pooled() {
		return nil
	}
	routes := make(map[dcm.RouteKind]int, len(routing.PoolKinds)+1)
	for _, d := range desired.Backends {
		routes[spareKindOf(d.Route)]++
	}
	size := func(kind dcm.RouteKind, floor int) int {
		if floor == 0 {
			return 0 // the kind's spares are turned off
		}
		n := max(floor, routes[kind]/PoolShare)
		if slices.Contains(burst, kind) {
			n = max(n, min(routes[kind], PoolBurst))
		}
		return n
	}
	var out []string
	for _, k := range append(slices.Clone(routing.PoolKinds), routing.PoolSticky) {
		floor := caps.Pool
		switch k {
		case routing.PoolSticky:
			floor = caps.StickyPool
		case dcm.KindHTTP:
			floor += caps.GatewayPool // Gateway routes are HTTP
		}
		for n := 1; n <= size(k, floor); n++ {
			out = append(out, routing.PoolBackendName(k, n))
		}
	}
	routing.SortPool(out)
	return out
}

// spareKindOf is the kind of spare route r takes (pool.take).
func spareKindOf(r dcm.Route) dcm.RouteKind {
	if r.Sticky {
		return routing.PoolSticky
	}
	return routing.PoolKind(r.Kind)
}

// rekeyable reports whether a route changed only in what the maps say (host,
// path, path type), so the change is a map replace and no reload.
func rekeyable(a, d dcm.Route) bool {
	a.Host, a.Path, a.PathType = d.Host, d.Path, d.PathType
	return a.SameServing(d)
}

// retire plans a backend whose route is gone: out of the maps (Retiring),
// its servers retired as endpoints that left.
func retire(a dcm.Backend) backendPlan {
	r := planDynamic(a, dcm.DesiredBackend{Name: a.Name, Route: a.Route})
	r.next.Retiring = true
	return r
}

// withSlot makes ops name the spare that carries their backend.
func withSlot(ops []dcm.Op, slot string) []dcm.Op {
	if slot == "" {
		return ops
	}
	for i := range ops {
		ops[i].Slot = slot
	}
	return ops
}
