// Package kube turns Kubernetes objects (Ingress, Service, EndpointSlice) into
// dcm's model. It is the only package besides main, the demo and the e2e tests
// that imports client-go, so the rest of dcm never sees a Kubernetes type.
package kube

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/dcm-router/dcm/dcm"
)

// Destination CA sources (dcm.UpstreamTLS.CA).
const (
	// CASecretPrefix starts the source of a CA read from a Secret's ca.crt.
	CASecretPrefix = "secret:"
	// CADefault is the CA of --default-backend-ca-file.
	CADefault = "file:default"
)

// Kinds of the objects this package reports on.
const (
	KindIngress       = "Ingress"
	KindService       = "Service"
	KindEndpointSlice = "EndpointSlice"
	KindSecret        = "Secret"
)

// Workload kinds the scale subresource is used with.
const (
	WorkloadDeployment  = "Deployment"
	WorkloadStatefulSet = "StatefulSet"
)

// IngressClass is the class an Ingress asks for: spec.ingressClassName, else
// the legacy annotation, else "".
func IngressClass(ing *networkingv1.Ingress) string {
	if ing.Spec.IngressClassName != nil {
		return *ing.Spec.IngressClassName
	}
	return ing.Annotations[AnnotationIngressClass]
}

// MatchesClass reports whether dcm serves the Ingress when it is configured
// for class ("" serves every Ingress).
func MatchesClass(ing *networkingv1.Ingress, class string) bool {
	return class == "" || IngressClass(ing) == class
}

// invalidAt re-labels a validation error with the field path of the object it
// came from and the value as the user wrote it, so a rejection message points
// at the exact spot to fix.
func invalidAt(err error, field, raw string) error {
	if err == nil {
		return nil
	}
	var ie *dcm.InvalidError
	if errors.As(err, &ie) {
		return &dcm.InvalidError{Reason: ie.Reason, Field: field, Value: raw}
	}
	return fmt.Errorf("%s %q: %w", field, raw, err)
}

// RejectMessage renders a rejection for people: reason, field path and the
// value quoted with %+q, so control characters and look-alike non-ASCII
// letters show as escapes instead of hiding in the text.
func RejectMessage(err error) string {
	var ie *dcm.InvalidError
	if errors.As(err, &ie) {
		return fmt.Sprintf("%s: %s %+q", ie.Reason, ie.Field, ie.Value)
	}
	return err.Error()
}

// RejectReason is the dcm.Reject* reason carried by err, or invalid-value.
func RejectReason(err error) string {
	var ie *dcm.InvalidError
	if errors.As(err, &ie) {
		return ie.Reason
	}
	return dcm.RejectInvalidValue
}

// rawRoute is one host/path of an Ingress before it gets its name.
type rawRoute struct {
	host     string
	path     string
	pathType dcm.PathType
	service  dcm.ServiceRef
	field    string // where it came from, for messages
}

func (r rawRoute) id() string { return r.host + "|" + r.path + "|" + string(r.pathType) }

// RouteName names one route of an Ingress that yields several: a hash of what
// the route matches, so names stay put when rules or paths are reordered.
func RouteName(ingress, host, path string, pathType dcm.PathType) string {
	h := fnv.New32a()
	h.Write([]byte(host + "|" + path + "|" + string(pathType)))
	return fmt.Sprintf("%s-%08x", ingress, h.Sum32())
}

// IngressRoutes converts an Ingress into routes, one per rule host × HTTP path
// plus one for spec.defaultBackend. Any field that cannot reach HAProxy makes
// the whole Ingress invalid: serving part of an Ingress would silently send
// some of its paths to a different backend. The error is a *dcm.InvalidError
// whose Field is the path of the offending field and Value its raw value.
// Class filtering is the caller's business (MatchesClass).
func IngressRoutes(ing *networkingv1.Ingress) ([]dcm.Route, error) {
	if err := dcm.ValidateDNSLabel("metadata.namespace", ing.Namespace); err != nil {
		return nil, err
	}
	if err := dcm.ValidateDNSSubdomain("metadata.name", ing.Name); err != nil {
		return nil, err
	}
	opts, err := ingressAnnotations(ing)
	if err != nil {
		return nil, err
	}
	tlsHosts, err := ingressTLS(ing)
	if err != nil {
		return nil, err
	}
	raws, err := ingressRawRoutes(ing)
	if err != nil {
		return nil, err
	}

	routes := make([]dcm.Route, 0, len(raws))
	names := map[string]string{}
	splitUsed := false
	for _, r := range raws {
		name := ing.Name
		if len(raws) > 1 {
			name = RouteName(ing.Name, r.host, r.path, r.pathType)
		}
		if other, dup := names[name]; dup {
			// Two different host/paths with the same 32-bit hash: never seen,
			// but two backends with one name would be worse than a rejection.
			return nil, &dcm.InvalidError{Reason: dcm.RejectConflict, Field: r.field, Value: "route name " + name + " also used by " + other}
		}
		names[name] = r.field
		route, err := opts.route(ing, r, name, tlsHosts)
		if err != nil {
			return nil, err
		}
		if len(opts.split) > 0 && opts.split[0].Name == r.service.Name {
			splitUsed = true
		}
		routes = append(routes, route)
	}
	if len(opts.split) > 0 && !splitUsed {
		// A typo in the primary's name would otherwise silently split nothing.
		return nil, &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: annotationField(AnnotationWeights),
			Value: ing.Annotations[AnnotationWeights] + " (no path routes to " + opts.split[0].Name + ")"}
	}
	slices.SortFunc(routes, func(a, b dcm.Route) int { return strings.Compare(a.Name, b.Name) })
	return routes, nil
}

// ingressRawRoutes lists the host/paths of an Ingress's rules, then its
// default backend unless a rule already catches every request.
func ingressRawRoutes(ing *networkingv1.Ingress) ([]rawRoute, error) {
	var raws []rawRoute
	seen := map[string]int{} // id → index in raws
	add := func(r rawRoute) error {
		if i, ok := seen[r.id()]; ok {
			if raws[i].service == r.service {
				return nil // the same path written twice: harmless
			}
			return &dcm.InvalidError{Reason: dcm.RejectConflict, Field: r.field,
				Value: fmt.Sprintf("%s %s (%s) is also routed by %s", hostOrAny(r.host), r.path, r.pathType, raws[i].field)}
		}
		seen[r.id()] = len(raws)
		raws = append(raws, r)
		return nil
	}

	for i, rule := range ing.Spec.Rules {
		hostField := fmt.Sprintf("spec.rules[%d].host", i)
		host := strings.ToLower(rule.Host)
		if err := dcm.ValidateRouteHost(hostField, host); err != nil {
			return nil, invalidAt(err, hostField, rule.Host)
		}
		if rule.HTTP == nil {
			continue
		}
		for j, p := range rule.HTTP.Paths {
			field := fmt.Sprintf("spec.rules[%d].http.paths[%d]", i, j)
			pt, err := pathType(p.PathType, field+".pathType")
			if err != nil {
				return nil, err
			}
			path := dcm.NormalizePath(p.Path, pt)
			if err := dcm.ValidatePath(field+".path", path); err != nil {
				return nil, invalidAt(err, field+".path", p.Path)
			}
			svc, err := serviceRef(p.Backend, field+".backend")
			if err != nil {
				return nil, err
			}
			if err := add(rawRoute{host: host, path: path, pathType: pt, service: svc, field: field}); err != nil {
				return nil, err
			}
		}
	}
	if b := ing.Spec.DefaultBackend; b != nil {
		svc, err := serviceRef(*b, "spec.defaultBackend")
		if err != nil {
			return nil, err
		}
		// A rule for any host and "/" already catches every request the
		// default backend would get, so the rule wins and the default is moot.
		d := rawRoute{host: "", path: "/", pathType: dcm.PathPrefix, service: svc, field: "spec.defaultBackend"}
		if _, taken := seen[d.id()]; !taken {
			seen[d.id()] = len(raws)
			raws = append(raws, d)
		}
	}
	return raws, nil
}

// route is the route of one host/path of the Ingress, named name, as its
// annotations and spec.tls (tlsHosts: host → Secret) make it.
func (o ingressOptions) route(ing *networkingv1.Ingress, r rawRoute, name string, tlsHosts map[string]string) (dcm.Route, error) {
	route := dcm.Route{
		Namespace: ing.Namespace, Name: name,
		Source:    dcm.SourceIngress,
		Object:    ing.Name,
		Kind:      dcm.KindHTTP,
		Host:      r.host,
		Path:      r.path,
		PathType:  r.pathType,
		Services:  []dcm.ServiceRef{r.service},
		Balance:   o.balance,
		Check:     o.check,
		Sticky:    o.sticky,
		Allowlist: o.allowlist,
		RateLimit: o.rateLimit,
		Headers:   o.headers,
		MaxConn:   o.maxConn, CheckInterMillis: o.checkInter,
	}
	if len(o.split) > 0 && o.split[0].Name == r.service.Name {
		route.Services = make([]dcm.ServiceRef, len(o.split))
		for i, s := range o.split {
			route.Services[i] = dcm.ServiceRef{Name: s.Name, Port: r.service.Port, Weight: s.Weight}
		}
	}
	if o.passthrough {
		// The connection is routed before any request is read: by
		// host alone.
		if r.host == "" {
			return route, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: r.field, Value: "passthrough without a host"}
		}
		if r.path != "/" || r.pathType != dcm.PathPrefix {
			return route, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: r.field + ".path", Value: "passthrough with path " + r.path}
		}
		route.Kind = dcm.KindPassthrough
		route.Insecure = dcm.InsecureNone
		if o.redirect && o.redirectSet {
			route.Insecure, route.RedirectCode = dcm.InsecureRedirect, o.redirectCode
		}
	}
	if secret, ok := o.tlsFor(tlsHosts, r.host); ok {
		// The Secret's version is the Source's to fill in: it
		// changes without the Ingress changing.
		route.Kind = dcm.KindEdge
		route.TLS = tlsRef(ing.Namespace, secret, name)
		route.Insecure = dcm.InsecureAllow
		if o.redirect {
			route.Insecure, route.RedirectCode = dcm.InsecureRedirect, o.redirectCode
		}
	}
	if o.upstream != nil {
		if route.Kind != dcm.KindEdge {
			// Reencrypt ends the client's TLS first: without a
			// certificate there is nothing to reencrypt, and
			// sending such a host in clear text to pods that
			// expect TLS would only fail.
			return route, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: r.field,
				Value: "host " + hostOrAny(r.host) + " is not in spec.tls (" + AnnotationReencrypt + ")"}
		}
		up := *o.upstream
		if up.ServerName == "" {
			up.ServerName = r.service.Name + "." + ing.Namespace + ".svc"
		}
		route.Kind = dcm.KindReencrypt
		route.Upstream = &up
	}
	route.HTTP = o.httpFor(route.Kind)
	if err := dcm.ValidateRoute(route); err != nil {
		// Names derived from a long Ingress name can outgrow the limit.
		return route, invalidAt(err, r.field+" derived route name", route.Name)
	}
	return route, nil
}

// ingressTLS reads spec.tls: which host is served with which Secret (of
// the Ingress's namespace). A host named in two entries with different
// Secrets, an entry without a Secret or without hosts (it would mean the
// default certificate for every host), and wildcard hosts are rejected.
// Hosts of spec.tls that no rule routes are ignored, as the API documents.
func ingressTLS(ing *networkingv1.Ingress) (map[string]string, error) {
	hosts := map[string]string{}
	for i, t := range ing.Spec.TLS {
		field := fmt.Sprintf("spec.tls[%d]", i)
		if t.SecretName == "" {
			return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: field + ".secretName", Value: ""}
		}
		if err := dcm.ValidateDNSSubdomain(field+".secretName", t.SecretName); err != nil {
			return nil, err
		}
		if len(t.Hosts) == 0 {
			return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: field + ".hosts", Value: ""}
		}
		for j, h := range t.Hosts {
			hf := fmt.Sprintf("%s.hosts[%d]", field, j)
			host := strings.ToLower(h)
			if err := dcm.ValidateRouteHost(hf, host); err != nil || host == "" {
				return nil, invalidAt(cmpErr(err, dcm.RejectInvalidHost, hf, h), hf, h)
			}
			if other, ok := hosts[host]; ok && other != t.SecretName {
				return nil, &dcm.InvalidError{Reason: dcm.RejectConflict, Field: hf,
					Value: fmt.Sprintf("%s with Secret %s and with Secret %s", host, other, t.SecretName)}
			}
			hosts[host] = t.SecretName
		}
	}
	return hosts, nil
}

func cmpErr(err error, reason, field, value string) error {
	if err != nil {
		return err
	}
	return &dcm.InvalidError{Reason: reason, Field: field, Value: value}
}

func hostOrAny(h string) string {
	if h == "" {
		return "*"
	}
	return h
}

// pathType maps the Ingress path types onto dcm's two. ImplementationSpecific
// is served as Prefix, the meaning most controllers give it; a missing type
// (only possible with objects that bypassed API validation) too.
func pathType(t *networkingv1.PathType, field string) (dcm.PathType, error) {
	if t == nil {
		return dcm.PathPrefix, nil
	}
	switch *t {
	case networkingv1.PathTypeExact:
		return dcm.PathExact, nil
	case networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific:
		return dcm.PathPrefix, nil
	}
	return "", &dcm.InvalidError{Reason: dcm.RejectInvalidPath, Field: field, Value: string(*t)}
}

func serviceRef(b networkingv1.IngressBackend, field string) (dcm.ServiceRef, error) {
	if b.Resource != nil {
		return dcm.ServiceRef{}, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: field + ".resource",
			Value: b.Resource.Kind + "/" + b.Resource.Name}
	}
	if b.Service == nil {
		return dcm.ServiceRef{}, &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: field + ".service", Value: ""}
	}
	s := b.Service
	if err := dcm.ValidateDNSLabel(field+".service.name", s.Name); err != nil {
		return dcm.ServiceRef{}, err
	}
	var port string
	switch {
	case s.Port.Name != "":
		if err := dcm.ValidatePortName(field+".service.port.name", s.Port.Name); err != nil {
			return dcm.ServiceRef{}, err
		}
		port = s.Port.Name
	default:
		if err := dcm.ValidatePort(field+".service.port.number", int(s.Port.Number)); err != nil {
			return dcm.ServiceRef{}, err
		}
		port = strconv.Itoa(int(s.Port.Number))
	}
	return dcm.ServiceRef{Name: s.Name, Port: port, Weight: 1}, nil
}

// ServicePortName resolves the port a route names (a port name, or a number
// matched against spec.ports[].port) to the name of the Service port, which is
// how EndpointSlices label their ports. The name is "" for a Service with a
// single unnamed port.
func ServicePortName(svc *corev1.Service, port string) (string, bool) {
	n, err := strconv.Atoi(port)
	numeric := err == nil
	for _, p := range svc.Spec.Ports {
		if numeric && int(p.Port) == n || !numeric && p.Name == port {
			return p.Name, true
		}
	}
	return "", false
}

// ValidateEndpointSlice checks every string and number of a slice that could
// reach HAProxy: port names and numbers, addresses, pod names and the server
// names derived from them. The verdict depends on the slice alone, so a slice
// is either used by every route of its Service or by none. FQDN slices pass:
// dcm never uses them.
func ValidateEndpointSlice(slice *discoveryv1.EndpointSlice) error {
	var want func(netip.Addr) bool
	switch slice.AddressType {
	case discoveryv1.AddressTypeIPv4:
		want = netip.Addr.Is4
	case discoveryv1.AddressTypeIPv6:
		want = func(a netip.Addr) bool { return a.Is6() && !a.Is4In6() }
	default:
		return nil
	}
	for i, p := range slice.Ports {
		if p.Name != nil && *p.Name != "" {
			if err := dcm.ValidatePortName(fmt.Sprintf("ports[%d].name", i), *p.Name); err != nil {
				return err
			}
		}
		if p.Port != nil {
			if err := dcm.ValidatePort(fmt.Sprintf("ports[%d].port", i), int(*p.Port)); err != nil {
				return err
			}
		}
	}
	// Field names are spelled only for an error: a resync validates every
	// slice of the cluster.
	for i := range slice.Endpoints {
		ep := &slice.Endpoints[i]
		for j, a := range ep.Addresses {
			field := func() string { return fmt.Sprintf("endpoints[%d].addresses[%d]", i, j) }
			if err := dcm.ValidateAddr("address", a); err != nil {
				return dcm.ValidateAddr(field(), a)
			}
			if addr := netip.MustParseAddr(a); !want(addr) {
				return &dcm.InvalidError{Reason: dcm.RejectInvalidAddress, Field: field(), Value: a}
			}
		}
		pod := podName(ep)
		if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
			if err := dcm.ValidateDNSSubdomain("pod", ep.TargetRef.Name); err != nil {
				return dcm.ValidateDNSSubdomain(fmt.Sprintf("endpoints[%d].targetRef.name", i), ep.TargetRef.Name)
			}
		}
		if len(ep.Addresses) == 0 {
			continue
		}
		// Belt and braces: the parts are valid, check what is built from them.
		var buf [128]byte
		for _, p := range slice.Ports {
			if p.Port == nil {
				continue
			}
			// The address and port are checked above; the name alone is
			// new, and built on the stack: a resync checks 100,000.
			if dcm.ValidServerName(dcm.AppendServerName(buf[:0], pod, deref(p.Name), ep.Addresses[0], int(*p.Port))) {
				continue
			}
			e := dcm.Endpoint{
				Name: dcm.ServerName(pod, deref(p.Name), ep.Addresses[0], int(*p.Port)),
				Addr: ep.Addresses[0], Port: int(*p.Port), Weight: 1, State: dcm.StateReady,
			}
			if err := dcm.ValidateEndpoint(e); err != nil {
				return invalidAt(err, fmt.Sprintf("endpoints[%d]", i), e.Name)
			}
		}
	}
	return nil
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

func podName(ep *discoveryv1.Endpoint) string {
	if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
		return ep.TargetRef.Name
	}
	return ""
}

// EndpointState maps EndpointSlice conditions to a server state, reading nil
// the way the API documents it (ready and serving default to true,
// terminating to false).
func EndpointState(c discoveryv1.EndpointConditions) dcm.AdminState {
	ready := c.Ready == nil || *c.Ready
	serving := c.Serving == nil || *c.Serving
	terminating := c.Terminating != nil && *c.Terminating
	switch {
	case ready:
		return dcm.StateReady
	case serving && terminating:
		return dcm.StateDrain
	}
	return dcm.StateMaint
}

func stateRank(s dcm.AdminState) int {
	switch s {
	case dcm.StateReady:
		return 2
	case dcm.StateDrain:
		return 1
	}
	return 0
}
