package kube

import (
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// addrChoice is the address a Gateway gets from the pool, or why none.
type addrChoice struct {
	addr string
	// reason and message say why addr is empty: a Programmed reason, or
	// with unsupported an Accepted one.
	reason, message string
	unsupported     bool
}

// assignAddresses gives each Gateway (oldest first) one address of the
// pool. First pass: a Gateway keeps the address it has (its status, or
// an earlier sync's) while it is in the pool and no older Gateway holds
// it, and gets the one spec.addresses asks for when free; second pass:
// the others take the lowest free address. So a Gateway's address moves
// only when the pool shrinks or it asks for another.
func assignAddresses(in gwInput, gws []*gwv1.Gateway) map[types.UID]addrChoice {
	pool := map[string]bool{}
	for _, a := range in.binds.Addresses {
		pool[a] = true
	}
	taken := map[string]bool{}
	out := map[types.UID]addrChoice{}
	var later []*gwv1.Gateway
	for _, g := range gws {
		want, c, asked := requestedAddress(g, pool)
		switch {
		case c != nil:
			out[g.UID] = *c
		case asked && taken[want]:
			out[g.UID] = addrChoice{reason: string(gwv1.GatewayReasonAddressNotUsable), message: "address " + want + " is another Gateway's"}
		case asked:
			taken[want] = true
			out[g.UID] = addrChoice{addr: want}
		default:
			if have := currentAddress(in, g); have != "" && pool[have] && !taken[have] {
				taken[have] = true
				out[g.UID] = addrChoice{addr: have}
				continue
			}
			later = append(later, g)
		}
	}
	for _, g := range later {
		i := slices.IndexFunc(in.binds.Addresses, func(a string) bool { return !taken[a] })
		if i < 0 {
			out[g.UID] = addrChoice{reason: string(gwv1.GatewayReasonAddressNotAssigned),
				message: "every address of --gateway-addresses is another Gateway's"}
			continue
		}
		taken[in.binds.Addresses[i]] = true
		out[g.UID] = addrChoice{addr: in.binds.Addresses[i]}
	}
	return out
}

// requestedAddress is the address spec.addresses asks for (asked), or
// the choice that refuses the request (c).
func requestedAddress(g *gwv1.Gateway, pool map[string]bool) (want string, c *addrChoice, asked bool) {
	if len(g.Spec.Addresses) == 0 {
		return "", nil, false
	}
	// An address dcm cannot read refuses the Gateway (Accepted); one it
	// reads but cannot serve leaves it unprogrammed (Programmed), as the
	// spec orders the two.
	var ips []netip.Addr
	for _, sa := range g.Spec.Addresses {
		if sa.Type != nil && *sa.Type != gwv1.IPAddressType {
			return "", &addrChoice{unsupported: true, reason: string(gwv1.GatewayReasonUnsupportedAddress),
				message: "address type " + string(*sa.Type) + " is not supported: only IPAddress"}, false
		}
		if sa.Value == "" {
			continue // any address: dcm's choice
		}
		a, err := netip.ParseAddr(sa.Value)
		if err != nil {
			return "", &addrChoice{unsupported: true, reason: string(gwv1.GatewayReasonUnsupportedAddress),
				message: "address " + sa.Value + " is not an IP address"}, false
		}
		ips = append(ips, a.Unmap())
	}
	for _, a := range ips {
		if !pool[a.String()] {
			return "", &addrChoice{reason: string(gwv1.GatewayReasonAddressNotUsable),
				message: "address " + a.String() + " is not in --gateway-addresses: HAProxy does not listen on it"}, false
		}
	}
	switch {
	case len(ips) == 0:
		return "", nil, false
	case len(ips) > 1 || len(g.Spec.Addresses) > 1:
		return "", &addrChoice{reason: string(gwv1.GatewayReasonAddressNotUsable),
			message: "dcm gives a Gateway one address: spec.addresses has more than one"}, false
	}
	return ips[0].String(), nil, true
}

// currentAddress is the address a Gateway has: an earlier sync's, else
// its status's.
func currentAddress(in gwInput, g *gwv1.Gateway) string {
	if a := in.prevAddr[g.UID]; a != "" {
		return a
	}
	for _, a := range g.Status.Addresses {
		if a.Type == nil || *a.Type == gwv1.IPAddressType {
			if ip, err := netip.ParseAddr(a.Value); err == nil {
				return ip.Unmap().String()
			}
		}
	}
	return ""
}
