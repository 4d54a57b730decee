package dcm

import (
	"slices"
	"strconv"
	"strings"
)

// ReasonGatewayListenerPort: a Gateway route is served on an address and
// port HAProxy does not bind — its listener's port is outside the
// pre-bound set (--gateway-http-ports, --gateway-https-ports) — and a
// listening socket cannot be added at runtime in HAProxy 2.6: a reload
// binds it (State.GatewayBinds).
const ReasonGatewayListenerPort ReloadReason = "gateway-listener-port"

// ReasonGatewayAddressPool: with GatewayBinds.Spares, a Gateway route is
// on an address of the pool that HAProxy does not bind (the bound spare
// addresses were used up): a reload binds it, and Spares free ones again.
const ReasonGatewayAddressPool ReloadReason = "gateway-address-pool"

// GatewayBind is one address:port HAProxy binds for Gateway listeners:
// in fe_gw_https when HTTPS, else in fe_gw_http.
type GatewayBind struct {
	Bind  string `json:"bind"` // "ip:port", as GatewayRoute.Bind
	HTTPS bool   `json:"https,omitempty"`
}

// CompareGatewayBinds orders binds by address and port text, HTTP first.
func CompareGatewayBinds(a, b GatewayBind) int {
	if c := strings.Compare(a.Bind, b.Bind); c != 0 {
		return c
	}
	switch {
	case a.HTTPS == b.HTTPS:
		return 0
	case b.HTTPS:
		return -1
	}
	return 1
}

// GatewayBindOf is the bind a route is served on: its listener's address
// and port, HTTPS for an edge route and for a passthrough one (a
// TLSRoute's: TLS listeners share the HTTPS binds, fe_gw_tls in front of
// fe_gw_https). false for a route of no Gateway listener.
func GatewayBindOf(r Route) (GatewayBind, bool) {
	if r.Gateway == nil || r.Gateway.Bind == "" || (r.Kind != KindHTTP && r.Kind != KindEdge && r.Kind != KindPassthrough) {
		return GatewayBind{}, false
	}
	return GatewayBind{Bind: r.Gateway.Bind, HTTPS: r.Kind != KindHTTP}, true
}

// Prebound reports whether the flags bind b whatever the state: its
// address is in the pool, its port among the pre-bound ports of its
// scheme, and every address of the pool is bound (no Spares).
func (g GatewayBinds) Prebound(b GatewayBind) bool {
	return g.Spares <= 0 && g.inPool(b)
}

// inPool reports whether b's address is in the pool and its port among
// the pre-bound ports of its scheme.
func (g GatewayBinds) inPool(b GatewayBind) bool {
	host, port, ok := strings.Cut(b.Bind, ":")
	p, err := strconv.Atoi(port)
	if !ok || err != nil {
		return false
	}
	ports := g.HTTPPorts
	if b.HTTPS {
		ports = g.HTTPSPorts
	}
	return slices.Contains(ports, p) && slices.Contains(g.Addresses, host)
}

// UnboundReason is the reload a route on b needs when HAProxy does not
// bind it: the address pool's when b is an address of the pool on a
// pre-bound port (Spares), else the listener port's.
func (g GatewayBinds) UnboundReason(b GatewayBind) ReloadReason {
	if g.Spares > 0 && g.inPool(b) {
		return ReasonGatewayAddressPool
	}
	return ReasonGatewayListenerPort
}

// GatewayBound reports whether HAProxy, running st with the pre-bound
// binds of caps, binds b.
func GatewayBound(st State, caps Caps, b GatewayBind) bool {
	if caps.Gateway.Prebound(b) {
		return true
	}
	_, found := slices.BinarySearchFunc(st.GatewayBinds, b, CompareGatewayBinds)
	return found
}

// ExtraGatewayBinds are the binds a configuration rendered for d has
// beyond the flags' (Prebound), sorted: those the routes of d are served
// on and, with Spares, the pre-bound ports of the addresses the routes
// are on and of Spares free addresses of the pool, the lowest.
func ExtraGatewayBinds(d Desired, caps Caps) []GatewayBind {
	g := caps.Gateway
	var out []GatewayBind
	used := map[string]bool{}
	for _, b := range d.Backends {
		gb, ok := GatewayBindOf(b.Route)
		if !ok || g.Prebound(gb) {
			continue
		}
		out = append(out, gb)
		host, _, _ := strings.Cut(gb.Bind, ":")
		used[host] = true
	}
	if g.Spares > 0 {
		free := g.Spares
		for _, a := range g.Addresses {
			if !used[a] {
				if free == 0 {
					continue
				}
				free--
			}
			for _, p := range g.HTTPPorts {
				out = append(out, GatewayBind{Bind: a + ":" + strconv.Itoa(p)})
			}
			for _, p := range g.HTTPSPorts {
				out = append(out, GatewayBind{Bind: a + ":" + strconv.Itoa(p), HTTPS: true})
			}
		}
	}
	slices.SortFunc(out, CompareGatewayBinds)
	return slices.Compact(out)
}

// IsZero reports whether g binds nothing (no Gateway is served): what
// omitzero leaves out.
func (g GatewayBinds) IsZero() bool {
	return len(g.Addresses) == 0 && len(g.HTTPPorts) == 0 && len(g.HTTPSPorts) == 0 && g.Spares == 0
}
