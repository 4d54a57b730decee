package kube

import (
	"net"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

// listenerVerdict is what one listener's checks found.
type listenerVerdict struct {
	accepted, resolved, conflicted bool
	acceptReason, resolveReason    string
	conflictReason                 string
	acceptMsg, resolveMsg          string
	conflictMsg                    string
	kinds                          []gwv1.RouteGroupKind
}

// gatewayModel checks a Gateway of dcm's class and its listeners and
// builds its status but for attachedRoutes, which its routes count.
func (in gwInput) gatewayModel(g *gwv1.Gateway, addr addrChoice, classOK bool, out *gwOutput) *gwGateway {
	gen := g.Generation
	m := &gwGateway{gw: g, addr: addr.addr, status: &gwv1.GatewayStatus{}}
	conflicts := listenerConflicts(g.Spec.Listeners)
	valid := 0
	for _, l := range g.Spec.Listeners {
		v := in.checkListener(g, l, out)
		if c, ok := conflicts[l.Name]; ok {
			v.conflicted, v.conflictReason, v.conflictMsg = true, c[0], c[1]
		}
		lm := &gwListener{spec: l, kind: dcm.KindHTTP}
		switch l.Protocol {
		case gwv1.HTTPSProtocolType:
			lm.kind = dcm.KindEdge
			lm.tls = in.listenerCert(g, l)
		case gwv1.TLSProtocolType:
			lm.kind = dcm.KindPassthrough
		}
		for _, k := range v.kinds {
			lm.kinds = append(lm.kinds, string(k.Kind))
		}
		lm.attach = v.accepted && !v.conflicted && classOK && len(lm.kinds) > 0
		lm.serve = lm.attach && v.resolved && addr.addr != ""
		if addr.addr != "" {
			lm.bind = net.JoinHostPort(addr.addr, strconv.Itoa(int(l.Port)))
		}
		if v.accepted {
			valid++
		}
		bound := lm.serve && in.isBound(dcm.GatewayBind{Bind: lm.bind, HTTPS: lm.kind != dcm.KindHTTP})
		programmed := condition(string(gwv1.ListenerConditionProgrammed), bound, string(gwv1.ListenerReasonProgrammed), "served on "+lm.bind, gen)
		switch {
		case bound:
		case !v.accepted || v.conflicted || !v.resolved:
			programmed.Reason, programmed.Message = string(gwv1.ListenerReasonInvalid), "not served: see the other conditions"
		case addr.addr == "":
			programmed.Reason, programmed.Message = string(gwv1.ListenerReasonPending), "the Gateway has no address"
		default:
			programmed.Reason, programmed.Message = string(gwv1.ListenerReasonPending), in.unboundMessage(lm.bind, lm.kind != dcm.KindHTTP)
		}
		m.status.Listeners = append(m.status.Listeners, gwv1.ListenerStatus{
			Name: l.Name, SupportedKinds: v.kinds, Conditions: []metav1.Condition{
				condition(string(gwv1.ListenerConditionAccepted), v.accepted, v.acceptReason, v.acceptMsg, gen),
				programmed,
				condition(string(gwv1.ListenerConditionResolvedRefs), v.resolved, v.resolveReason, v.resolveMsg, gen),
				condition(string(gwv1.ListenerConditionConflicted), v.conflicted, v.conflictReason, v.conflictMsg, gen),
			}})
		m.listeners = append(m.listeners, lm)
	}
	for i := range m.listeners {
		m.listeners[i].status = &m.status.Listeners[i]
	}
	m.status.Conditions = gatewayConditions(g, addr, classOK, valid)
	in.addressPending(m.status.Conditions, addr.addr)
	if addr.addr != "" {
		m.status.Addresses = []gwv1.GatewayStatusAddress{{Type: ptrTo(gwv1.IPAddressType), Value: addr.addr}}
	}
	return m
}

// gatewayConditions are a Gateway's Accepted and Programmed.
func gatewayConditions(g *gwv1.Gateway, addr addrChoice, classOK bool, valid int) []metav1.Condition {
	gen := g.Generation
	accepted := condition(string(gwv1.GatewayConditionAccepted), true, string(gwv1.GatewayReasonAccepted), "dcm serves this Gateway", gen)
	switch {
	case !classOK:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(gwv1.GatewayReasonInvalidParameters), "its GatewayClass is not accepted"
	case g.Spec.Infrastructure != nil && g.Spec.Infrastructure.ParametersRef != nil:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(gwv1.GatewayReasonInvalidParameters), "dcm takes no parameters: spec.infrastructure.parametersRef must be empty"
	case g.Spec.TLS != nil:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(gwv1.ListenerReasonUnsupportedValue), "spec.tls (frontend client validation, backend client certificate) is not supported"
	case addr.unsupported:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, addr.reason, addr.message
	case valid == 0 && len(g.Spec.Listeners) > 0:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(gwv1.GatewayReasonListenersNotValid), "no listener is valid"
	case valid < len(g.Spec.Listeners):
		accepted.Reason, accepted.Message = string(gwv1.GatewayReasonListenersNotValid), "some listeners are not valid: see their conditions"
	}
	programmed := condition(string(gwv1.GatewayConditionProgrammed), true, string(gwv1.GatewayReasonProgrammed), "HAProxy listens on "+addr.addr, gen)
	switch {
	case accepted.Status != metav1.ConditionTrue:
		programmed.Status, programmed.Reason, programmed.Message = metav1.ConditionFalse, string(gwv1.GatewayReasonInvalid), "not accepted"
	case addr.addr == "":
		programmed.Status, programmed.Reason, programmed.Message = metav1.ConditionFalse, addr.reason, addr.message
	}
	return []metav1.Condition{accepted, programmed}
}

func ptrTo[T any](v T) *T { return &v }

// isKind matches a route kind of the Gateway API's group.
func isKind(kind string) func(gwv1.RouteGroupKind) bool {
	return func(k gwv1.RouteGroupKind) bool {
		return string(k.Kind) == kind && (k.Group == nil || *k.Group == gatewayGroup)
	}
}

// routeKindOf is the route kind a listener of a protocol takes first:
// TLSRoute on TLS listeners (passthrough), HTTPRoute on HTTP and HTTPS
// ones (and GRPCRoute on HTTP ones, grpcroute.go).
func routeKindOf(p gwv1.ProtocolType) string {
	if p == gwv1.TLSProtocolType {
		return KindTLSRoute
	}
	return KindHTTPRoute
}

// checkListener checks one listener: protocol, port, hostname, route
// kinds and, for HTTPS, its certificates.
func (in gwInput) checkListener(g *gwv1.Gateway, l gwv1.Listener, out *gwOutput) listenerVerdict {
	v := listenerVerdict{accepted: true, resolved: true, acceptReason: string(gwv1.ListenerReasonAccepted), acceptMsg: "accepted",
		resolveReason: string(gwv1.ListenerReasonResolvedRefs), resolveMsg: "every reference resolves",
		conflictReason: string(gwv1.ListenerReasonNoConflicts), conflictMsg: "no conflict"}
	refuse := func(reason, msg string) {
		if v.accepted {
			v.accepted, v.acceptReason, v.acceptMsg = false, reason, msg
		}
	}
	switch l.Protocol {
	case gwv1.HTTPProtocolType, gwv1.HTTPSProtocolType, gwv1.TLSProtocolType:
	default:
		refuse(string(gwv1.ListenerReasonUnsupportedProtocol), "protocol "+string(l.Protocol)+" is not supported: only HTTP, HTTPS and TLS")
		v.kinds = []gwv1.RouteGroupKind{}
		return v
	}
	if msg := in.portUnavailable(l); msg != "" {
		refuse(string(gwv1.ListenerReasonPortUnavailable), msg)
	}
	if err := dcm.ValidateDNSSubdomain("name", string(l.Name)); err != nil {
		refuse(string(gwv1.ListenerReasonUnsupportedValue), "listener name: "+err.Error())
	}
	if l.Hostname != nil {
		if err := dcm.ValidateGatewayHostname("hostname", strings.ToLower(string(*l.Hostname))); err != nil {
			refuse(string(gwv1.ListenerReasonUnsupportedValue), "hostname: "+err.Error())
		}
	}
	kind := routeKindOf(l.Protocol)
	v.kinds = []gwv1.RouteGroupKind{}
	if l.AllowedRoutes == nil || len(l.AllowedRoutes.Kinds) == 0 {
		v.kinds = append(v.kinds, gwv1.RouteGroupKind{Group: ptrTo(gwv1.Group(gatewayGroup)), Kind: gwv1.Kind(kind)})
		v.kinds = append(v.kinds, grpcDefaultKinds(l.Protocol)...)
	} else {
		for _, k := range l.AllowedRoutes.Kinds {
			if isKind(kind)(k) {
				v.kinds = append(v.kinds, gwv1.RouteGroupKind{Group: ptrTo(gwv1.Group(gatewayGroup)), Kind: gwv1.Kind(kind)})
				continue
			}
			if ok, why := grpcKindAllowed(k, l.Protocol); ok {
				v.kinds = append(v.kinds, gwv1.RouteGroupKind{Group: ptrTo(gwv1.Group(gatewayGroup)), Kind: KindGRPCRoute})
				continue
			} else if why != "" {
				v.resolved, v.resolveReason, v.resolveMsg = false, string(gwv1.ListenerReasonInvalidRouteKinds), why
				continue
			}
			v.resolved, v.resolveReason = false, string(gwv1.ListenerReasonInvalidRouteKinds)
			v.resolveMsg = "route kind " + string(k.Kind) + " is not supported: only HTTPRoute and GRPCRoute (HTTP listeners)"
			if l.Protocol == gwv1.TLSProtocolType {
				v.resolveMsg = "route kind " + string(k.Kind) + " is not supported on a TLS listener: only TLSRoute"
			}
		}
		v.kinds = slices.CompactFunc(v.kinds, func(a, b gwv1.RouteGroupKind) bool { return a.Kind == b.Kind })
	}
	switch {
	case l.Protocol == gwv1.HTTPSProtocolType:
		in.checkListenerTLS(g, l, &v, refuse, out)
	case l.Protocol == gwv1.TLSProtocolType:
		if !checkListenerPassthrough(l, refuse) {
			// Such a listener supports no route kind: the suite's
			// TLSRouteListenerTerminateNotSupported wants none listed.
			v.kinds = []gwv1.RouteGroupKind{}
		}
	case l.TLS != nil:
		refuse(string(gwv1.ListenerReasonUnsupportedValue), "tls is only for HTTPS and TLS listeners")
	}
	return v
}

// checkListenerPassthrough checks a TLS listener's tls: mode Passthrough,
// HAProxy hands the connection to the route's backend by its SNI. Mode
// Terminate (TLSRoutes to plain TCP backends) is not served: false.
func checkListenerPassthrough(l gwv1.Listener, refuse func(reason, msg string)) bool {
	switch {
	case l.TLS == nil:
		refuse(string(gwv1.ListenerReasonUnsupportedValue), "a TLS listener needs tls.mode Passthrough")
		return false
	case l.TLS.Mode == nil || *l.TLS.Mode != gwv1.TLSModePassthrough:
		refuse(string(gwv1.ListenerReasonUnsupportedValue), "tls mode Terminate is not supported for TLS listeners: only Passthrough")
		return false
	case len(l.TLS.Options) > 0:
		refuse(string(gwv1.ListenerReasonUnsupportedValue), "tls.options are not supported")
	case len(l.TLS.CertificateRefs) > 0:
		refuse(string(gwv1.ListenerReasonUnsupportedValue), "certificateRefs are not used with tls mode Passthrough")
	}
	return true
}

// checkListenerTLS checks an HTTPS listener's TLS: terminated in HAProxy,
// with certificateRefs to valid kubernetes.io/tls Secrets that the
// Gateway may read (its namespace, or a ReferenceGrant).
func (in gwInput) checkListenerTLS(g *gwv1.Gateway, l gwv1.Listener, v *listenerVerdict, refuse func(reason, msg string), out *gwOutput) {
	if l.TLS == nil {
		refuse(string(gwv1.ListenerReasonUnsupportedValue), "an HTTPS listener needs tls")
		return
	}
	if l.TLS.Mode != nil && *l.TLS.Mode != gwv1.TLSModeTerminate {
		refuse(string(gwv1.ListenerReasonUnsupportedValue), "tls mode "+string(*l.TLS.Mode)+" is not supported for HTTPS: only Terminate")
	}
	if len(l.TLS.Options) > 0 {
		refuse(string(gwv1.ListenerReasonUnsupportedValue), "tls.options are not supported")
	}
	if len(l.TLS.CertificateRefs) == 0 {
		v.resolved, v.resolveReason, v.resolveMsg = false, string(gwv1.ListenerReasonInvalidCertificateRef), "no certificateRefs"
		return
	}
	for _, ref := range l.TLS.CertificateRefs {
		reason, msg := in.certRef(g, ref, out)
		if reason != "" && v.resolved {
			v.resolved, v.resolveReason, v.resolveMsg = false, reason, msg
		}
	}
}

// certRef checks one certificateRef: "" when it resolves, else the
// listener's ResolvedRefs reason and message.
func (in gwInput) certRef(g *gwv1.Gateway, ref gwv1.SecretObjectReference, out *gwOutput) (reason, msg string) {
	ns, name := secretRefTarget(g, ref)
	if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != KindSecret) {
		return string(gwv1.ListenerReasonInvalidCertificateRef), "certificateRef " + name + ": only core Secrets are supported"
	}
	out.secrets[ns+"/"+name] = true
	if !in.grants.allow(grantRef{group: gatewayGroup, kind: KindGateway, namespace: g.Namespace},
		grantRef{group: "", kind: KindSecret, namespace: ns, name: name}) {
		return string(gwv1.ListenerReasonRefNotPermitted), "Secret " + ns + "/" + name + " is in another namespace and no ReferenceGrant allows it"
	}
	if err := in.cert(ns, name); err != nil {
		return string(gwv1.ListenerReasonInvalidCertificateRef), "Secret " + ns + "/" + name + ": " + err.Error()
	}
	return "", ""
}

func secretRefTarget(g *gwv1.Gateway, ref gwv1.SecretObjectReference) (ns, name string) {
	ns = g.Namespace
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	return ns, string(ref.Name)
}

// listenerCert is the certificate HAProxy serves on an HTTPS listener: its
// first certificateRef (dcm serves one certificate per listener).
func (in gwInput) listenerCert(g *gwv1.Gateway, l gwv1.Listener) *dcm.TLSRef {
	if l.TLS == nil || len(l.TLS.CertificateRefs) == 0 {
		return nil
	}
	ns, name := secretRefTarget(g, l.TLS.CertificateRefs[0])
	return &dcm.TLSRef{Secret: ns + "/" + name}
}

// listenerConflicts finds listeners that share a port with another of a
// different protocol, or the same protocol and hostname: HAProxy could
// not tell their requests apart. The value is the reason and message.
func listenerConflicts(ls []gwv1.Listener) map[gwv1.SectionName][2]string {
	out := map[gwv1.SectionName][2]string{}
	for i, a := range ls {
		for j, b := range ls {
			if i == j || a.Port != b.Port {
				continue
			}
			switch {
			case a.Protocol != b.Protocol:
				out[a.Name] = [2]string{string(gwv1.ListenerReasonProtocolConflict), "listener " + string(b.Name) + " uses port " + strconv.Itoa(int(a.Port)) + " with protocol " + string(b.Protocol)}
			case strings.EqualFold(hostnameOf(a.Hostname), hostnameOf(b.Hostname)):
				out[a.Name] = [2]string{string(gwv1.ListenerReasonHostnameConflict), "listener " + string(b.Name) + " has the same port and hostname"}
			}
		}
	}
	return out
}

func hostnameOf(h *gwv1.Hostname) string {
	if h == nil {
		return ""
	}
	return string(*h)
}
