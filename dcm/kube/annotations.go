package kube

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/dcm-router/dcm/dcm"
)

// Annotations dcm reads. Each is declared once more, with its kinds, type,
// default and validation, in the table of Annotations(): the table, not
// this list, decides how a value is read, what a rejection says, what the
// injection corpus writes and what docs/annotations.md documents.
const (
	AnnotationIngressClass      = "kubernetes.io/ingress.class"
	AnnotationBalance           = "dcm.io/balance"
	AnnotationHealthCheck       = "dcm.io/health-check"
	AnnotationSSLPassthrough    = "dcm.io/ssl-passthrough"
	AnnotationSticky            = "dcm.io/sticky"
	AnnotationSSLRedirect       = "dcm.io/ssl-redirect"
	AnnotationSSLRedirectCode   = "dcm.io/ssl-redirect-code"
	AnnotationWeights           = "dcm.io/weights"
	AnnotationReencrypt         = "dcm.io/reencrypt"
	AnnotationBackendCA         = "dcm.io/backend-ca"
	AnnotationBackendServerName = "dcm.io/backend-server-name"
	AnnotationWorkload          = "dcm.io/workload"

	// Annotations of OpenShift's router that dcm reads on a Route.
	AnnotationRouteBalance        = "haproxy.router.openshift.io/balance"
	AnnotationRouteDisableCookies = "haproxy.router.openshift.io/disable_cookies"
	AnnotationRouteCookieName     = "router.openshift.io/cookie_name"
	AnnotationRouteIPWhitelist    = "haproxy.router.openshift.io/ip_whitelist"
	AnnotationRouteIPAllowlist    = "haproxy.router.openshift.io/ip_allowlist"
)

// ValueType is how dcm reads an annotation's value.
type ValueType string

// Value types of annotations.
const (
	// ValueBool is what strconv.ParseBool reads.
	ValueBool ValueType = "bool"
	// ValueInt is a decimal number among the row's Values, written as
	// they are (no sign, no leading zero).
	ValueInt ValueType = "int"
	// ValueEnum is one of the row's Values.
	ValueEnum ValueType = "enum"
	// ValueWeights is "service=weight,…" (ParseWeights).
	ValueWeights ValueType = "weights"
	// ValueSecretName names a Secret of the object's namespace.
	ValueSecretName ValueType = "secret name"
	// ValueHost is a DNS name, not empty, no wildcard.
	ValueHost ValueType = "host"
	// ValueWorkload is "Deployment/<name>" or "StatefulSet/<name>".
	ValueWorkload ValueType = "workload"
	// ValueString is any string: it selects, it never reaches HAProxy.
	ValueString ValueType = "string"
)

// Annotation declares one annotation dcm reads.
type Annotation struct {
	Name string
	// Kinds are the kinds of object it is read on (KindIngress, KindRoute,
	// KindService).
	Kinds []string
	Type  ValueType
	// Default is what an object without the annotation gets, written as
	// the annotation would be; "" when the absence has no value of the
	// type (Doc then says what it means).
	Default string
	// Values lists the accepted values of ValueEnum and ValueInt.
	Values []string
	// Unsupported lists values of the other router that dcm does not
	// serve: refused as unsupported rather than invalid.
	Unsupported []string
	// Refused, when set, is why dcm refuses every object that carries the
	// annotation, whatever its value: dcm does not honour it, and serving
	// the object without it would serve it otherwise than its author asked.
	Refused string
	// Example is a value dcm serves, for rows without a Default.
	Example string
	// Doc is one line for docs/annotations.md.
	Doc string
}

var (
	ingressOnly = []string{KindIngress}
	routeOnly   = []string{KindRoute}
)

// redirectCodes are dcm.RedirectCodes as the annotation writes them.
func redirectCodes() []string {
	out := make([]string, len(dcm.RedirectCodes))
	for i, c := range dcm.RedirectCodes {
		out[i] = strconv.Itoa(c)
	}
	return out
}

// annotationTable is every annotation dcm reads, in the order an object's
// annotations are checked (the first refusal wins). Never written to.
var annotationTable = []Annotation{
	{Name: AnnotationIngressClass, Kinds: ingressOnly, Type: ValueString,
		Doc: "The pre-IngressClass way to pick a controller; spec.ingressClassName wins when both are set."},
	{Name: AnnotationBalance, Kinds: ingressOnly, Type: ValueEnum, Default: "roundrobin",
		Values: []string{"roundrobin", "leastconn", "random", "first"},
		Doc:    "The balance algorithm of the Ingress's routes."},
	{Name: AnnotationHealthCheck, Kinds: ingressOnly, Type: ValueBool, Default: "true",
		Doc: `"false" turns HAProxy's health checks of the pods off.`},
	{Name: AnnotationSSLPassthrough, Kinds: ingressOnly, Type: ValueBool, Default: "false",
		Doc: `"true" passes its hosts' TLS connections to the pods undecrypted, picked by SNI: every rule then needs a host and the path "/" only, and spec.tls must be empty (the pods hold the certificates).`},
	{Name: AnnotationSticky, Kinds: ingressOnly, Type: ValueBool, Default: "false",
		Doc: `"true" keeps each client on one pod with a dynamic cookie; refused with dcm.io/ssl-passthrough.`},
	{Name: AnnotationSSLRedirect, Kinds: ingressOnly, Type: ValueBool, Default: "true",
		Doc: `What plain HTTP requests for its spec.tls hosts get: "true" redirects them to https (as haproxy-ingress, HAProxy's kubernetes-ingress and ingress-nginx do), "false" serves them as HTTPS requests are. With dcm.io/ssl-passthrough, only "true" set explicitly redirects; by default plain HTTP is left unserved.`},
	{Name: AnnotationSSLRedirectCode, Kinds: ingressOnly, Type: ValueInt, Default: "302", Values: redirectCodes(),
		Doc: "The status of those redirects (302 is OpenShift's router's)."},
	{Name: AnnotationWeights, Kinds: ingressOnly, Type: ValueWeights, Example: "web=80,web-canary=20",
		Doc: "Splits traffic between services as a Route's to and alternateBackends do: every path that routes to the first (primary) service is served by all the listed ones, on its port, each getting its weight's share (0-256) whatever its number of pods. Default: no split."},
	{Name: AnnotationReencrypt, Kinds: ingressOnly, Type: ValueBool, Default: "false",
		Doc: `"true" makes its hosts of spec.tls reencrypt routes: HAProxy ends the client's TLS with the host's Secret, then connects to the pods over TLS and verifies their certificate. Every rule then needs a host listed in spec.tls. Implied by dcm.io/backend-ca.`},
	{Name: AnnotationBackendCA, Kinds: ingressOnly, Type: ValueSecretName, Example: "web-ca",
		Doc: "A Secret of the namespace whose ca.crt signs the pods' certificates (cert-manager writes ca.crt into the Secrets it issues). Default: the file of --default-backend-ca-file."},
	{Name: AnnotationBackendServerName, Kinds: ingressOnly, Type: ValueHost, Example: "web.demo.svc",
		Doc: "The name the pods' certificates must carry, also sent as SNI; needs reencrypt. Default: <service>.<namespace>.svc, the name of a service-serving certificate."},
	{Name: AnnotationWorkload, Kinds: []string{KindService}, Type: ValueWorkload, Example: "Deployment/web",
		Doc: `The workload behind a Service ("Deployment/web", "StatefulSet/db") for the what-if planner, when its pods' names cannot tell. Default: guessed from the pods' names.`},
	{Name: AnnotationRequestHeaders, Kinds: ingressOnly, Type: ValueHeaders, Example: "X-Frame-Options: DENY",
		Doc: fmt.Sprintf(headersDoc, "request before it reaches a pod", "req.hdr")},
	{Name: AnnotationResponseHeaders, Kinds: ingressOnly, Type: ValueHeaders, Example: "delete Server",
		Doc: fmt.Sprintf(headersDoc, "response before it reaches the client", "res.hdr")},
	{Name: AnnotationRouteBalance, Kinds: routeOnly, Type: ValueEnum, Default: "roundrobin",
		Values: []string{"roundrobin", "leastconn", "random"}, Unsupported: []string{"source"},
		Doc: `The balance algorithm; "source" is refused as unsupported: dcm does not serve it.`},
	{Name: AnnotationRouteDisableCookies, Kinds: routeOnly, Type: ValueBool, Default: "false",
		Doc: `"true" turns off the cookie that keeps a client on one pod (on by default, as in OpenShift; never on passthrough Routes).`},
	{Name: AnnotationRouteCookieName, Kinds: routeOnly, Type: ValueString,
		Refused: "dcm's cookie name is its own",
		Doc:     "Names the sticky cookie in OpenShift."},
	{Name: AnnotationRouteIPWhitelist, Kinds: routeOnly, Type: ValueString,
		Refused: "dcm cannot restrict clients by address, and serving the Route to everyone would open what its author closed",
		Doc:     "Restricts clients by address in OpenShift (the older name of ip_allowlist)."},
	{Name: AnnotationRouteIPAllowlist, Kinds: routeOnly, Type: ValueString,
		Refused: "dcm cannot restrict clients by address, and serving the Route to everyone would open what its author closed",
		Doc:     "Restricts clients by address in OpenShift."},
}

// Annotations is the table of every annotation dcm reads: a copy, in the
// order they are checked.
func Annotations() []Annotation {
	return slices.Clone(annotationTable)
}

// AnnotationsOf lists the annotations read on objects of kind.
func AnnotationsOf(kind string) []Annotation {
	var out []Annotation
	for _, a := range annotationTable {
		if slices.Contains(a.Kinds, kind) {
			out = append(out, a)
		}
	}
	return out
}

// annotationRow is the declaration of name. Every name dcm reads is a
// constant above with its row; a missing row is a bug that any conversion
// reading it shows at once.
func annotationRow(name string) Annotation {
	for _, a := range annotationTable {
		if a.Name == name {
			return a
		}
	}
	panic("kube: annotation " + strconv.Quote(name) + " has no row in the annotation table")
}
