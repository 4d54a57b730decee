package dcm

import "slices"

// SourceHTTPRoute marks a route made from one rule of a Gateway API
// HTTPRoute attached to one Gateway listener (Route.Gateway).
const SourceHTTPRoute RouteSource = "httproute"

// SourceTLSRoute marks a route made from a Gateway API TLSRoute attached
// to one TLS Passthrough listener: Kind passthrough, found by the SNI of
// the ClientHello among Gateway.Hostnames, no Matches.
const SourceTLSRoute RouteSource = "tlsroute"

// GatewayBinds are the addresses and ports HAProxy binds for Gateways
// before any Gateway exists, so that a new Gateway, listener or route is
// served without a reload: each Gateway gets one address of the pool, and
// its HTTP and HTTPS listeners are served on the pre-bound ports of that
// address. Empty Addresses: dcm serves no Gateway.
type GatewayBinds struct {
	Addresses  []string `json:"addresses,omitempty"` // IP addresses, canonical text
	HTTPPorts  []int    `json:"httpPorts,omitempty"`
	HTTPSPorts []int    `json:"httpsPorts,omitempty"`
	// Spares, above 0, binds on those ports only the addresses Gateway
	// routes are on and this many free ones (the lowest of Addresses),
	// not every address: a route on an address not bound reloads
	// (ReasonGatewayAddressPool), and the reload binds Spares free ones
	// again (State.GatewayBinds).
	Spares int `json:"spares,omitempty"`
}

// GatewayRoute is how HAProxy finds a route made from an HTTPRoute rule:
// on one listener, for some hostnames, by the rule's matches — the
// Gateway API's request matching, which host and path maps cannot express
// (header, query and method matches, precedence across routes) — and what
// the rule's filters do to the request and the response.
//
// Such a route has Kind http (an HTTP listener) or edge (an HTTPS
// listener, Route.TLS is the listener's certificate), empty Host and Path
// (its hosts and paths are here), and its Services may name other
// namespaces (ServiceRef.Namespace, allowed by a ReferenceGrant).
type GatewayRoute struct {
	// Gateway is the Gateway's namespace/name, Listener its listener's name.
	Gateway  string `json:"gateway"`
	Listener string `json:"listener"`
	// Bind is the address:port HAProxy serves the listener on (one of
	// GatewayBinds).
	Bind string `json:"bind"`
	// ListenerHostname is the listener's own hostname, lower case ("":
	// none, "*.x" a wildcard): the SNI names its certificate is served
	// for on Bind, whatever hosts its routes answer ("" makes it the
	// bind's default certificate).
	ListenerHostname string `json:"listenerHostname,omitempty"`
	// Hostnames are the hosts the rule answers on this listener: the
	// intersection of the HTTPRoute's and the listener's hostnames, lower
	// case; "*.example.com" is a wildcard; empty answers any host.
	Hostnames []string `json:"hostnames,omitempty"`
	// Matches are the rule's matches, at least one (the spec's default is
	// PathPrefix "/"); a request is the rule's if any match matches.
	Matches []HTTPMatch `json:"matches"`
	// Filters are the rule's filters.
	Filters *HTTPFilters `json:"filters,omitempty"`
	// Rank breaks the ties that the spec's match precedence leaves: the
	// oldest HTTPRoute first, then by namespace/name, then the rule's index
	// within its route. Text that orders as it compares (fixed-width
	// timestamp and index).
	Rank string `json:"rank"`
	// Unresolved: none of the rule's backendRefs resolves (missing
	// Service, unknown kind, cross-namespace without a ReferenceGrant);
	// its requests get 500, as the spec requires.
	Unresolved bool `json:"unresolved,omitempty"`
}

// Gateway API path match types.
const (
	GatewayPathExact  = "Exact"
	GatewayPathPrefix = "PathPrefix"
	GatewayPathRegex  = "RegularExpression"
)

// HTTPMatch is one HTTPRouteMatch: every given condition must hold.
type HTTPMatch struct {
	PathType string       `json:"pathType"` // GatewayPathExact, GatewayPathPrefix or GatewayPathRegex
	Path     string       `json:"path"`
	Method   string       `json:"method,omitempty"`
	Headers  []ValueMatch `json:"headers,omitempty"`
	Query    []ValueMatch `json:"query,omitempty"`
}

// ValueMatch matches one header (name case-insensitive) or query
// parameter (name exact) by its exact value or a regular expression.
type ValueMatch struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Regex bool   `json:"regex,omitempty"`
}

// HTTPFilters are an HTTPRoute rule's filters.
type HTTPFilters struct {
	RequestHeaders  *HeaderMods   `json:"requestHeaders,omitempty"`
	ResponseHeaders *HeaderMods   `json:"responseHeaders,omitempty"`
	Redirect        *HTTPRedirect `json:"redirect,omitempty"`
	Rewrite         *URLRewrite   `json:"rewrite,omitempty"`
}

// HeaderMods are a RequestHeaderModifier or ResponseHeaderModifier:
// header names as given (HTTP compares them case-insensitively), values
// literal.
type HeaderMods struct {
	Set    []HeaderValue `json:"set,omitempty"`
	Add    []HeaderValue `json:"add,omitempty"`
	Remove []string      `json:"remove,omitempty"`
}

// HeaderValue is one header name and literal value.
type HeaderValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// HTTPRedirect is a RequestRedirect filter; zero fields keep the
// request's own (scheme, host, port, path), StatusCode 0 means 302.
type HTTPRedirect struct {
	Scheme     string        `json:"scheme,omitempty"`
	Hostname   string        `json:"hostname,omitempty"`
	Port       int           `json:"port,omitempty"`
	Path       *PathModifier `json:"path,omitempty"`
	StatusCode int           `json:"statusCode,omitempty"`
}

// URLRewrite is a URLRewrite filter.
type URLRewrite struct {
	Hostname string        `json:"hostname,omitempty"`
	Path     *PathModifier `json:"path,omitempty"`
}

// Path modifier types.
const (
	ReplaceFullPath    = "ReplaceFullPath"
	ReplacePrefixMatch = "ReplacePrefixMatch"
)

// PathModifier replaces the whole path or the prefix the rule's
// PathPrefix match matched.
type PathModifier struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

func (g *GatewayRoute) equal(o *GatewayRoute) bool {
	if g == nil || o == nil {
		return g == o
	}
	return g.Gateway == o.Gateway && g.Listener == o.Listener && g.Bind == o.Bind && g.ListenerHostname == o.ListenerHostname &&
		slices.Equal(g.Hostnames, o.Hostnames) && slices.EqualFunc(g.Matches, o.Matches, HTTPMatch.equal) &&
		g.Filters.equal(o.Filters) && g.Rank == o.Rank && g.Unresolved == o.Unresolved
}

func (m HTTPMatch) equal(o HTTPMatch) bool {
	return m.PathType == o.PathType && m.Path == o.Path && m.Method == o.Method &&
		slices.Equal(m.Headers, o.Headers) && slices.Equal(m.Query, o.Query)
}

func (f *HTTPFilters) equal(o *HTTPFilters) bool {
	if f == nil || o == nil {
		return f == o
	}
	return f.RequestHeaders.equal(o.RequestHeaders) && f.ResponseHeaders.equal(o.ResponseHeaders) &&
		f.Redirect.equal(o.Redirect) && f.Rewrite.equal(o.Rewrite)
}

func (h *HeaderMods) equal(o *HeaderMods) bool {
	if h == nil || o == nil {
		return h == o
	}
	return slices.Equal(h.Set, o.Set) && slices.Equal(h.Add, o.Add) && slices.Equal(h.Remove, o.Remove)
}

func (r *HTTPRedirect) equal(o *HTTPRedirect) bool {
	if r == nil || o == nil {
		return r == o
	}
	return r.Scheme == o.Scheme && r.Hostname == o.Hostname && r.Port == o.Port &&
		samePointee(r.Path, o.Path) && r.StatusCode == o.StatusCode
}

func (u *URLRewrite) equal(o *URLRewrite) bool {
	if u == nil || o == nil {
		return u == o
	}
	return u.Hostname == o.Hostname && samePointee(u.Path, o.Path)
}
