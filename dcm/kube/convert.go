// Package kube turns Kubernetes objects (Ingress, Service, EndpointSlice) into
// dcm's model. It is the only package besides main, the demo and the e2e tests
// that imports client-go, so the rest of dcm never sees a Kubernetes type.
package kube

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/dcm-router/dcm/dcm"
)

// Annotations dcm reads.
const (
	// AnnotationIngressClass is the pre-IngressClass way to pick a controller;
	// spec.ingressClassName wins when both are set.
	AnnotationIngressClass = "kubernetes.io/ingress.class"
	// AnnotationBalance on an Ingress picks the balance algorithm of its routes.
	AnnotationBalance = "dcm.io/balance"
	// AnnotationHealthCheck on an Ingress: "false" turns HAProxy's health checks off.
	AnnotationHealthCheck = "dcm.io/health-check"
	// AnnotationSSLPassthrough on an Ingress: "true" passes its hosts' TLS
	// connections to the pods undecrypted, picked by SNI (passthrough
	// routes). Every rule then needs a host and the path "/" only, and
	// spec.tls must be empty: the pods hold the certificates.
	AnnotationSSLPassthrough = "dcm.io/ssl-passthrough"
	// AnnotationWorkload on a Service names the workload behind it
	// ("Deployment/web", "StatefulSet/db") when pod names cannot tell.
	AnnotationWorkload = "dcm.io/workload"
	// AnnotationWeights on an Ingress splits traffic between services, as an
	// OpenShift Route's to and alternateBackends do: "web=80,web-canary=20".
	// The first service is the primary: every path of the Ingress that routes
	// to it is served by all the listed services (on the same port), each
	// getting its weight's share of the requests whatever its number of pods.
	AnnotationWeights = "dcm.io/weights"
	// AnnotationSticky on an Ingress: "true" keeps each client on one pod
	// with a dynamic cookie (off by default).
	AnnotationSticky = "dcm.io/sticky"
	// AnnotationReencrypt on an Ingress: "true" makes its hosts of
	// spec.tls reencrypt routes: HAProxy terminates the client's TLS with
	// the host's Secret, as for any host of spec.tls, then connects to the
	// pods over TLS and verifies their certificate. Every rule then needs
	// a host listed in spec.tls. Implied by AnnotationBackendCA.
	AnnotationReencrypt = "dcm.io/reencrypt"
	// AnnotationBackendCA on an Ingress names a Secret of its namespace
	// whose ca.crt is the CA the pods' certificates must be signed by
	// (cert-manager writes ca.crt into the kubernetes.io/tls Secrets it
	// issues); without it, the file of --default-backend-ca-file.
	AnnotationBackendCA = "dcm.io/backend-ca"
	// AnnotationBackendServerName on an Ingress is the name the pods'
	// certificates must carry, also sent as SNI; by default
	// <service>.<namespace>.svc, the name of a service-serving certificate.
	AnnotationBackendServerName = "dcm.io/backend-server-name"
	// AnnotationSSLRedirect on an Ingress: what plain HTTP requests for its
	// spec.tls hosts get. "true" (the default, as with haproxy-ingress,
	// HAProxy's kubernetes-ingress and ingress-nginx) redirects them to
	// https; "false" serves them as HTTPS requests are. On an Ingress with
	// dcm.io/ssl-passthrough, "true" redirects its hosts' plain HTTP, and
	// the default ("false") leaves it unserved, as before.
	AnnotationSSLRedirect = "dcm.io/ssl-redirect"
	// AnnotationSSLRedirectCode on an Ingress: the status of those
	// redirects, 301, 302 (the default, as OpenShift's router), 303, 307
	// or 308.
	AnnotationSSLRedirectCode = "dcm.io/ssl-redirect-code"
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
	balance := dcm.BalanceRoundRobin
	if v, ok := ing.Annotations[AnnotationBalance]; ok {
		if err := dcm.ValidateBalance("metadata.annotations["+AnnotationBalance+"]", v); err != nil {
			return nil, err
		}
		balance = v
	}
	var err error
	check := true
	if v, ok := ing.Annotations[AnnotationHealthCheck]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "metadata.annotations[" + AnnotationHealthCheck + "]", Value: v}
		}
		check = b
	}

	passthrough := false
	if v, ok := ing.Annotations[AnnotationSSLPassthrough]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "metadata.annotations[" + AnnotationSSLPassthrough + "]", Value: v}
		}
		passthrough = b
	}
	if passthrough && len(ing.Spec.TLS) > 0 {
		// HAProxy never holds the key of a passed-through host: a Secret
		// named here would be a certificate nobody serves.
		return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: "spec.tls", Value: "with " + AnnotationSSLPassthrough}
	}
	sticky := false
	if v, ok := ing.Annotations[AnnotationSticky]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "metadata.annotations[" + AnnotationSticky + "]", Value: v}
		}
		sticky = b
	}
	if sticky && passthrough {
		// A cookie needs HTTP; HAProxy never reads a passed-through request.
		return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: "metadata.annotations[" + AnnotationSticky + "]", Value: "with " + AnnotationSSLPassthrough}
	}
	redirect, redirectSet := true, false
	if v, ok := ing.Annotations[AnnotationSSLRedirect]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "metadata.annotations[" + AnnotationSSLRedirect + "]", Value: v}
		}
		redirect, redirectSet = b, true
	}
	redirectCode := 0
	if v, ok := ing.Annotations[AnnotationSSLRedirectCode]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || !slices.Contains(dcm.RedirectCodes, n) || strconv.Itoa(n) != v {
			return nil, &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "metadata.annotations[" + AnnotationSSLRedirectCode + "]", Value: v}
		}
		redirectCode = n
	}
	var split []dcm.ServiceRef
	if v, ok := ing.Annotations[AnnotationWeights]; ok {
		if split, err = ParseWeights("metadata.annotations["+AnnotationWeights+"]", v); err != nil {
			return nil, err
		}
	}
	upstream, err := ingressUpstream(ing, passthrough, len(split) > 0)
	if err != nil {
		return nil, err
	}

	tlsHosts, err := ingressTLS(ing)
	if err != nil {
		return nil, err
	}

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
		if err := dcm.ValidateHost(hostField, host); err != nil {
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
		route := dcm.Route{
			Namespace: ing.Namespace,
			Name:      name,
			Source:    dcm.SourceIngress,
			Object:    ing.Name,
			Kind:      dcm.KindHTTP,
			Host:      r.host,
			Path:      r.path,
			PathType:  r.pathType,
			Services:  []dcm.ServiceRef{r.service},
			Balance:   balance,
			Check:     check,
			Sticky:    sticky,
		}
		if len(split) > 0 && split[0].Name == r.service.Name {
			splitUsed = true
			route.Services = make([]dcm.ServiceRef, len(split))
			for i, s := range split {
				route.Services[i] = dcm.ServiceRef{Name: s.Name, Port: r.service.Port, Weight: s.Weight}
			}
		}
		if passthrough {
			// The connection is routed before any request is read: by
			// host alone.
			if r.host == "" {
				return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: r.field, Value: "passthrough without a host"}
			}
			if r.path != "/" || r.pathType != dcm.PathPrefix {
				return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: r.field + ".path", Value: "passthrough with path " + r.path}
			}
			route.Kind = dcm.KindPassthrough
			route.Insecure = dcm.InsecureNone
			if redirect && redirectSet {
				route.Insecure, route.RedirectCode = dcm.InsecureRedirect, redirectCode
			}
		}
		if secret, ok := tlsHosts[r.host]; ok && r.host != "" {
			// The Secret's version is the Source's to fill in: it
			// changes without the Ingress changing.
			route.Kind = dcm.KindEdge
			route.TLS = &dcm.TLSRef{Secret: ing.Namespace + "/" + secret}
			route.Insecure = dcm.InsecureAllow
			if redirect {
				route.Insecure, route.RedirectCode = dcm.InsecureRedirect, redirectCode
			}
		}
		if upstream != nil {
			if route.Kind != dcm.KindEdge {
				// Reencrypt ends the client's TLS first: without a
				// certificate there is nothing to reencrypt, and
				// sending such a host in clear text to pods that
				// expect TLS would only fail.
				return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: r.field,
					Value: "host " + hostOrAny(r.host) + " is not in spec.tls (" + AnnotationReencrypt + ")"}
			}
			up := *upstream
			if up.ServerName == "" {
				up.ServerName = r.service.Name + "." + ing.Namespace + ".svc"
			}
			route.Kind = dcm.KindReencrypt
			route.Upstream = &up
		}
		if err := dcm.ValidateRoute(route); err != nil {
			// Names derived from a long Ingress name can outgrow the limit.
			return nil, invalidAt(err, r.field+" derived route name", route.Name)
		}
		routes = append(routes, route)
	}
	if len(split) > 0 && !splitUsed {
		// A typo in the primary's name would otherwise silently split nothing.
		return nil, &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: "metadata.annotations[" + AnnotationWeights + "]",
			Value: ing.Annotations[AnnotationWeights] + " (no path routes to " + split[0].Name + ")"}
	}
	slices.SortFunc(routes, func(a, b dcm.Route) int { return strings.Compare(a.Name, b.Name) })
	return routes, nil
}

// ingressUpstream reads the reencrypt annotations: nil when the Ingress
// is not reencrypt. The CA's version is the Source's to fill in, and so is
// the check that a default CA exists; the server name is left empty when
// it defaults to each route's service.
func ingressUpstream(ing *networkingv1.Ingress, passthrough, weighted bool) (*dcm.UpstreamTLS, error) {
	field := func(a string) string { return "metadata.annotations[" + a + "]" }
	reencrypt := false
	if v, ok := ing.Annotations[AnnotationReencrypt]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: field(AnnotationReencrypt), Value: v}
		}
		reencrypt = b
	}
	ca, hasCA := ing.Annotations[AnnotationBackendCA]
	name, hasName := ing.Annotations[AnnotationBackendServerName]
	if hasCA {
		if err := dcm.ValidateDNSSubdomain(field(AnnotationBackendCA), ca); err != nil {
			return nil, invalidAt(err, field(AnnotationBackendCA), ca)
		}
		reencrypt = true
	}
	if hasName {
		if err := dcm.ValidateHost(field(AnnotationBackendServerName), name); err != nil || name == "" {
			return nil, invalidAt(cmpErr(err, dcm.RejectInvalidHost, field(AnnotationBackendServerName), name), field(AnnotationBackendServerName), name)
		}
	}
	if !reencrypt {
		if hasName {
			return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: field(AnnotationBackendServerName), Value: "without " + AnnotationReencrypt}
		}
		return nil, nil
	}
	if passthrough {
		return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: field(AnnotationReencrypt), Value: "with " + AnnotationSSLPassthrough}
	}
	if weighted && !hasName {
		// Each service's pods would carry their own service's name, and
		// only the primary's would be verified.
		return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: field(AnnotationWeights),
			Value: "with " + AnnotationReencrypt + " but without " + AnnotationBackendServerName}
	}
	up := &dcm.UpstreamTLS{CA: CADefault, ServerName: name}
	if hasCA {
		up.CA = CASecretPrefix + ing.Namespace + "/" + ca
	}
	return up, nil
}

// ParseWeights reads the weights annotation: "primary=80,alternate=20",
// service names that are DNS labels, weights in 0..256, at most
// dcm.MaxServices services, none twice. Ports are the route's business.
func ParseWeights(field, v string) ([]dcm.ServiceRef, error) {
	bad := func(reason string) error { return &dcm.InvalidError{Reason: reason, Field: field, Value: v} }
	if len(v) > 1024 {
		return nil, bad(dcm.RejectInvalidValue)
	}
	var out []dcm.ServiceRef
	for _, part := range strings.Split(v, ",") {
		name, weight, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, bad(dcm.RejectInvalidValue)
		}
		if dcm.ValidateDNSLabel(field, name) != nil {
			return nil, bad(dcm.RejectInvalidName)
		}
		w, err := strconv.Atoi(weight)
		if err != nil || w < 0 || w > dcm.MaxWeight || strconv.Itoa(w) != weight {
			return nil, bad(dcm.RejectInvalidValue)
		}
		out = append(out, dcm.ServiceRef{Name: name, Weight: w})
	}
	if err := dcm.ValidateServices(out); err != nil {
		return nil, invalidAt(err, field, v)
	}
	return out, nil
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
			if err := dcm.ValidateHost(hf, host); err != nil || host == "" {
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
	for i, ep := range slice.Endpoints {
		for j, a := range ep.Addresses {
			field := fmt.Sprintf("endpoints[%d].addresses[%d]", i, j)
			if err := dcm.ValidateAddr(field, a); err != nil {
				return err
			}
			if addr := netip.MustParseAddr(a); !want(addr) {
				return &dcm.InvalidError{Reason: dcm.RejectInvalidAddress, Field: field, Value: a}
			}
		}
		pod := podName(ep)
		if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
			if err := dcm.ValidateDNSSubdomain(fmt.Sprintf("endpoints[%d].targetRef.name", i), ep.TargetRef.Name); err != nil {
				return err
			}
		}
		if len(ep.Addresses) == 0 {
			continue
		}
		// Belt and braces: the parts are valid, check what is built from them.
		for _, p := range slice.Ports {
			if p.Port == nil {
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

func podName(ep discoveryv1.Endpoint) string {
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

// candidate is an endpoint with what decides between duplicates.
type candidate struct {
	ep   dcm.Endpoint
	ipv4 bool
}

// better reports whether a should be kept over b when both describe the same
// server: IPv4 over IPv6 (dual-stack pod listed twice), then the better state
// (during a slice handoff the newer slice is usually the more advanced one),
// then the smaller address so the choice does not depend on slice order.
func better(a, b candidate) bool {
	if a.ipv4 != b.ipv4 {
		return a.ipv4
	}
	if ra, rb := stateRank(a.ep.State), stateRank(b.ep.State); ra != rb {
		return ra > rb
	}
	if a.ep.Addr != b.ep.Addr {
		return a.ep.Addr < b.ep.Addr
	}
	return a.ep.Port < b.ep.Port
}

// ServiceEndpoints lists the servers of a route: the endpoints of the Service
// port the route names, from every valid slice of the Service's primary IP
// family, deduplicated and sorted by name. Invalid slices are skipped (the
// caller reports them through ValidateEndpointSlice). A nil Service, an
// unknown port or no slices give no endpoints: HAProxy then answers 503.
func ServiceEndpoints(svc *corev1.Service, endpointSlices []*discoveryv1.EndpointSlice, port string) []dcm.Endpoint {
	if svc == nil {
		return nil
	}
	portName, ok := ServicePortName(svc, port)
	if !ok {
		return nil
	}
	families := map[discoveryv1.AddressType]bool{}
	if len(svc.Spec.IPFamilies) > 0 {
		families[discoveryv1.AddressType(svc.Spec.IPFamilies[0])] = true
	} else {
		families[discoveryv1.AddressTypeIPv4] = true
		families[discoveryv1.AddressTypeIPv6] = true
	}

	byName := map[string]candidate{}
	bestState := map[string]dcm.AdminState{}
	for _, slice := range endpointSlices {
		if !families[slice.AddressType] {
			continue
		}
		num, found := slicePort(slice, portName)
		if !found {
			continue
		}
		if ValidateEndpointSlice(slice) != nil {
			continue
		}
		for _, ep := range slice.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			// The API calls the addresses of one endpoint fungible; the
			// first is the one consumers are told to use.
			addr := ep.Addresses[0]
			pod := podName(ep)
			c := candidate{
				ep: dcm.Endpoint{
					Name:   dcm.ServerName(pod, portName, addr, num),
					Addr:   addr,
					Port:   num,
					Weight: 1,
					State:  EndpointState(ep.Conditions),
					Pod:    pod,
				},
				ipv4: slice.AddressType == discoveryv1.AddressTypeIPv4,
			}
			if s, ok := bestState[c.ep.Name]; !ok || stateRank(c.ep.State) > stateRank(s) {
				bestState[c.ep.Name] = c.ep.State
			}
			if old, ok := byName[c.ep.Name]; !ok || better(c, old) {
				byName[c.ep.Name] = c
			}
		}
	}

	// The same address:port under two names (a pod listed once with and once
	// without its targetRef) must not become two servers either.
	byAddr := map[string]candidate{}
	for name, c := range byName {
		// A pod listed in an IPv4 and an IPv6 slice keeps its IPv4 address
		// but the best state either slice reports: readiness is the pod's,
		// not the address family's.
		c.ep.State = bestState[name]
		key := netip.AddrPortFrom(netip.MustParseAddr(c.ep.Addr), uint16(c.ep.Port)).String()
		if old, ok := byAddr[key]; ok && !betterSameAddr(c, old) {
			continue
		}
		byAddr[key] = c
	}
	eps := make([]dcm.Endpoint, 0, len(byAddr))
	for _, c := range byAddr {
		eps = append(eps, c.ep)
	}
	slices.SortFunc(eps, func(a, b dcm.Endpoint) int { return strings.Compare(a.Name, b.Name) })
	return eps
}

// betterSameAddr decides between two names for one address:port: the better
// state, then the one that knows its pod, then the smaller name.
func betterSameAddr(a, b candidate) bool {
	if ra, rb := stateRank(a.ep.State), stateRank(b.ep.State); ra != rb {
		return ra > rb
	}
	if (a.ep.Pod != "") != (b.ep.Pod != "") {
		return a.ep.Pod != ""
	}
	return a.ep.Name < b.ep.Name
}

// slicePort finds the slice port carrying the Service port name; the
// EndpointSlice controller has already resolved the target port (numeric or
// named) to the container's number.
func slicePort(slice *discoveryv1.EndpointSlice, name string) (int, bool) {
	for _, p := range slice.Ports {
		if deref(p.Name) == name && p.Port != nil {
			return int(*p.Port), true
		}
	}
	return 0, false
}

var (
	// Deployment pods: <deployment>-<pod-template-hash>-<random suffix>.
	deploymentPod = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*)-[a-z0-9]{6,10}-[a-z0-9]{5}$`)
	// StatefulSet pods: <statefulset>-<ordinal>.
	statefulSetPod = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*)-(?:0|[1-9][0-9]*)$`)
)

// ParseWorkload reads "Deployment/web" or "StatefulSet/db" (kind
// case-insensitive) into a WorkloadRef with the canonical kind.
func ParseWorkload(field, s string) (*dcm.WorkloadRef, error) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok {
		return nil, &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: field, Value: s}
	}
	k, err := canonicalKind(kind)
	if err != nil {
		return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: field, Value: s}
	}
	if err := dcm.ValidateDNSSubdomain(field, name); err != nil {
		return nil, invalidAt(err, field, s)
	}
	return &dcm.WorkloadRef{Kind: k, Name: name}, nil
}

func canonicalKind(kind string) (string, error) {
	switch {
	case strings.EqualFold(kind, WorkloadDeployment):
		return WorkloadDeployment, nil
	case strings.EqualFold(kind, WorkloadStatefulSet):
		return WorkloadStatefulSet, nil
	}
	return "", fmt.Errorf("unsupported workload kind %q: want Deployment or StatefulSet", kind)
}

// Workload finds the workload behind a Service for the what-if planner: the
// dcm.io/workload annotation, else the pattern of its pods' names (all
// <x>-<hash>-<suffix> → Deployment x, all <x>-<ordinal> → StatefulSet x),
// else nil. An invalid annotation is an error (and no guess is made: the
// author meant something, dcm should not pretend to know what).
func Workload(svc *corev1.Service, endpointSlices []*discoveryv1.EndpointSlice) (*dcm.WorkloadRef, error) {
	if svc != nil {
		if v, ok := svc.Annotations[AnnotationWorkload]; ok {
			return ParseWorkload("metadata.annotations["+AnnotationWorkload+"]", v)
		}
	}
	var pods []string
	for _, s := range endpointSlices {
		for _, ep := range s.Endpoints {
			if p := podName(ep); p != "" {
				pods = append(pods, p)
			}
		}
	}
	if len(pods) == 0 {
		return nil, nil
	}
	for _, w := range []struct {
		kind string
		re   *regexp.Regexp
	}{{WorkloadDeployment, deploymentPod}, {WorkloadStatefulSet, statefulSetPod}} {
		if name, ok := commonPrefix(pods, w.re); ok {
			return &dcm.WorkloadRef{Kind: w.kind, Name: name}, nil
		}
	}
	return nil, nil
}

func commonPrefix(pods []string, re *regexp.Regexp) (string, bool) {
	var name string
	for i, p := range pods {
		m := re.FindStringSubmatch(p)
		if m == nil || i > 0 && m[1] != name {
			return "", false
		}
		name = m[1]
	}
	return name, true
}
