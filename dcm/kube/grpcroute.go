package kube

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwinformersv1 "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions/apis/v1"
)

// KindGRPCRoute is the Gateway API's GRPCRoute (v1, standard channel).
const KindGRPCRoute = "GRPCRoute"

// grpcRulePrefix marks a GRPCRoute's rules in its routes' names
// (gw_<route>.g<rule>.<hash>), apart from an HTTPRoute's of the same name.
const grpcRulePrefix = "g"

// translateGRPCRoutes serves the GRPCRoutes, oldest first, on the same
// Gateway routing as HTTPRoutes: a gRPC call is an HTTP/2 POST to
// /<service>/<method>, so a GRPCRoute is the HTTPRoute that matches those
// paths (grpcAsHTTPRoute) and its pods are spoken to in h2c
// (withProtos). The GRPCRoute keeps its own kind in status, Events,
// ReferenceGrants and route names.
func (in gwInput) translateGRPCRoutes(gws map[types.NamespacedName]*gwGateway, out *gwOutput) {
	routes := slices.Clone(in.grpcRoutes)
	slices.SortFunc(routes, func(a, b *gwv1.GRPCRoute) int { return olderFirst(&a.ObjectMeta, &b.ObjectMeta) })
	for _, g := range routes {
		hr, err := grpcAsHTTPRoute(g)
		in.translateRouteOf(KindGRPCRoute, hr, err, gws, out)
	}
}

// routeStatus is the status map of a route kind.
func (o *gwOutput) routeStatus(kind string) map[types.NamespacedName][]gwv1.RouteParentStatus {
	if kind == KindGRPCRoute {
		return o.grpcRoutes
	}
	return o.routes
}

// grpcDefaultKinds are the GRPCRoute kind a listener of protocol p allows
// when it names no kinds: HTTP listeners take gRPC (HTTP/2 with prior
// knowledge, which HAProxy detects on its HTTP binds); the HTTPS binds
// offer ALPN http/1.1 only, so no h2 and no gRPC there.
func grpcDefaultKinds(p gwv1.ProtocolType) []gwv1.RouteGroupKind {
	if p != gwv1.HTTPProtocolType {
		return nil
	}
	return []gwv1.RouteGroupKind{{Group: ptrTo(gwv1.Group(gatewayGroup)), Kind: KindGRPCRoute}}
}

// grpcKindAllowed says whether a listener's allowedRoutes kind k is
// GRPCRoute and, if so, whether a listener of protocol p serves it (why:
// the InvalidRouteKinds message when not; "" when k is another kind).
func grpcKindAllowed(k gwv1.RouteGroupKind, p gwv1.ProtocolType) (ok bool, why string) {
	if k.Kind != KindGRPCRoute || (k.Group != nil && *k.Group != gatewayGroup) {
		return false, ""
	}
	if p != gwv1.HTTPProtocolType {
		return false, "GRPCRoute is served on HTTP listeners only: the Gateway HTTPS binds offer ALPN http/1.1, not h2"
	}
	return true, ""
}

// grpcAsHTTPRoute is the HTTPRoute a GRPCRoute means: the same object
// metadata, parents and hostnames; each method match a path match
// (service and method: Exact /<service>/<method>; service alone:
// PathPrefix /<service>, which matches whole path segments), its header
// matches as they are, no match: every request; the filters and
// backendRefs as they are (HTTPRoute's checks refuse what dcm does not
// serve, RequestMirror among them). The spec's precedence follows: an
// exact path beats a prefix, a longer service prefix a shorter one, then
// more headers. A match dcm cannot express is an error: the route is
// refused with it.
func grpcAsHTTPRoute(g *gwv1.GRPCRoute) (*gwv1.HTTPRoute, error) {
	hr := &gwv1.HTTPRoute{ObjectMeta: g.ObjectMeta}
	hr.Spec.CommonRouteSpec = g.Spec.CommonRouteSpec
	hr.Spec.Hostnames = g.Spec.Hostnames
	for i, rule := range g.Spec.Rules {
		field := fmt.Sprintf("spec.rules[%d]", i)
		hrule := gwv1.HTTPRouteRule{Name: rule.Name, SessionPersistence: rule.SessionPersistence}
		for j, m := range rule.Matches {
			hm, err := grpcMatch(fmt.Sprintf("%s.matches[%d]", field, j), m)
			if err != nil {
				return hr, err
			}
			hrule.Matches = append(hrule.Matches, hm)
		}
		for _, f := range rule.Filters {
			hrule.Filters = append(hrule.Filters, grpcFilter(f))
		}
		for _, b := range rule.BackendRefs {
			hb := gwv1.HTTPBackendRef{BackendRef: b.BackendRef}
			for _, f := range b.Filters {
				hb.Filters = append(hb.Filters, grpcFilter(f))
			}
			hrule.BackendRefs = append(hrule.BackendRefs, hb)
		}
		hr.Spec.Rules = append(hr.Spec.Rules, hrule)
	}
	return hr, nil
}

// grpcMatch is one GRPCRoute match as an HTTPRoute match.
func grpcMatch(field string, m gwv1.GRPCRouteMatch) (gwv1.HTTPRouteMatch, error) {
	var hm gwv1.HTTPRouteMatch
	if mm := m.Method; mm != nil {
		path, err := grpcMethodPath(field+".method", mm)
		if err != nil {
			return hm, err
		}
		hm.Path = &path
	}
	for _, h := range m.Headers {
		typ := gwv1.HeaderMatchExact
		if h.Type != nil && *h.Type == gwv1.GRPCHeaderMatchRegularExpression {
			typ = gwv1.HeaderMatchRegularExpression
		}
		hm.Headers = append(hm.Headers, gwv1.HTTPHeaderMatch{Type: &typ, Name: gwv1.HTTPHeaderName(h.Name), Value: h.Value})
	}
	return hm, nil
}

// grpcMethodPath is the path match of a method match. Exact: service and
// method the path /<service>/<method>, a service alone the prefix
// /<service>, a method alone the regular expression /[^/]+/<method>.
// RegularExpression: /(?:<service>)/(?:<method>), either one [^/]+ when
// empty. The Gateway routing matches a regular expression on the whole
// path (HAProxy's regex engine); Go's must compile it too.
func grpcMethodPath(field string, mm *gwv1.GRPCMethodMatch) (gwv1.HTTPPathMatch, error) {
	svc, method := deref(mm.Service), deref(mm.Method)
	if svc == "" && method == "" {
		return gwv1.HTTPPathMatch{}, fmt.Errorf("%s: service or method is required", field)
	}
	regex := func(p string) gwv1.HTTPPathMatch {
		return gwv1.HTTPPathMatch{Type: ptrTo(gwv1.PathMatchRegularExpression), Value: ptrTo(p)}
	}
	if mm.Type != nil && *mm.Type == gwv1.GRPCMethodMatchRegularExpression {
		parts := [2]string{"[^/]+", "[^/]+"}
		for i, re := range []string{svc, method} {
			if re == "" {
				continue
			}
			if _, err := regexp.Compile(re); err != nil || strings.ContainsAny(re, "\r\n\x00") {
				return gwv1.HTTPPathMatch{}, fmt.Errorf("%s: %q is not a regular expression dcm serves", field, re)
			}
			parts[i] = re
		}
		return regex("/(?:" + parts[0] + ")/(?:" + parts[1] + ")"), nil
	}
	if mm.Type != nil && *mm.Type != gwv1.GRPCMethodMatchExact {
		return gwv1.HTTPPathMatch{}, fmt.Errorf("%s.type: %s is not supported", field, *mm.Type)
	}
	for _, part := range []string{svc, method} {
		if !grpcName(part) {
			return gwv1.HTTPPathMatch{}, fmt.Errorf("%s: %q is not a gRPC service or method name", field, part)
		}
	}
	switch {
	case svc == "":
		return regex("/[^/]+/" + regexp.QuoteMeta(method)), nil
	case method == "":
		return gwv1.HTTPPathMatch{Type: ptrTo(gwv1.PathMatchPathPrefix), Value: ptrTo("/" + svc)}, nil
	}
	return gwv1.HTTPPathMatch{Type: ptrTo(gwv1.PathMatchExact), Value: ptrTo("/" + svc + "/" + method)}, nil
}

// grpcName accepts what the CRD's validation lets through for an Exact
// service or method (letters, digits, '_' and '.'), checked again here as
// it becomes a path HAProxy matches.
func grpcName(s string) bool {
	return s == "" || strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") == ""
}

// grpcFilter is a GRPCRoute filter as the HTTPRoute filter of the same
// type (the four types are HTTPRoute's too).
func grpcFilter(f gwv1.GRPCRouteFilter) gwv1.HTTPRouteFilter {
	return gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterType(f.Type), RequestHeaderModifier: f.RequestHeaderModifier,
		ResponseHeaderModifier: f.ResponseHeaderModifier, RequestMirror: f.RequestMirror, ExtensionRef: f.ExtensionRef}
}

// writeGRPCRouteStatus is writeRouteStatus for a GRPCRoute.
func (s *Source) writeGRPCRouteStatus(ctx context.Context, ls *gwListers, ns, name string, want []gwv1.RouteParentStatus) error {
	r, err := grpcRouteByName(ls, ns, name)
	if err != nil {
		return err
	}
	parents, same := s.routeParents(r.Status.Parents, want)
	if same {
		s.dropRouteTombstone(statusGRPC+ns+"/"+name, want)
		return nil
	}
	r = r.DeepCopy()
	r.Status.Parents = parents
	if _, err := s.gw.opts.Client.GatewayV1().GRPCRoutes(ns).UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of GRPCRoute %s/%s: %w", ns, name, err)
	}
	s.statusWrites.Add(1)
	s.dropRouteTombstone(statusGRPC+ns+"/"+name, want)
	return nil
}

func grpcRouteByName(ls *gwListers, ns, name string) (*gwv1.GRPCRoute, error) {
	for _, l := range ls.grpcRoutes {
		r, err := l.GRPCRoutes(ns).Get(name)
		if err == nil || !apierrors.IsNotFound(err) {
			return r, err
		}
	}
	return nil, apierrors.NewNotFound(gwv1.Resource("grpcroutes"), name)
}

// listGRPCRoutes adds the GRPCRoutes of the caches to in.
func (ls *gwListers) listGRPCRoutes(in *gwInput) error {
	for _, l := range ls.grpcRoutes {
		rs, err := l.List(labels.Everything())
		if err != nil {
			return fmt.Errorf("list GRPCRoutes: %w", err)
		}
		in.grpcRoutes = append(in.grpcRoutes, rs...)
	}
	return nil
}

// grpcRouteInformer watches the GRPCRoutes of one namespace's factory.
func (s *Source) grpcRouteInformer(v1 gwinformersv1.Interface, ls *gwListers, add func(cache.SharedIndexInformer)) {
	ls.grpcRoutes = append(ls.grpcRoutes, v1.GRPCRoutes().Lister())
	add(v1.GRPCRoutes().Informer())
	s.recheckStatus(v1.GRPCRoutes().Informer(), statusGRPC)
}
