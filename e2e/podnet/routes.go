package podnet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// hostRoute is a route of the host namespace, any table.
type hostRoute struct {
	dst netip.Prefix
	dev string
}

// hostRoutes lists the host's IPv4 routes, so that a slot the host already
// uses (a VPN, a container bridge on 10.X) is not shadowed by a pod
// network. The default route is left out: it overlaps everything.
func hostRoutes() ([]hostRoute, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ipTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "-4", "-j", "route", "show", "table", "all").Output()
	if errors.Is(err, exec.ErrNotFound) {
		return nil, fmt.Errorf("podnet: iproute2's ip is needed (apt-get install iproute2): %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("podnet: ip route show table all: %w", err)
	}
	return parseRoutes(out)
}

func parseRoutes(out []byte) ([]hostRoute, error) {
	var raw []struct {
		Dst string `json:"dst"`
		Dev string `json:"dev"`
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		return nil, fmt.Errorf("podnet: read ip -j route: %w", err)
	}
	var routes []hostRoute
	for _, r := range raw {
		if r.Dst == "default" || r.Dst == "" {
			continue
		}
		dst := r.Dst
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		p, err := netip.ParsePrefix(dst)
		if err != nil {
			return nil, fmt.Errorf("podnet: route destination %q: %w", r.Dst, err)
		}
		routes = append(routes, hostRoute{dst: p, dev: r.Dev})
	}
	return routes, nil
}

// overlaps reports whether a host route other than the slot's own veth
// (a leftover, swept by now) touches the slot's /16.
func (s slot) overlaps(routes []hostRoute) bool {
	for _, r := range routes {
		if r.dev != s.hostLink() && r.dst.Overlaps(s.prefix()) {
			return true
		}
	}
	return false
}
