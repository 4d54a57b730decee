package dcm

// DefaultBalance is the balance algorithm of a route of kind k that names
// none: source for passthrough, as OpenShift's ROUTER_TCP_BALANCE_SCHEME
// (a client keeps its pod, which no cookie can do for a passed-through
// connection), roundrobin for the others.
func DefaultBalance(k RouteKind) string {
	if k == KindPassthrough {
		return BalanceSource
	}
	return BalanceRoundRobin
}

// BalanceOf is the balance algorithm the route is served with.
func (r Route) BalanceOf() string {
	if r.Balance == "" {
		return DefaultBalance(r.Kind)
	}
	return r.Balance
}

// HashConsistent reports whether a balance algorithm hashes, so HAProxy
// needs hash-type consistent with it: a backend with the default
// map-based hash refuses add server ("Backend must use a dynamic load
// balancing to support dynamic servers", measured with 2.6.12).
func HashConsistent(balance string) bool { return balance == BalanceSource }
