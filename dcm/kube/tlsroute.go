package kube

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

// KindTLSRoute is the Gateway API's TLSRoute (gateway.networking.k8s.io/v1,
// the standard channel of v1.6): a TLS connection sent by its SNI,
// untouched, to Services — served on TLS listeners of mode Passthrough.
const KindTLSRoute = "TLSRoute"

// tlsRule is what a TLSRoute's one rule comes to.
type tlsRule struct {
	services          []dcm.ServiceRef
	refReason, refMsg string
	unresolved        bool
	spec              error // the route is refused (Accepted=False UnsupportedValue)
}

// translateTLSRoutes attaches the TLSRoutes, oldest first, to the TLS
// listeners of dcm's Gateways they name, as translateRoute does for
// HTTPRoutes: one passthrough route per attached listener that serves,
// status.parents, attachedRoutes, rejections.
func (in gwInput) translateTLSRoutes(gws map[types.NamespacedName]*gwGateway, out *gwOutput) {
	routes := slices.Clone(in.tlsRoutes)
	slices.SortFunc(routes, func(a, b *gwv1.TLSRoute) int { return olderFirst(&a.ObjectMeta, &b.ObjectMeta) })
	for _, r := range routes {
		in.translateTLSRoute(r, gws, out)
	}
}

func (in gwInput) translateTLSRoute(r *gwv1.TLSRoute, gws map[types.NamespacedName]*gwGateway, out *gwOutput) {
	nn := types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
	ref := dcm.ObjectRef{Kind: KindTLSRoute, Namespace: r.Namespace, Name: r.Name}
	rl := in.tlsRouteRule(r, out)
	resolved := condition(string(gwv1.RouteConditionResolvedRefs), true, string(gwv1.RouteReasonResolvedRefs), "every backendRef resolves", r.Generation)
	if rl.refReason != "" {
		resolved.Status, resolved.Reason, resolved.Message = metav1.ConditionFalse, rl.refReason, rl.refMsg
	}
	// parent reads a route's namespace and hostnames from an HTTPRoute.
	asParentOf := &gwv1.HTTPRoute{ObjectMeta: r.ObjectMeta}
	asParentOf.Spec.Hostnames = r.Spec.Hostnames
	var parents []gwv1.RouteParentStatus
	var rejection *dcm.Rejection
	for _, p := range r.Spec.ParentRefs {
		pv, ours := in.parent(KindTLSRoute, asParentOf, p, gws)
		if !ours {
			continue
		}
		accepted := condition(string(gwv1.RouteConditionAccepted), true, string(gwv1.RouteReasonAccepted), "attached", r.Generation)
		switch {
		case len(pv.attached) == 0:
			accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, pv.reason, pv.message
		case rl.spec != nil:
			accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(gwv1.RouteReasonUnsupportedValue), rl.spec.Error()
		}
		if accepted.Status == metav1.ConditionTrue {
			for _, a := range pv.attached {
				a.l.status.AttachedRoutes++
				if a.l.serve {
					out.served = append(out.served, tlsGatewayRoute(r, rl, a))
				}
			}
		} else if rejection == nil {
			rejection = &dcm.Rejection{Object: ref, Reason: accepted.Reason, Message: accepted.Message}
		}
		parents = append(parents, gwv1.RouteParentStatus{ParentRef: p, ControllerName: gwv1.GatewayController(in.controller),
			Conditions: []metav1.Condition{accepted, resolved}})
	}
	if parents == nil {
		return
	}
	out.tlsRoutes[nn] = parents
	out.uids[ref] = r.UID
	if rejection == nil && resolved.Status != metav1.ConditionTrue {
		rejection = &dcm.Rejection{Object: ref, Reason: resolved.Reason, Message: resolved.Message}
	}
	if rejection != nil {
		out.rejected = append(out.rejected, *rejection)
	}
}

// tlsRouteRule checks a TLSRoute's hostnames and its one rule and
// resolves its backendRefs.
func (in gwInput) tlsRouteRule(r *gwv1.TLSRoute, out *gwOutput) tlsRule {
	var rl tlsRule
	hosts := make([]string, len(r.Spec.Hostnames))
	for i, h := range r.Spec.Hostnames {
		hosts[i] = lower(string(h))
	}
	switch {
	case len(hosts) > maxGatewayHostnames:
		rl.spec = fmt.Errorf("spec.hostnames: more than %d", maxGatewayHostnames)
	case len(r.Spec.Rules) != 1:
		rl.spec = fmt.Errorf("spec.rules: want exactly one rule, got %d", len(r.Spec.Rules))
	default:
		for _, h := range hosts {
			// The Gateway API's wildcards: "*.com" is one (TLSRoute
			// conformance uses it), unlike an Ingress's.
			if err := dcm.ValidateGatewayHostname("spec.hostnames", h); err != nil {
				rl.spec = err
				break
			}
		}
	}
	if rl.spec != nil {
		return rl
	}
	in.tlsBackends(r, &rl, out)
	return rl
}

// tlsBackends resolves the rule's backendRefs into Services, with the
// reasons of the spec (InvalidKind, RefNotPermitted, BackendNotFound) for
// those that do not; a rule none of whose refs resolves is unresolved:
// HAProxy refuses its connections.
func (in gwInput) tlsBackends(r *gwv1.TLSRoute, rl *tlsRule, out *gwOutput) {
	fail := func(reason, msg string) {
		if rl.refReason == "" {
			rl.refReason, rl.refMsg = reason, msg
		}
	}
	for j, b := range r.Spec.Rules[0].BackendRefs {
		f := fmt.Sprintf("spec.rules[0].backendRefs[%d]", j)
		if (b.Group != nil && *b.Group != "") || (b.Kind != nil && *b.Kind != KindService) {
			fail(string(gwv1.RouteReasonInvalidKind), f+": only core Services are supported")
			continue
		}
		ns := r.Namespace
		if b.Namespace != nil && *b.Namespace != "" {
			ns = string(*b.Namespace)
		}
		name := string(b.Name)
		if b.Port == nil {
			rl.spec = fmt.Errorf("%s.port: a Service backendRef needs a port", f)
			return
		}
		if err := dcm.ValidateDNSLabel(f+".name", name); err != nil {
			rl.spec = err
			return
		}
		if !in.grants.allow(grantRef{group: gatewayGroup, kind: KindTLSRoute, namespace: r.Namespace},
			grantRef{group: "", kind: KindService, namespace: ns, name: name}) {
			fail(string(gwv1.RouteReasonRefNotPermitted), f+": Service "+ns+"/"+name+" is in another namespace and no ReferenceGrant allows it")
			continue
		}
		out.services[ns+"/"+name] = true
		if !in.service(ns, name) {
			fail(string(gwv1.RouteReasonBackendNotFound), f+": Service "+ns+"/"+name+" not found")
			continue
		}
		ref := dcm.ServiceRef{Name: name, Port: portText(b.Port), Weight: weightOf(b.Weight)}
		if ns != r.Namespace {
			ref.Namespace = ns
		}
		g := gwRule{services: rl.services}
		if err := addService(&g, ref, f); err != nil {
			rl.spec = err
			return
		}
		rl.services = g.services
	}
	if len(rl.services) > dcm.MaxServices {
		rl.spec = fmt.Errorf("spec.rules[0].backendRefs: more than %d Services", dcm.MaxServices)
		return
	}
	scaleWeights(rl.services)
	rl.unresolved = len(rl.services) == 0
}

// tlsGatewayRoute is a TLSRoute on one TLS listener: a passthrough route
// found by the SNI among its hostnames on the listener's bind.
func tlsGatewayRoute(r *gwv1.TLSRoute, rl tlsRule, a attachment) dcm.Route {
	gw := a.gw.gw.Namespace + "/" + a.gw.gw.Name
	return dcm.Route{Namespace: r.Namespace, Name: gatewayRouteName(r.Name, 0, gw, string(a.l.spec.Name)),
		Source: dcm.SourceTLSRoute, Object: r.Name, Kind: dcm.KindPassthrough, Services: rl.services,
		Balance: dcm.DefaultBalance(dcm.KindPassthrough),
		Gateway: &dcm.GatewayRoute{Gateway: gw, Listener: string(a.l.spec.Name), Bind: a.l.bind, Hostnames: a.hosts,
			ListenerHostname: lower(hostnameOf(a.l.spec.Hostname)), Rank: gatewayRank(&r.ObjectMeta, 0), Unresolved: rl.unresolved}}
}
