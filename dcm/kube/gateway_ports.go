package kube

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

// Listener ports. The ports of --gateway-http-ports and
// --gateway-https-ports are bound on every Gateway address ahead of time;
// a listener on another port is accepted too, and HAProxy binds its
// address and port with one reload (dcm.ReasonGatewayListenerPort) when a
// route attaches to it: the listener is Programmed once the engine says
// the bind is there (GatewayBound), routes on it are served from then on
// and change at runtime again.

// portUnavailable says why HAProxy cannot serve a listener's port ("":
// it can): a port pre-bound for the other protocol (fe_gw_http and
// fe_gw_https cannot share a socket), or one of dcm's other frontends.
func (in gwInput) portUnavailable(l gwv1.Listener) string {
	port := int(l.Port)
	own, other, otherFlag := in.binds.HTTPPorts, in.binds.HTTPSPorts, "--gateway-https-ports"
	if l.Protocol == gwv1.HTTPSProtocolType || l.Protocol == gwv1.TLSProtocolType {
		// TLS listeners share fe_gw_https's binds (fe_gw_tls in front).
		own, other, otherFlag = in.binds.HTTPSPorts, in.binds.HTTPPorts, "--gateway-http-ports"
	}
	if slices.Contains(own, port) {
		return ""
	}
	if slices.Contains(other, port) {
		return fmt.Sprintf("port %d is bound for the other protocol's listeners (%s) on every Gateway address", port, otherFlag)
	}
	for _, r := range in.reserved {
		host, p, err := net.SplitHostPort(r)
		if err != nil || p != strconv.Itoa(port) {
			continue
		}
		if host == "" || host == "0.0.0.0" || host == "::" || slices.Contains(in.binds.Addresses, host) {
			return fmt.Sprintf("port %d is dcm's own frontend's (%s)", port, r)
		}
	}
	return ""
}

// isBound reports whether HAProxy binds b: pre-bound, or bound by a
// reload for a listener on another port.
func (in gwInput) isBound(b dcm.GatewayBind) bool {
	return in.binds.Prebound(b) || slices.Contains(in.bound, b)
}

// addressPending makes a Gateway's Programmed condition (conds[1])
// Pending while HAProxy binds its address on no port (--gateway-address-spares:
// an address past the bound spares, until a route on it reloads).
func (in gwInput) addressPending(conds []metav1.Condition, addr string) {
	if addr == "" || conds[1].Status != metav1.ConditionTrue || in.binds.Spares <= 0 ||
		slices.ContainsFunc(in.bound, func(b dcm.GatewayBind) bool { return strings.HasPrefix(b.Bind, addr+":") }) {
		return
	}
	conds[1].Status, conds[1].Reason = metav1.ConditionFalse, string(gwv1.GatewayReasonPending)
	conds[1].Message = "HAProxy does not bind " + addr + " yet (the bound spare addresses are used up): dcm binds it with a reload (reason " +
		string(dcm.ReasonGatewayAddressPool) + ") once a route attaches"
}

// unboundMessage is a served listener's Programmed message while HAProxy
// does not bind its address and port yet.
func (in gwInput) unboundMessage(bind string, https bool) string {
	why := "its port is not among the pre-bound ones"
	reason := in.binds.UnboundReason(dcm.GatewayBind{Bind: bind, HTTPS: https})
	if reason == dcm.ReasonGatewayAddressPool {
		why = "the bound spare addresses are used up"
	}
	return "HAProxy does not bind " + bind + " yet (" + why + "): dcm binds it with a reload (reason " + string(reason) + ") once a route attaches"
}

// GatewayBound is the engine saying which binds HAProxy has beyond the
// pre-bound ones (engine.GatewayBindsListener): the listeners' Programmed
// conditions are computed again when it changed.
func (s *Source) GatewayBound(binds []dcm.GatewayBind) {
	s.gw.boundMu.Lock()
	changed := !slices.Equal(s.gw.bound, binds)
	s.gw.bound = slices.Clone(binds)
	s.gw.boundMu.Unlock()
	if changed && len(s.opts.GatewayBinds.Addresses) > 0 {
		s.enqueue(prefixGateway, "_/_")
	}
}

// gatewayBound is what GatewayBound last heard.
func (s *Source) gatewayBound() []dcm.GatewayBind {
	s.gw.boundMu.Lock()
	defer s.gw.boundMu.Unlock()
	return slices.Clone(s.gw.bound)
}
