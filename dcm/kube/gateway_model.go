package kube

import (
	"cmp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dcm-router/dcm/dcm"
)

// Kinds of the Gateway API objects dcm reports on (rejections, Events).
const (
	KindGateway      = "Gateway"
	KindGatewayClass = "GatewayClass"
	KindHTTPRoute    = "HTTPRoute"
)

// gatewayGroup is the Gateway API's group, as parentRefs and
// ReferenceGrants name it.
const gatewayGroup = gwv1.GroupName

// gwInput is what one Gateway API sync reads: the objects from the
// caches and lookups of what they refer to.
type gwInput struct {
	controller string
	binds      dcm.GatewayBinds
	// reserved are the binds of dcm's other frontends
	// (Options.GatewayReserved), bound the binds HAProxy has beyond
	// binds (dcm.State.GatewayBinds).
	reserved   []string
	bound      []dcm.GatewayBind
	classes    []*gwv1.GatewayClass
	gateways   []*gwv1.Gateway
	routes     []*gwv1.HTTPRoute
	tlsRoutes  []*gwv1.TLSRoute
	grpcRoutes []*gwv1.GRPCRoute
	grants     referenceGrants
	// prevAddr are the addresses given in earlier syncs, by Gateway UID:
	// they count as the Gateway's own until its status says so.
	prevAddr map[types.UID]string
	// namespace is a namespace's labels (false: no such namespace).
	namespace func(ns string) (labels.Set, bool)
	// service reports whether a Service exists.
	service func(ns, name string) bool
	// cert says what is wrong with a Secret as a listener's certificate
	// (nil: a valid kubernetes.io/tls Secret).
	cert func(ns, name string) error
}

// gwOutput is what it makes of them: routes to serve, status to write
// and the objects to report as rejected.
type gwOutput struct {
	classes  map[string]*gwv1.GatewayClassStatus
	gateways map[types.NamespacedName]*gwv1.GatewayStatus
	routes   map[types.NamespacedName][]gwv1.RouteParentStatus
	// grpcRoutes is routes for GRPCRoutes.
	grpcRoutes map[types.NamespacedName][]gwv1.RouteParentStatus
	// tlsRoutes are the TLSRoutes' status.parents (tlsroute.go).
	tlsRoutes map[types.NamespacedName][]gwv1.RouteParentStatus
	served    []dcm.Route
	rejected  []dcm.Rejection
	addrs     map[types.UID]string
	// services and secrets are the ns/name of every Service and Secret
	// referred to: their coming and going changes the result.
	services, secrets map[string]bool
	uids              map[dcm.ObjectRef]types.UID
	// view is the portal's picture of it all (gateway_view.go).
	view *dcm.GatewayAPI
}

// gwGateway is a Gateway of dcm's class while its routes are attached.
type gwGateway struct {
	gw        *gwv1.Gateway
	status    *gwv1.GatewayStatus
	addr      string
	listeners []*gwListener
}

// gwListener is one listener of such a Gateway.
type gwListener struct {
	spec   gwv1.Listener
	status *gwv1.ListenerStatus
	// attach: routes of kinds may attach (accepted, a kind allowed, no
	// conflict); serve: they are served (programmed as well).
	attach, serve bool
	kinds         []string
	bind          string
	kind          dcm.RouteKind
	tls           *dcm.TLSRef
}

// translateGateways turns the Gateway API objects into routes and status.
// It is a function of its input alone: the same objects give the same
// routes, addresses and conditions whatever the order of events.
func translateGateways(in gwInput) *gwOutput {
	out := &gwOutput{classes: map[string]*gwv1.GatewayClassStatus{}, gateways: map[types.NamespacedName]*gwv1.GatewayStatus{},
		routes: map[types.NamespacedName][]gwv1.RouteParentStatus{}, grpcRoutes: map[types.NamespacedName][]gwv1.RouteParentStatus{},
		tlsRoutes: map[types.NamespacedName][]gwv1.RouteParentStatus{}, addrs: map[types.UID]string{},
		services: map[string]bool{}, secrets: map[string]bool{}, uids: map[dcm.ObjectRef]types.UID{}}
	accepted := map[string]bool{}
	for _, c := range in.classes {
		if string(c.Spec.ControllerName) != in.controller {
			continue
		}
		st, ok := classStatus(c)
		out.classes[c.Name] = st
		accepted[c.Name] = ok
	}
	gws := slices.Clone(in.gateways)
	slices.SortFunc(gws, func(a, b *gwv1.Gateway) int { return olderFirst(&a.ObjectMeta, &b.ObjectMeta) })
	var ours []*gwv1.Gateway
	for _, g := range gws {
		if _, mine := out.classes[string(g.Spec.GatewayClassName)]; mine {
			ours = append(ours, g)
		}
	}
	addrs := assignAddresses(in, ours)
	models := map[types.NamespacedName]*gwGateway{}
	for _, g := range ours {
		nn := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
		m := in.gatewayModel(g, addrs[g.UID], accepted[string(g.Spec.GatewayClassName)], out)
		models[nn] = m
		out.gateways[nn] = m.status
		if addrs[g.UID].addr != "" {
			out.addrs[g.UID] = addrs[g.UID].addr
		}
		out.uids[dcm.ObjectRef{Kind: KindGateway, Namespace: g.Namespace, Name: g.Name}] = g.UID
	}
	routes := slices.Clone(in.routes)
	slices.SortFunc(routes, func(a, b *gwv1.HTTPRoute) int { return olderFirst(&a.ObjectMeta, &b.ObjectMeta) })
	for _, r := range routes {
		in.translateRoute(r, models, out)
	}
	in.translateGRPCRoutes(models, out)
	in.translateTLSRoutes(models, out)
	for _, m := range models {
		if rej := gatewayRejection(m); rej != nil {
			out.rejected = append(out.rejected, *rej)
		}
	}
	slices.SortFunc(out.served, func(a, b dcm.Route) int { return strings.Compare(a.BackendName(), b.BackendName()) })
	out.view = gatewayView(models, routes, &in, out)
	return out
}

// olderFirst orders objects by creation, then namespace/name: the Gateway
// API's tie-break.
func olderFirst(a, b *metav1.ObjectMeta) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// condition builds a condition of generation gen; LastTransitionTime is
// set by the status writer.
func condition(typ string, ok bool, reason, message string, gen int64) metav1.Condition {
	st := metav1.ConditionFalse
	if ok {
		st = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: message, ObservedGeneration: gen}
}

// supportedFeatures are what dcm's GatewayClasses say they support, sorted:
// the core of the GATEWAY-HTTP profile and the extended features whose
// conformance tests dcm passes — the list e2e/gwconformance/features.go
// claims (make conformance), kept the same by hand.
var supportedFeatures = []gwv1.FeatureName{
	"GRPCRoute", "GRPCRouteNamedRouteRule",
	"Gateway", "GatewayAddressEmpty", "GatewayHTTPListenerIsolation", "GatewayPort8080", "GatewayStaticAddresses",
	"HTTPRoute", "HTTPRoute303RedirectStatusCode", "HTTPRoute307RedirectStatusCode", "HTTPRoute308RedirectStatusCode",
	"HTTPRouteBackendProtocolH2C", "HTTPRouteBackendProtocolWebSocket", "HTTPRouteDestinationPortMatching", "HTTPRouteHostRewrite",
	"HTTPRouteMethodMatching", "HTTPRouteNamedRouteRule", "HTTPRouteParentRefPort",
	"HTTPRoutePathRedirect", "HTTPRoutePathRewrite", "HTTPRoutePortRedirect", "HTTPRouteQueryParamMatching",
	"HTTPRouteResponseHeaderModification", "HTTPRouteSchemeRedirect",
	"ReferenceGrant", "TLSRoute",
}

// classStatus accepts a GatewayClass of dcm's controller unless it names
// parameters, which dcm has none of.
func classStatus(c *gwv1.GatewayClass) (*gwv1.GatewayClassStatus, bool) {
	st := &gwv1.GatewayClassStatus{}
	for _, f := range supportedFeatures {
		st.SupportedFeatures = append(st.SupportedFeatures, gwv1.SupportedFeature{Name: f})
	}
	ok := c.Spec.ParametersRef == nil
	if ok {
		st.Conditions = []metav1.Condition{condition(string(gwv1.GatewayClassConditionStatusAccepted), true,
			string(gwv1.GatewayClassReasonAccepted), "dcm serves this class", c.Generation)}
	} else {
		st.Conditions = []metav1.Condition{condition(string(gwv1.GatewayClassConditionStatusAccepted), false,
			string(gwv1.GatewayClassReasonInvalidParameters), "dcm takes no parameters: spec.parametersRef must be empty", c.Generation)}
	}
	return st, ok
}

// gatewayRejection reports a Gateway that is not accepted or not
// programmed, or one of whose listeners is not, with the first reason.
func gatewayRejection(m *gwGateway) *dcm.Rejection {
	ref := dcm.ObjectRef{Kind: KindGateway, Namespace: m.gw.Namespace, Name: m.gw.Name}
	for _, c := range m.status.Conditions {
		if c.Status != metav1.ConditionTrue {
			return &dcm.Rejection{Object: ref, Reason: c.Reason, Message: c.Type + ": " + c.Message}
		}
	}
	for _, l := range m.status.Listeners {
		for _, c := range l.Conditions {
			bad := c.Status != metav1.ConditionTrue
			if c.Type == string(gwv1.ListenerConditionConflicted) {
				bad = c.Status == metav1.ConditionTrue
			}
			if bad {
				return &dcm.Rejection{Object: ref, Reason: c.Reason, Message: "listener " + string(l.Name) + ": " + c.Type + ": " + c.Message}
			}
		}
	}
	return nil
}
