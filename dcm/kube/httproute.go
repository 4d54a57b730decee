package kube

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

// attachment is one listener an HTTPRoute attaches to, through one of its
// parentRefs, and the hostnames it answers there.
type attachment struct {
	gw    *gwGateway
	l     *gwListener
	hosts []string
}

// parentVerdict is what one parentRef of an HTTPRoute comes to.
type parentVerdict struct {
	ref      gwv1.ParentReference
	attached []attachment
	reason   string // Accepted's when attached is empty
	message  string
}

// translateRoute attaches an HTTPRoute to the listeners of dcm's Gateways
// it names, makes its rules into routes on each listener that serves,
// counts it in the listeners' attachedRoutes and writes its status.
func (in gwInput) translateRoute(r *gwv1.HTTPRoute, gws map[types.NamespacedName]*gwGateway, out *gwOutput) {
	in.translateRouteOf(KindHTTPRoute, r, nil, gws, out)
}

// translateRouteOf is translateRoute for a route of kind (KindHTTPRoute,
// or KindGRPCRoute given as the HTTPRoute it means, grpcroute.go); convErr
// is what its conversion refused (the route is then not accepted).
func (in gwInput) translateRouteOf(kind string, r *gwv1.HTTPRoute, convErr error, gws map[types.NamespacedName]*gwGateway, out *gwOutput) {
	nn := types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
	ref := dcm.ObjectRef{Kind: kind, Namespace: r.Namespace, Name: r.Name}
	rules, ruleErr := []gwRule(nil), convErr
	if convErr == nil {
		rules, ruleErr = in.routeRules(kind, r, out)
	}
	resolved := condition(string(gwv1.RouteConditionResolvedRefs), true, string(gwv1.RouteReasonResolvedRefs), "every backendRef resolves", r.Generation)
	for _, rl := range rules {
		if rl.refReason != "" {
			resolved.Status, resolved.Reason, resolved.Message = metav1.ConditionFalse, rl.refReason, rl.refMsg
			break
		}
	}
	var parents []gwv1.RouteParentStatus
	var rejection *dcm.Rejection
	for _, p := range r.Spec.ParentRefs {
		pv, ours := in.parent(kind, r, p, gws)
		if !ours {
			continue
		}
		accepted := condition(string(gwv1.RouteConditionAccepted), true, string(gwv1.RouteReasonAccepted), "attached", r.Generation)
		switch {
		case len(pv.attached) == 0:
			accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, pv.reason, pv.message
		case ruleErr != nil:
			accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(gwv1.RouteReasonUnsupportedValue), ruleErr.Error()
		}
		if accepted.Status == metav1.ConditionTrue {
			in.attach(kind, r, pv, rules, out)
		} else if rejection == nil {
			rejection = &dcm.Rejection{Object: ref, Reason: accepted.Reason, Message: accepted.Message}
		}
		parents = append(parents, gwv1.RouteParentStatus{ParentRef: p, ControllerName: gwv1.GatewayController(in.controller),
			Conditions: []metav1.Condition{accepted, resolved}})
	}
	if parents == nil {
		return
	}
	out.routeStatus(kind)[nn] = parents
	out.uids[ref] = r.UID
	if rejection == nil && resolved.Status != metav1.ConditionTrue {
		rejection = &dcm.Rejection{Object: ref, Reason: resolved.Reason, Message: resolved.Message}
	}
	if rejection != nil {
		out.rejected = append(out.rejected, *rejection)
	}
}

// attach counts an accepted parent's listeners and makes the routes of
// those that serve.
func (in gwInput) attach(kind string, r *gwv1.HTTPRoute, pv parentVerdict, rules []gwRule, out *gwOutput) {
	for _, a := range pv.attached {
		a.l.status.AttachedRoutes++
		if !a.l.serve {
			continue
		}
		for i, rl := range rules {
			out.served = append(out.served, gatewayRoute(kind, r, i, rl, a))
		}
	}
}

// gatewayRoute is rule i of an HTTPRoute (or GRPCRoute) on one listener.
func gatewayRoute(kind string, r *gwv1.HTTPRoute, i int, rl gwRule, a attachment) dcm.Route {
	gw := a.gw.gw.Namespace + "/" + a.gw.gw.Name
	source, rule := dcm.SourceHTTPRoute, strconv.Itoa(i)
	if kind == KindGRPCRoute {
		source, rule = dcm.SourceGRPCRoute, grpcRulePrefix+rule
	}
	route := dcm.Route{Namespace: r.Namespace, Name: gatewayRouteNameOf(r.Name, rule, gw, string(a.l.spec.Name)),
		Source: source, Object: r.Name, Kind: a.l.kind, Services: rl.services, Balance: dcm.BalanceRoundRobin,
		Gateway: &dcm.GatewayRoute{Gateway: gw, Listener: string(a.l.spec.Name), Bind: a.l.bind, Hostnames: a.hosts,
			ListenerHostname: lower(hostnameOf(a.l.spec.Hostname)),
			Matches:          rl.matches, Filters: rl.filters, Rank: gatewayRank(&r.ObjectMeta, i), Unresolved: rl.unresolved}}
	if a.l.tls != nil {
		tls := *a.l.tls
		route.TLS = &tls
	}
	return route
}

// gatewayRouteName names rule i of an HTTPRoute on one listener:
// gw_<route>.<rule>.<hash of gateway and listener>, deterministic and
// unique in the route's namespace; a route name too long for that is
// hashed as well.
func gatewayRouteName(route string, rule int, gateway, listener string) string {
	return gatewayRouteNameOf(route, strconv.Itoa(rule), gateway, listener)
}

// gatewayRouteNameOf is gatewayRouteName with the rule as its name says
// it: a GRPCRoute's rules are g<n> (grpcRulePrefix), so an HTTPRoute and
// a GRPCRoute of one name never share a route name.
func gatewayRouteNameOf(route, rule, gateway, listener string) string {
	h := fnv.New64a()
	h.Write([]byte(gateway + "\x00" + listener))
	suffix := fmt.Sprintf(".%s.%016x", rule, h.Sum64())
	if len(route)+len(suffix) > 253 {
		h := fnv.New64a()
		h.Write([]byte(route))
		route = fmt.Sprintf("h%016x", h.Sum64())
	}
	return dcm.GatewayRouteNamePrefix + route + suffix
}

// gatewayRank orders rule i of an HTTPRoute among the rules the spec's
// match precedence leaves tied: the oldest route first, then by
// namespace/name, then by rule. '!' sorts before every character of a
// name, so "ns/a" ranks before "ns/a-b" as the spec's alphabetical order
// wants.
func gatewayRank(m *metav1.ObjectMeta, rule int) string {
	return fmt.Sprintf("%012d!%s/%s!%04d", max(m.CreationTimestamp.Unix(), 0), m.Namespace, m.Name, rule)
}

// parent finds the listeners one parentRef attaches an HTTPRoute to. ours
// is false when the parentRef names no Gateway of dcm's: its status entry
// is another controller's business.
func (in gwInput) parent(kind string, r *gwv1.HTTPRoute, p gwv1.ParentReference, gws map[types.NamespacedName]*gwGateway) (parentVerdict, bool) {
	pv := parentVerdict{ref: p}
	if (p.Group != nil && *p.Group != gatewayGroup) || (p.Kind != nil && *p.Kind != KindGateway) {
		return pv, false
	}
	ns := r.Namespace
	if p.Namespace != nil && *p.Namespace != "" {
		ns = string(*p.Namespace)
	}
	gw := gws[types.NamespacedName{Namespace: ns, Name: string(p.Name)}]
	if gw == nil {
		return pv, false
	}
	var matched, allowed int
	for _, l := range gw.listeners {
		if (p.SectionName != nil && *p.SectionName != l.spec.Name) || (p.Port != nil && *p.Port != l.spec.Port) {
			continue
		}
		matched++
		if !l.attach || !slices.Contains(l.kinds, kind) || !in.namespaceAllowed(r.Namespace, gw.gw.Namespace, l.spec.AllowedRoutes) {
			continue
		}
		allowed++
		hosts, any := intersectHostnames(r.Spec.Hostnames, l.spec.Hostname)
		if len(hosts) == 0 && !any {
			continue
		}
		pv.attached = append(pv.attached, attachment{gw: gw, l: l, hosts: hosts})
	}
	switch {
	case matched == 0:
		pv.reason, pv.message = string(gwv1.RouteReasonNoMatchingParent), "no listener of Gateway "+ns+"/"+string(p.Name)+" matches sectionName and port"
	case allowed == 0:
		pv.reason, pv.message = string(gwv1.RouteReasonNotAllowedByListeners), "no listener of Gateway "+ns+"/"+string(p.Name)+" allows this route (namespace, kind, or the listener is not valid)"
	case len(pv.attached) == 0:
		pv.reason, pv.message = string(gwv1.RouteReasonNoMatchingListenerHostname), "no listener hostname matches the route's hostnames"
	}
	return pv, true
}

// namespaceAllowed applies a listener's allowedRoutes.namespaces to a
// route's namespace (default: the Gateway's own).
func (in gwInput) namespaceAllowed(routeNS, gwNS string, ar *gwv1.AllowedRoutes) bool {
	from := gwv1.NamespacesFromSame
	if ar != nil && ar.Namespaces != nil && ar.Namespaces.From != nil {
		from = *ar.Namespaces.From
	}
	switch from {
	case gwv1.NamespacesFromAll:
		return true
	case gwv1.NamespacesFromSame:
		return routeNS == gwNS
	case gwv1.NamespacesFromSelector:
		if ar.Namespaces.Selector == nil {
			return false
		}
		sel, err := metav1.LabelSelectorAsSelector(ar.Namespaces.Selector)
		if err != nil {
			return false
		}
		set, ok := in.namespace(routeNS)
		return ok && sel.Matches(labels.Set(set))
	}
	return false
}

// weightOf is a backendRef's weight (default 1).
func weightOf(w *int32) int {
	if w == nil {
		return 1
	}
	return int(*w)
}

// portText is a backendRef's port as a ServiceRef names it.
func portText(p *gwv1.PortNumber) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(int(*p))
}

func lower(s string) string { return strings.ToLower(s) }
