package plan

import "github.com/dcm-router/dcm/dcm"

// unbound notes, for a route about to be planned, that HAProxy does not
// bind the Gateway bind it is served on: only a reload adds a listening
// socket (dcm.ReasonGatewayListenerPort, or dcm.ReasonGatewayAddressPool
// for an address of the pool not bound yet), and the reload's fresh state
// binds it (Fresh, dcm.ExtraGatewayBinds). A route of no Gateway, or on a
// bound one, is planned as any other.
func (c *computation) unbound(r dcm.Route) bool {
	b, ok := dcm.GatewayBindOf(r)
	if !ok || dcm.GatewayBound(c.actual, c.caps, b) {
		return false
	}
	c.reasons = append(c.reasons, c.caps.Gateway.UnboundReason(b))
	return true
}
