package kube

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

// gatewayView is the portal's picture of a sync: every Gateway of dcm's
// classes and every HTTPRoute, GRPCRoute and TLSRoute naming one, with
// the conditions this sync computed (the ones the status writer writes).
func gatewayView(models map[types.NamespacedName]*gwGateway, routes []*gwv1.HTTPRoute, in *gwInput, out *gwOutput) *dcm.GatewayAPI {
	v := &dcm.GatewayAPI{Gateways: []dcm.GatewayView{}, HTTPRoutes: []dcm.HTTPRouteView{}}
	for _, m := range models {
		g := dcm.GatewayView{Namespace: m.gw.Namespace, Name: m.gw.Name, Class: string(m.gw.Spec.GatewayClassName),
			Address: m.addr, Listeners: []dcm.ListenerView{}, Conditions: viewConditions(m.status.Conditions)}
		for i, l := range m.listeners {
			lv := dcm.ListenerView{Name: string(l.spec.Name), Protocol: string(l.spec.Protocol), Port: int(l.spec.Port), Conditions: []dcm.Condition{}}
			if l.spec.Hostname != nil {
				lv.Hostname = string(*l.spec.Hostname)
			}
			if i < len(m.status.Listeners) {
				lv.AttachedRoutes = int(m.status.Listeners[i].AttachedRoutes)
				lv.Conditions = viewConditions(m.status.Listeners[i].Conditions)
			}
			g.Listeners = append(g.Listeners, lv)
		}
		v.Gateways = append(v.Gateways, g)
	}
	slices.SortFunc(v.Gateways, func(a, b dcm.GatewayView) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, r := range routes {
		if rv, ok := routeView("", &r.ObjectMeta, r.Spec.Hostnames, out.routes); ok {
			v.HTTPRoutes = append(v.HTTPRoutes, rv)
		}
	}
	for _, r := range in.grpcRoutes {
		if rv, ok := routeView(KindGRPCRoute, &r.ObjectMeta, r.Spec.Hostnames, out.grpcRoutes); ok {
			v.HTTPRoutes = append(v.HTTPRoutes, rv)
		}
	}
	for _, r := range in.tlsRoutes {
		if rv, ok := routeView(KindTLSRoute, &r.ObjectMeta, r.Spec.Hostnames, out.tlsRoutes); ok {
			v.HTTPRoutes = append(v.HTTPRoutes, rv)
		}
	}
	slices.SortFunc(v.HTTPRoutes, func(a, b dcm.HTTPRouteView) int {
		return strings.Compare(a.Namespace+"/"+a.Name+"/"+a.Kind, b.Namespace+"/"+b.Name+"/"+b.Kind)
	})
	return v
}

// routeView is one route of kind ("" an HTTPRoute) with its status from
// statuses; false when it names no Gateway of dcm's.
func routeView(kind string, m *metav1.ObjectMeta, hostnames []gwv1.Hostname, statuses map[types.NamespacedName][]gwv1.RouteParentStatus) (dcm.HTTPRouteView, bool) {
	parents, ok := statuses[types.NamespacedName{Namespace: m.Namespace, Name: m.Name}]
	if !ok || len(parents) == 0 {
		return dcm.HTTPRouteView{}, false
	}
	rv := dcm.HTTPRouteView{Kind: kind, Namespace: m.Namespace, Name: m.Name, Parents: []dcm.RouteParentView{}}
	for _, h := range hostnames {
		rv.Hostnames = append(rv.Hostnames, string(h))
	}
	for _, p := range parents {
		ns := m.Namespace
		if p.ParentRef.Namespace != nil {
			ns = string(*p.ParentRef.Namespace)
		}
		pv := dcm.RouteParentView{Gateway: ns + "/" + string(p.ParentRef.Name), Conditions: viewConditions(p.Conditions)}
		if p.ParentRef.SectionName != nil {
			pv.Listener = string(*p.ParentRef.SectionName)
		}
		rv.Parents = append(rv.Parents, pv)
	}
	return rv, true
}

func viewConditions(cs []metav1.Condition) []dcm.Condition {
	out := make([]dcm.Condition, 0, len(cs))
	for _, c := range cs {
		out = append(out, dcm.Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}
