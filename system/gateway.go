package system

import (
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/spf13/pflag"

	"github.com/dcm-router/dcm/dcm"
)

// DefaultGatewayControllerName is the controllerName of the GatewayClasses
// dcm serves unless --gateway-controller-name says otherwise.
const DefaultGatewayControllerName = "dcm-router.io/gateway-controller"

// maxGatewayAddresses bounds the pool: HAProxy binds every address on
// every Gateway port before any Gateway exists, one listening socket each.
const maxGatewayAddresses = 256

// DefaultGatewayPoolSize is --gateway-pool-size: HTTP spares on top of
// --pool-size when Gateways are served. An HTTPRoute takes a backend per
// rule and listener, so applying a handful of routes takes dozens of
// spares at once (the conformance suite's tests, a few rules on a few
// listeners each, took more than 10 and reloaded for pool-exhausted);
// 64 empty spares cost some 700 KB of HAProxy's memory (11 KB each,
// docs/bench.md).
const DefaultGatewayPoolSize = 64

func (c *Config) gatewayFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.GatewayControllerName, "gateway-controller-name", c.GatewayControllerName, "serve the Gateway API's GatewayClasses with this controllerName")
	fs.StringSliceVar(&c.GatewayAddresses, "gateway-addresses", c.GatewayAddresses, "IP addresses and CIDRs that Gateways get their address from, one each; HAProxy binds all of them on the Gateway ports ahead of time (or those in use and --gateway-address-spares more), so a new Gateway needs no reload (default: none, no Gateway is served)")
	fs.IntSliceVar(&c.GatewayHTTPPorts, "gateway-http-ports", c.GatewayHTTPPorts, "ports of Gateway HTTP listeners bound on every Gateway address ahead of time; a listener on another port is bound on its Gateway's address by a reload (reason gateway-listener-port)")
	fs.IntSliceVar(&c.GatewayHTTPSPorts, "gateway-https-ports", c.GatewayHTTPSPorts, "ports of Gateway HTTPS and TLS (passthrough) listeners bound on every Gateway address ahead of time; a listener on another port is bound on its Gateway's address by a reload (reason gateway-listener-port)")
	fs.IntVar(&c.GatewayAddressSpares, "gateway-address-spares", c.GatewayAddressSpares, "bind only the Gateway addresses in use and this many free ones ahead of time, not all of --gateway-addresses; a Gateway route on an address not bound reloads (reason gateway-address-pool) and the reload binds this many free ones again (0: bind every address)")
	fs.IntVar(&c.GatewayPoolSize, "gateway-pool-size", c.GatewayPoolSize, "HTTP spare backends on top of --pool-size when Gateways are served (--gateway-addresses, --mode=dynamic with a pool): an HTTPRoute takes one per rule and listener, instead of a reload")
}

// GatewayBinds expands the Gateway flags into the addresses and ports
// HAProxy pre-binds, saying what is wrong with them by flag.
func (c Config) GatewayBinds() (dcm.GatewayBinds, error) {
	if len(c.GatewayAddresses) == 0 {
		return dcm.GatewayBinds{}, nil
	}
	addrs, err := expandAddresses(c.GatewayAddresses)
	if err != nil {
		return dcm.GatewayBinds{}, err
	}
	ports := map[int]string{}
	for _, p := range []struct {
		flag  string
		ports []int
	}{{"--gateway-http-ports", c.GatewayHTTPPorts}, {"--gateway-https-ports", c.GatewayHTTPSPorts}} {
		for _, port := range p.ports {
			if port < 1 || port > 65535 {
				return dcm.GatewayBinds{}, fmt.Errorf("%s %d: want 1 to 65535", p.flag, port)
			}
			if other, dup := ports[port]; dup {
				return dcm.GatewayBinds{}, fmt.Errorf("%s %d: already in %s", p.flag, port, other)
			}
			ports[port] = p.flag
		}
	}
	if len(ports) == 0 {
		return dcm.GatewayBinds{}, fmt.Errorf("--gateway-addresses needs --gateway-http-ports or --gateway-https-ports")
	}
	binds := dcm.GatewayBinds{Addresses: addrs, HTTPPorts: slices.Sorted(slices.Values(c.GatewayHTTPPorts)),
		HTTPSPorts: slices.Sorted(slices.Values(c.GatewayHTTPSPorts)), Spares: c.GatewayAddressSpares}
	return binds, c.gatewayBindsFree(binds)
}

// expandAddresses turns IPs and CIDRs into canonical, sorted, distinct
// addresses.
func expandAddresses(list []string) ([]string, error) {
	seen := map[netip.Addr]bool{}
	for _, s := range list {
		if a, err := netip.ParseAddr(s); err == nil {
			seen[a.Unmap()] = true
			continue
		}
		prefix, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("--gateway-addresses %q: not an IP address or CIDR", s)
		}
		prefix = prefix.Masked()
		if prefix.Addr().BitLen()-prefix.Bits() > 8 {
			return nil, fmt.Errorf("--gateway-addresses %s: more than %d addresses", s, maxGatewayAddresses)
		}
		for a := prefix.Addr(); prefix.Contains(a); a = a.Next() {
			seen[a] = true
		}
	}
	if len(seen) > maxGatewayAddresses {
		return nil, fmt.Errorf("--gateway-addresses: %d addresses, at most %d", len(seen), maxGatewayAddresses)
	}
	addrs := slices.SortedFunc(func(yield func(netip.Addr) bool) {
		for a := range seen {
			if !yield(a) {
				return
			}
		}
	}, netip.Addr.Compare)
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out, nil
}

// gatewayBindsFree refuses a Gateway bind that is also the HTTP or HTTPS
// frontend's: HAProxy would bind it twice.
func (c Config) gatewayBindsFree(b dcm.GatewayBinds) error {
	for _, bind := range []struct{ flag, addr string }{{"--http-bind", c.HTTPBind}, {"--https-bind", c.HTTPSBind}} {
		host, port, err := net.SplitHostPort(bind.addr)
		if err != nil || bind.addr == "" {
			continue
		}
		for _, a := range b.Addresses {
			for _, p := range slices.Concat(b.HTTPPorts, b.HTTPSPorts) {
				if (host == a || host == "" || host == "0.0.0.0" || host == "::") && port == fmt.Sprint(p) {
					return fmt.Errorf("--gateway-addresses %s port %d: also %s %s", a, p, bind.flag, bind.addr)
				}
			}
		}
	}
	return nil
}
