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
	AnnotationAllowlist         = "dcm.io/allowlist-source-range"
	AnnotationRateLimit         = "dcm.io/rate-limit-connections"
	AnnotationRateConcurrent    = "dcm.io/rate-limit-connections.concurrent-tcp"
	AnnotationRateTCP           = "dcm.io/rate-limit-connections.rate-tcp"
	AnnotationRateHTTP          = "dcm.io/rate-limit-connections.rate-http"
	// HTTP options (dcm.HTTPOptions), Ingress's names for OpenShift's.
	AnnotationForwardedHeaders = "dcm.io/forwarded-headers"
	AnnotationTimeout          = "dcm.io/timeout"
	AnnotationTimeoutTunnel    = "dcm.io/timeout-tunnel"
	AnnotationHSTS             = "dcm.io/hsts"
	AnnotationRewriteTarget    = "dcm.io/rewrite-target"

	// Annotations of OpenShift's router that dcm reads on a Route.
	AnnotationRouteBalance        = "haproxy.router.openshift.io/balance"
	AnnotationRouteDisableCookies = "haproxy.router.openshift.io/disable_cookies"
	AnnotationRouteIPWhitelist    = "haproxy.router.openshift.io/ip_whitelist"
	AnnotationRouteIPAllowlist    = "haproxy.router.openshift.io/ip_allowlist"
	AnnotationRouteRateLimit      = "haproxy.router.openshift.io/rate-limit-connections"
	AnnotationRouteRateConcurrent = "haproxy.router.openshift.io/rate-limit-connections.concurrent-tcp"
	AnnotationRouteRateTCP        = "haproxy.router.openshift.io/rate-limit-connections.rate-tcp"
	AnnotationRouteRateHTTP       = "haproxy.router.openshift.io/rate-limit-connections.rate-http"
	AnnotationRouteForwarded      = "haproxy.router.openshift.io/set-forwarded-headers"
	AnnotationRouteTimeout        = "haproxy.router.openshift.io/timeout"
	AnnotationRouteTimeoutTunnel  = "haproxy.router.openshift.io/timeout-tunnel"
	AnnotationRouteHSTS           = "haproxy.router.openshift.io/hsts_header"

	// Annotations route-controller-manager reads on an Ingress, which dcm
	// honours as it does (ingresstermination.go).
	AnnotationIngressTermination   = "route.openshift.io/termination"
	AnnotationIngressDestinationCA = "route.openshift.io/destination-ca-certificate-secret"
	AnnotationRouteRewriteTarget   = "haproxy.router.openshift.io/rewrite-target"
	AnnotationRouteMaxConn         = "haproxy.router.openshift.io/pod-concurrent-connections"
	AnnotationRouteCheckInterval   = "router.openshift.io/haproxy.health.check.interval"
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
	// ValueTimeout is a timeout as OpenShift's router reads it
	// (dcm.ParseTimeout): a number with us, ms, s, m, h or d, else ms.
	ValueTimeout ValueType = "timeout"
	// ValueHSTS is a Strict-Transport-Security value (dcm.ParseHSTS).
	ValueHSTS ValueType = "hsts"
	// ValueRewriteTarget is a path that replaces the route's
	// (dcm.ValidateRewriteTarget).
	ValueRewriteTarget ValueType = "rewrite target"
	// ValueMaxConn is a decimal number from 0 (no limit) to
	// dcm.MaxServerConn, written as it is.
	ValueMaxConn ValueType = "connections"
	// ValueString is any string: it selects, it never reaches HAProxy.
	ValueString ValueType = "string"
	// ValueSources is IPv4 and IPv6 addresses and CIDR networks separated
	// by spaces (dcm.ParseAllowlist), as OpenShift's ip_allowlist.
	ValueSources ValueType = "addresses and networks, space-separated"
	// ValueSourceRanges is the same separated by commas or spaces, as
	// Ingress controllers write source ranges.
	ValueSourceRanges ValueType = "addresses and networks, comma- or space-separated"
	// ValueCount is a decimal number from 1 to dcm.MaxRateLimit, written
	// as it is (no sign, no leading zero).
	ValueCount ValueType = "count"
	// ValueCookieName is a cookie name as OpenShift's router takes it
	// (dcm.ValidateCookieName).
	ValueCookieName ValueType = "cookie name"
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
var annotationTable = append([]Annotation{
	{Name: AnnotationIngressClass, Kinds: ingressOnly, Type: ValueString,
		Doc: "The pre-IngressClass way to pick a controller; spec.ingressClassName wins when both are set."},
	{Name: AnnotationBalance, Kinds: ingressOnly, Type: ValueEnum, Default: "roundrobin",
		Values: []string{"roundrobin", "leastconn", "random", "first", "source"},
		Doc:    "The balance algorithm of the Ingress's routes; source (the client's address, hash-type consistent) is the default of dcm.io/ssl-passthrough routes, as in OpenShift. Passthrough routes with source and HTTP routes with roundrobin take spares; other algorithms reload when the route is added (route-added)."},
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
	{Name: AnnotationIngressTermination, Kinds: ingressOnly, Type: ValueEnum, Values: []string{"edge", "passthrough", "reencrypt"}, Example: "reencrypt",
		Doc: `How TLS of every host of the Ingress ends, as route-controller-manager translates it into a Route: "edge" and "reencrypt" serve each rule's host over TLS, with its spec.tls Secret or else the default certificate, and redirect plain HTTP (dcm.io/ssl-redirect may say otherwise); "reencrypt" as dcm.io/reencrypt does; "passthrough" as dcm.io/ssl-passthrough does, plain HTTP redirected. Default: spec.tls decides.`},
	{Name: AnnotationIngressDestinationCA, Kinds: ingressOnly, Type: ValueSecretName,
		Refused: "dcm reads a reencrypt Ingress's destination CA from the ca.crt of the kubernetes.io/tls Secret named by " + AnnotationBackendCA,
		Doc:     "The Secret whose certificate route-controller-manager copies into the Route's destinationCACertificate."},
	{Name: AnnotationWorkload, Kinds: []string{KindService}, Type: ValueWorkload, Example: "Deployment/web",
		Doc: `The workload behind a Service ("Deployment/web", "StatefulSet/db") for the what-if planner, when its pods' names cannot tell. Default: guessed from the pods' names.`},
	{Name: AnnotationRequestHeaders, Kinds: ingressOnly, Type: ValueHeaders, Example: "X-Frame-Options: DENY",
		Doc: fmt.Sprintf(headersDoc, "request before it reaches a pod", "req.hdr")},
	{Name: AnnotationResponseHeaders, Kinds: ingressOnly, Type: ValueHeaders, Example: "delete Server",
		Doc: fmt.Sprintf(headersDoc, "response before it reaches the client", "res.hdr")},
	{Name: AnnotationRouteBalance, Kinds: routeOnly, Type: ValueEnum, Default: "roundrobin",
		Values: []string{"roundrobin", "leastconn", "random", "source"},
		Doc:    `The balance algorithm; source (the client's address, hash-type consistent) is the default of passthrough Routes, as OpenShift's ROUTER_TCP_BALANCE_SCHEME. Passthrough Routes with source and other Routes with roundrobin take spares; other algorithms reload when the Route is added (route-added).`},
	{Name: AnnotationRouteDisableCookies, Kinds: routeOnly, Type: ValueBool, Default: "false",
		Doc: `"true" turns off the cookie that keeps a client on one pod (on by default, as in OpenShift; never on passthrough Routes).`},
	{Name: AnnotationRouteIPAllowlist, Kinds: routeOnly, Type: ValueSources, Example: "10.0.0.0/8 192.168.1.10 2001:db8::/32",
		Doc: "Serves only clients from these addresses and networks (at most 1000): any other client's connection is closed without an answer, as OpenShift does. Changed at runtime. An empty value serves everyone."},
	{Name: AnnotationRouteIPWhitelist, Kinds: routeOnly, Type: ValueSources, Example: "10.0.0.0/8 192.168.1.10",
		Doc: "The older name of ip_allowlist, read the same way; ip_allowlist wins when both are set."},
	{Name: AnnotationAllowlist, Kinds: ingressOnly, Type: ValueSourceRanges, Example: "10.0.0.0/8, 192.168.1.10",
		Doc: "ip_allowlist for every route of the Ingress: addresses and networks separated by commas or spaces (at most 1000); other clients' connections are closed without an answer. Changed at runtime. An empty value serves everyone."},
	{Name: AnnotationRouteRateLimit, Kinds: routeOnly, Type: ValueBool, Default: "false",
		Doc: `"true" tracks each client address in the Route's backend, as OpenShift does; the three limits below then refuse a client over them by closing its connection without an answer. Changed at runtime.`},
	{Name: AnnotationRouteRateConcurrent, Kinds: routeOnly, Type: ValueCount, Example: "100",
		Doc: "Refuses a client with this many connections open (OpenShift's sc2_conn_cur ge N); needs rate-limit-connections."},
	{Name: AnnotationRouteRateTCP, Kinds: routeOnly, Type: ValueCount, Example: "100",
		Doc: "Refuses a client that opened this many connections in 3 s; needs rate-limit-connections."},
	{Name: AnnotationRouteRateHTTP, Kinds: routeOnly, Type: ValueCount, Example: "100",
		Doc: "Refuses a client that sent this many HTTP requests in 10 s; needs rate-limit-connections."},
	{Name: AnnotationRateLimit, Kinds: ingressOnly, Type: ValueBool, Default: "false",
		Doc: `haproxy.router.openshift.io/rate-limit-connections for every route of the Ingress. Changed at runtime.`},
	{Name: AnnotationRateConcurrent, Kinds: ingressOnly, Type: ValueCount, Example: "100",
		Doc: "Refuses a client with this many connections open; needs dcm.io/rate-limit-connections."},
	{Name: AnnotationRateTCP, Kinds: ingressOnly, Type: ValueCount, Example: "100",
		Doc: "Refuses a client that opened this many connections in 3 s; needs dcm.io/rate-limit-connections."},
	{Name: AnnotationRateHTTP, Kinds: ingressOnly, Type: ValueCount, Example: "100",
		Doc: "Refuses a client that sent this many HTTP requests in 10 s; needs dcm.io/rate-limit-connections."},
}, slices.Concat(knobRows(), httpRows(), cookieRows())...)

// httpRows are the rows of the HTTP options (dcm.HTTPOptions), on
// Ingresses and Routes alike: a change is a setting map's, no reload.
func httpRows() []Annotation {
	policies := make([]string, len(dcm.ForwardedPolicies))
	for i, p := range dcm.ForwardedPolicies {
		policies[i] = string(p)
	}
	var out []Annotation
	for _, a := range []struct {
		ingress, route string
		row            Annotation
	}{
		{AnnotationForwardedHeaders, AnnotationRouteForwarded, Annotation{Type: ValueEnum, Values: policies, Example: "replace",
			Doc: "X-Forwarded-For, -Host, -Port, -Proto, -Proto-Version and Forwarded as OpenShift's router sets them: append adds the client, replace drops the client's own first, if-none sets them only when the client sent none, never leaves them (but plain HTTP never forwards a client's X-Forwarded-Proto). Default: --forwarded-headers. Refused on passthrough."}},
		{AnnotationTimeout, AnnotationRouteTimeout, Annotation{Type: ValueTimeout, Example: "2s",
			Doc: "The server timeout of the route's requests (a number with us, ms, s, m, h or d; a bare number is ms; at most 24d). Default: --timeout-server. On passthrough it is the TCP backend's timeout server, and a change reloads (passthrough-timeout): HAProxy 2.6 sets a TCP stream's timeout by no rule."}},
		{AnnotationTimeoutTunnel, AnnotationRouteTimeoutTunnel, Annotation{Type: ValueTimeout, Example: "1h",
			Doc: "The idle timeout of the route's WebSockets and other tunnels, written as the timeout. Default: --timeout-tunnel. On passthrough, as the timeout, a reload."}},
		{AnnotationHSTS, AnnotationRouteHSTS, Annotation{Type: ValueHSTS, Example: "max-age=31536000;includeSubDomains;preload",
			Doc: "The Strict-Transport-Security header of HTTPS responses (edge and reencrypt): max-age=<seconds> required, includeSubDomains and preload optional, separated by ';'. On an Ingress it applies to its spec.tls hosts; refused on a Route without TLS and on passthrough."}},
		{AnnotationRewriteTarget, AnnotationRouteRewriteTarget, Annotation{Type: ValueRewriteTarget, Example: "/",
			Doc: "Replaces the route's path in the requests it sends to the pods, as OpenShift's router does: with path /foo, target / sends /foo/bar as /bar and /foo as /, target /v2 sends /foo/bar as /v2/bar; a route without a path gets the target before the whole path. The query string is kept. It starts with '/' and has the characters of a path (no backslash, '#', quote or space: OpenShift's regex escapes are refused). Changed at runtime (a map entry read by a Lua action). Refused on passthrough."}},
	} {
		for _, k := range []struct{ name, kind string }{{a.ingress, KindIngress}, {a.route, KindRoute}} {
			row := a.row
			row.Name, row.Kinds = k.name, []string{k.kind}
			out = append(out, row)
		}
	}
	return out
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
