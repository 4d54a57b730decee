// Package dcm holds dcm's domain model: routes, backends, servers, plans,
// events and snapshots. It imports only the standard library because the
// planner built on it is compiled to WebAssembly and runs in the browser, and
// its JSON shapes are shared by the HTTP API, the feed and the browser.
// It keeps types and their small accessors; the rules that turn routes
// into HAProxy's routing maps and name the pool's spares are dcm/routing's,
// the planner's rules dcm/plan's.
//
// The code the browser runs (dcm, dcm/routing, dcm/plan) sorts structs with
// sort.Slice: slices.SortFunc compiles a copy of pdqsort for each struct
// shape, about 12 KB each, and the wasm must stay under 1 MiB gzip.
package dcm

import "strings"

// RouteKind says how traffic for a route is terminated.
type RouteKind string

const (
	KindHTTP        RouteKind = "http"
	KindEdge        RouteKind = "edge"
	KindPassthrough RouteKind = "passthrough"
	KindReencrypt   RouteKind = "reencrypt"
)

// RouteSource names the Kubernetes object a route came from.
type RouteSource string

const (
	SourceIngress RouteSource = "ingress"
	SourceRoute   RouteSource = "route"
)

// PathType follows networking.k8s.io/v1 Ingress: Prefix matches whole path
// elements (/api matches /api and /api/x, not /apix), Exact the path itself.
type PathType string

const (
	PathPrefix PathType = "Prefix"
	PathExact  PathType = "Exact"
)

// Balance algorithms that HAProxy 2.6 accepts together with dynamic servers.
const (
	BalanceRoundRobin = "roundrobin"
	BalanceLeastConn  = "leastconn"
	BalanceRandom     = "random"
	BalanceFirst      = "first"
	// BalanceSource hashes the client's address: with hash-type
	// consistent, which dynamic servers need (route_balance.go).
	BalanceSource = "source"
)

// ServiceRef is one Kubernetes Service a route sends traffic to.
type ServiceRef struct {
	Name string `json:"name"`
	// Port is the service port as the route names it: a port name or a number.
	Port string `json:"port"`
	// Weight is the relative share of this service within its route (0-256).
	Weight int `json:"weight"`
	// Namespace is the Service's namespace when it is not the route's: a
	// Gateway API backendRef that a ReferenceGrant allows.
	Namespace string `json:"namespace,omitempty"`
}

// WorkloadRef is the scalable workload behind a route's service, when known.
type WorkloadRef struct {
	Kind string `json:"kind"` // Deployment or StatefulSet
	Name string `json:"name"`
}

// Route is one host/path served by HAProxy, bound to one backend.
type Route struct {
	Namespace string       `json:"namespace"`
	Name      string       `json:"name"`
	Source    RouteSource  `json:"source"`
	Object    string       `json:"object"` // name of the Ingress/Route object it came from
	Kind      RouteKind    `json:"kind"`
	Host      string       `json:"host"` // lower case; empty matches any host
	Path      string       `json:"path"`
	PathType  PathType     `json:"pathType"`
	Services  []ServiceRef `json:"services"`
	Workload  *WorkloadRef `json:"workload,omitempty"`
	Balance   string       `json:"balance"`
	// Check turns on HAProxy's health checks for the route's servers, on top of
	// Kubernetes readiness.
	Check bool `json:"check"`
	// MaxConn limits each of the route's servers to this many concurrent
	// connections (OpenShift's pod-concurrent-connections), the others
	// waiting in HAProxy's queue; 0 is no limit. Changed at runtime (set
	// maxconn server), so not part of SameServing.
	MaxConn int `json:"maxConn,omitempty"`
	// CheckInterMillis is the interval of the route's health checks
	// (OpenShift's haproxy.health.check.interval); 0 is the default,
	// DefaultCheckInterMillis. HAProxy fixes it when a server is added:
	// sources name servers after it (WithUpstreamNames), so a change
	// brings new servers beside the old ones.
	CheckInterMillis int64 `json:"checkInterMs,omitempty"`
	// TLS is the certificate HAProxy serves to clients of an edge or
	// reencrypt route (nil for other kinds).
	TLS *TLSRef `json:"tls,omitempty"`
	// Upstream is how HAProxy connects to the pods of a reencrypt route:
	// over TLS, verifying their certificate (nil for other kinds).
	Upstream *UpstreamTLS `json:"upstream,omitempty"`
	// Sticky keeps a client on one pod with a dynamic cookie (HAProxy's
	// cookie … dynamic): its value is a hash of the backend's key, derived
	// from a cluster-wide secret and the backend's name, and of the pod's
	// address, so every dcm replica and every reload agrees on it.
	Sticky bool `json:"sticky,omitempty"`
	// Insecure is what plain HTTP requests for a route that serves HTTPS
	// get (edge, reencrypt, passthrough); empty keeps the older meaning,
	// see InsecureEffective.
	Insecure InsecurePolicy `json:"insecure,omitempty"`
	// RedirectCode is the status of the Redirect policy's answer (301,
	// 302, 303, 307, 308); 0 means DefaultRedirectCode.
	RedirectCode int `json:"redirectCode,omitempty"`
	// Allowlist is the clients the route serves (route_access.go):
	// canonical addresses and networks, sorted; nil serves everyone. Not
	// part of SameServing: it is a file HAProxy replaces at runtime.
	Allowlist []string `json:"allowlist,omitempty"`
	// RateLimit is the route's rate limits (route_ratelimit.go); nil
	// tracks nothing. A map entry: not part of SameServing either.
	RateLimit *RateLimit `json:"rateLimit,omitempty"`
	// HTTP holds the settings HAProxy reads from setting maps (route_http.go).
	HTTP HTTPOptions `json:"http,omitzero"`
	// Headers are the route's header actions (HeaderActions): an entry of
	// the headers map, so not part of SameServing.
	Headers *HeaderActions `json:"headers,omitempty"`
	// Gateway is set for a route made from a Gateway API HTTPRoute rule
	// (SourceHTTPRoute): its listener, hostnames, matches and filters.
	Gateway *GatewayRoute `json:"gateway,omitempty"`
}

// RouteNamePrefix starts the name of a route that comes from an OpenShift
// Route: route_<name>. No Kubernetes name has a '_', so an Ingress and a
// Route with the same namespace and name never share a backend name
// (be_<kind>:<namespace>:<ingress> and be_<kind>:<namespace>:route_<route>).
const RouteNamePrefix = "route_"

// GatewayRouteNamePrefix starts the name of a route made from an HTTPRoute
// rule (gw_<name>): it never shares a name, nor a backend name, with one
// made from an Ingress or an OpenShift Route.
const GatewayRouteNamePrefix = "gw_"

// BackendName is the HAProxy backend that serves a route.
func (r Route) BackendName() string {
	return BackendName(r.Kind, r.Namespace, r.Name)
}

// BackendName builds the name of the backend for a route: be_<kind>:<namespace>:<route>.
func BackendName(kind RouteKind, namespace, route string) string {
	return "be_" + string(kind) + ":" + namespace + ":" + route
}

// Key is namespace/name.
func (r Route) Key() string { return r.Namespace + "/" + r.Name }

// SameServing reports whether two routes are served identically by HAProxy:
// equal host, path, kind, balance, checks and stickiness. Services and workload only decide
// which endpoints the backend gets, not how HAProxy is configured; the
// certificate (TLS) is served by the HTTPS frontend, not the backend, and
// changes through certificate ops; the insecure policy is an insecure
// map's entry (routing.InsecureAction) and changes through a map replace.
func (r Route) SameServing(o Route) bool {
	return r.Namespace == o.Namespace && r.Name == o.Name && r.Kind == o.Kind &&
		r.Host == o.Host && r.Path == o.Path && r.PathType == o.PathType &&
		r.Balance == o.Balance && r.Check == o.Check && r.Sticky == o.Sticky
}

// HostPath is how routes read in logs and pages.
func (r Route) HostPath() string {
	host := r.Host
	if host == "" {
		host = "*"
	}
	return host + r.Path
}

// Less orders routes the way HAProxy must try them: exact host before any
// host, then longer (more specific) paths first, then by name for determinism.
func (r Route) Less(o Route) bool {
	if (r.Host == "") != (o.Host == "") {
		return r.Host != ""
	}
	if r.Host != o.Host {
		return r.Host < o.Host
	}
	if len(r.Path) != len(o.Path) {
		return len(r.Path) > len(o.Path)
	}
	if r.Path != o.Path {
		return r.Path < o.Path
	}
	if r.PathType != o.PathType {
		return r.PathType == PathExact
	}
	return r.Key() < o.Key()
}

// trimTrailingSlash keeps "/" but drops the slash that ends a longer prefix,
// because /api/ and /api match the same requests under Prefix semantics.
func trimTrailingSlash(p string) string {
	if len(p) > 1 {
		return strings.TrimRight(p, "/")
	}
	return p
}

// NormalizePath returns the path as routes store it.
func NormalizePath(p string, t PathType) string {
	if p == "" {
		return "/"
	}
	if t == PathPrefix {
		if t := trimTrailingSlash(p); t != "" {
			return t
		}
		return "/"
	}
	return p
}
