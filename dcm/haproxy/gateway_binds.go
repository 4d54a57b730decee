package haproxy

import (
	"slices"

	"github.com/dcm-router/dcm/dcm"
)

// gatewayBinds lists the binds of one scheme the rendered state has: the
// pre-bound ones (every address on every port of the scheme), then those
// of listeners on other ports (dcm.State.GatewayBinds).
func (s Settings) gatewayBinds(https bool) []string {
	return s.gatewayBindsWith(s.gatewayExtra, https)
}

// gatewayBindsWith is gatewayBinds for a state with the extra binds extra.
// An extra bind the pre-bound set has already, in either scheme, is left
// out: HAProxy would bind it twice (the Gateway source never asks for
// one; the planner's input may, from a what-if).
func (s Settings) gatewayBindsWith(extra []dcm.GatewayBind, https bool) []string {
	if !gatewayServed(s.Gateway) {
		return nil
	}
	out := GatewayBindAddrs(s.Gateway, https)
	for _, b := range extra {
		if b.HTTPS != https || s.Gateway.Prebound(dcm.GatewayBind{Bind: b.Bind}) || s.Gateway.Prebound(dcm.GatewayBind{Bind: b.Bind, HTTPS: true}) {
			continue
		}
		if !https && slices.Contains(extra, dcm.GatewayBind{Bind: b.Bind, HTTPS: true}) {
			continue // both schemes asked for: HTTPS takes it
		}
		out = append(out, b.Bind)
	}
	return out
}
