package system

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/dcm-router/dcm/dcm"
)

// FlagSet is dcm's command line, bound to c: each flag starts at c's value
// (system.Defaults for main) and sets its field when given. docs/flags.md
// is generated from it (internal/docgen).
func (c *Config) FlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("dcm", pflag.ContinueOnError)
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "path to a kubeconfig; default: $KUBECONFIG, then in-cluster config, else the embedded demo")
	fs.BoolVar(&c.Demo, "demo", c.Demo, "run the embedded demo: an in-memory cluster whose pods are local HTTP servers")
	fs.StringVar(&c.Listen, "listen", c.Listen, "address of the portal, API and metrics")
	fs.StringVar(&c.HTTPBind, "http-bind", c.HTTPBind, "address of HAProxy's HTTP frontend")
	fs.StringVar(&c.HTTPSBind, "https-bind", c.HTTPSBind, "address of HAProxy's HTTPS frontend (TLS routes)")
	fs.IntVar(&c.HTTPSRedirectPort, "https-redirect-port", c.HTTPSRedirectPort, "port in the location of HTTP→HTTPS redirects: the one clients reach HTTPS on, e.g. 443 behind a Service that maps 443 to --https-bind (0: the port of --https-bind; 443 is left out)")
	c.gatewayFlags(fs)
	fs.StringVar(&c.HAProxyBin, "haproxy-bin", c.HAProxyBin, "HAProxy binary (2.6 or newer)")
	fs.StringVar(&c.MasterSocket, "haproxy-master-socket", c.MasterSocket, "attach to a running HAProxy master through this socket instead of starting one; it must load dcm's files: -f <work-dir>/haproxy.cfg -f <work-dir>/backends")
	fs.StringVar(&c.WorkDir, "work-dir", c.WorkDir, "directory for haproxy.cfg, map files and sockets (default: a directory under the user cache)")
	fs.Var((*modeValue)(&c.Mode), "mode", "how changes reach HAProxy: dynamic (runtime API), slots (pre-allocated slots, reload when full) or reload (reload on every change)")
	fs.IntVar(&c.Slots, "slots", c.Slots, "free server slots per backend in --mode=slots")
	fs.IntVar(&c.EventHistory, "event-history", c.EventHistory, "events kept for /events and feed clients that resume (memory grows with it until it is full)")
	fs.IntVar(&c.StickyPoolSize, "sticky-pool-size", c.StickyPoolSize, "sticky spare backends (rendered with a dynamic cookie) in --mode=dynamic with a pool, at least (a tenth of the sticky routes when that is more): new sticky routes (OpenShift Routes by default) take one instead of a reload")
	fs.IntVar(&c.PoolSize, "pool-size", c.PoolSize, "spare backends per route kind in --mode=dynamic, at least (every render gives a kind a tenth of its routes when that is more, and the reload of a kind that ran out 1,000 or as many as its routes): new routes take one instead of a reload (0: every new route reloads)")
	fs.StringSliceVar(&c.Namespaces, "namespace", c.Namespaces, "watch only these namespaces (repeatable; default all)")
	fs.StringVar(&c.IngressClass, "ingress-class", c.IngressClass, "serve only Ingresses of this class (default: all)")
	fs.BoolVar(&c.Routes, "routes", c.Routes, "also serve OpenShift Routes (route.openshift.io/v1) when the API server serves them")
	fs.StringVar(&c.RouteSubdomain, "route-subdomain", c.RouteSubdomain, "give a Route without spec.host the host <name>-<namespace>.<this> (default: such Routes are rejected)")
	fs.BoolVar(&c.AllowWildcardRoutes, "allow-wildcard-routes", c.AllowWildcardRoutes, "serve Routes with wildcardPolicy Subdomain and Ingress hosts *.<domain>: every single label under the domain, after exact hosts; a wildcard claims its domain for its namespace (default: such objects are refused)")
	fs.BoolVar(&c.AllowCrossNamespaceHosts, "allow-cross-namespace-hosts", c.AllowCrossNamespaceHosts, "let Ingresses and Routes of any namespace serve paths of one host (default: a host belongs to the namespace of its oldest Ingress or Route; the others are refused with HostAlreadyClaimed)")
	fs.StringVar(&c.RouteSelector, "route-selector", c.RouteSelector, "serve only Ingresses and Routes whose labels match this selector (e.g. shard=internal); a relabelled object joins or leaves at runtime (default: all)")
	fs.StringVar(&c.NamespaceSelector, "namespace-selector", c.NamespaceSelector, "serve only Ingresses and Routes of namespaces whose labels match this selector (e.g. router=internal); a relabelled namespace joins or leaves at runtime (default: all)")
	fs.StringVar(&c.AuthTokenFile, "auth-token-file", c.AuthTokenFile, "file holding the API bearer token (default: a random token printed at start)")
	fs.StringVar(&c.CookieSecretFile, "cookie-secret-file", c.CookieSecretFile, "file holding the secret sticky routes derive their cookie keys from; every replica must use the same (default: a built-in, public one)")
	fs.StringVar(&c.DefaultBackendCAFile, "default-backend-ca-file", c.DefaultBackendCAFile, "CA (PEM) that reencrypt routes naming none verify their pods with, e.g. /var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt (default: none, such routes are rejected)")
	fs.StringVar(&c.DefaultSSLCertificate, "default-ssl-certificate", c.DefaultSSLCertificate, "kubernetes.io/tls Secret (namespace/name) served to every host without a certificate of its own, rotated at runtime when the Secret changes (default: a self-signed certificate dcm generates)")
	fs.DurationVar(&c.TrafficInterval, "traffic-interval", c.TrafficInterval, "how often the per-route traffic metrics (dcm_route_*) and the portal's rates read HAProxy's counters, in a goroutine of their own; a scrape of /metrics never asks HAProxy (0: no traffic metrics)")
	fs.BoolVar(&c.MetricsPerServer, "metrics-per-server", c.MetricsPerServer, "add per-server traffic series (dcm_route_server_*), one set per pod of each route: their number grows with the pods")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.StringVar(&c.AccessLog, "access-log", c.AccessLog, "HAProxy's access log, a JSON line per request (per connection for passthrough routes) naming its route and pod: off, stdout, or syslog://host:port (RFC 5424 over UDP); a line HAProxy or dcm cannot keep up with is dropped and counted, no request waits for its line; read at start: a change takes a restart (docs/logs.md)")
	fs.DurationVar(&c.DemoReadinessDelay, "demo-readiness-delay", c.DemoReadinessDelay, "demo: time from pod start to ready")
	fs.DurationVar(&c.DemoPreStopDelay, "demo-prestop-delay", c.DemoPreStopDelay, "demo: time a terminating pod keeps accepting before it shuts down")
	httpFlags(fs, c)
	statusFlags(fs, c)
	fleetFlags(fs, c)
	return fs
}

// httpFlags are the flags of HAProxy's HTTP behaviour (system/http.go).
func httpFlags(fs *pflag.FlagSet, c *Config) {
	fs.IntVar(&c.MaxConnections, "max-connections", c.MaxConnections, "HAProxy's global maxconn at start (POST /api/v1/maxconn changes it while running; lowered, with a warning, to what the file-descriptor limit allows)")
	fs.StringVar(&c.ForwardedHeaders, "forwarded-headers", c.ForwardedHeaders, "X-Forwarded-* and Forwarded headers of routes that set no policy: append, replace, if-none or never (as OpenShift's router)")
	fs.StringVar(&c.ErrorPage503, "error-page-503", c.ErrorPage503, "file holding the HTML body of HAProxy's 503 answers (no route, no pod), read at start; sent with Cache-Control: no-store (default: dcm's page)")
	fs.BoolVar(&c.DisableHTTP2, "disable-http2", c.DisableHTTP2, "offer no HTTP/2 on the HTTPS frontend, not even to routes with a certificate of their own, and none to reencrypt routes' pods (as OpenShift's ROUTER_DISABLE_HTTP2); read at start: a change takes a restart")
	fs.BoolVar(&c.EnableHTTP2DefaultCert, "enable-http2-default-cert", c.EnableHTTP2DefaultCert, "offer HTTP/2 also to hosts served with the default certificate (default: only routes with a certificate no other route shares get h2, as on OpenShift); read at start: a change takes a restart")
	fs.StringVar(&c.ErrorPage404, "error-page-404", c.ErrorPage404, "file holding the HTML body of HAProxy's 404 answers, read at start (default: dcm's page)")
	t := &c.Timeouts
	for _, d := range []struct {
		name string
		v    *time.Duration
		doc  string
	}{
		{"connect", &t.Connect, "to connect to a pod"}, {"client", &t.Client, "of client inactivity"},
		{"server", &t.Server, "of server inactivity (a route's timeout annotation overrides it)"},
		{"client-fin", &t.ClientFin, "of a half-closed client connection"}, {"server-fin", &t.ServerFin, "of a half-closed server connection"},
		{"http-request", &t.HTTPRequest, "to receive a request's headers"}, {"http-keep-alive", &t.HTTPKeepAlive, "between two requests of a connection"},
		{"tunnel", &t.Tunnel, "of an idle WebSocket or other tunnel (a route's timeout-tunnel annotation overrides it)"},
	} {
		fs.DurationVar(d.v, "timeout-"+d.name, *d.v, "HAProxy's timeout "+d.doc)
	}
}

// statusFlags are the flags of status writes (system/status.go).
func statusFlags(fs *pflag.FlagSet, c *Config) {
	fs.StringVar(&c.RouterName, "router-name", c.RouterName, "routerName of dcm's entry in a Route's status.ingress, as OpenShift's router's ROUTER_SERVICE_NAME: routers of other names (other shards) keep their own entries; replicas of one router share the name and its Lease")
	fs.StringVar(&c.RouterCanonicalHostname, "router-canonical-hostname", c.RouterCanonicalHostname, "routerCanonicalHostname of dcm's entry in a Route's status.ingress: the host name clients' DNS should point the Route's host at (default: none written)")
	fs.StringVar(&c.PublishService, "publish-service", c.PublishService, "Service (namespace/name) in front of dcm whose load-balancer addresses, else ClusterIP, Ingresses' status.loadBalancer.ingress shows, as ingress-nginx's flag (default: none)")
	fs.StringSliceVar(&c.PublishAddresses, "publish-address", c.PublishAddresses, "addresses (IP or host name, comma-separated) Ingresses' status.loadBalancer.ingress shows when no --publish-service is given (default: none; with neither, Ingress status is not written)")
	fs.BoolVar(&c.LeaderElect, "leader-elect", c.LeaderElect, "replicas elect the one that writes Route and Ingress status with a coordination.k8s.io Lease; every replica serves (false: this replica writes status, fit for one replica only)")
	fs.StringVar(&c.LeaderElectionNamespace, "leader-election-namespace", c.LeaderElectionNamespace, "namespace of the Lease (default: the pod's, from $POD_NAMESPACE or the ServiceAccount, else dcm-system)")
	fs.StringVar(&c.LeaderElectionLease, "leader-election-lease", c.LeaderElectionLease, "name of the Lease (default: dcm-status-<router-name>)")
	fs.DurationVar(&c.LeaseDuration, "leader-election-lease-duration", c.LeaseDuration, "how long a leader's Lease holds without renewal: the longest a failed leader's status writes wait for a successor")
	fs.DurationVar(&c.RenewDeadline, "leader-election-renew-deadline", c.RenewDeadline, "how long the leader tries to renew before it stops writing status (less than the lease duration)")
	fs.DurationVar(&c.LeaderElectRetryPeriod, "leader-election-retry-period", c.LeaderElectRetryPeriod, "how often replicas try to take or renew the Lease")
}

// modeValue is --mode: any word is taken, Validate says which are modes.
type modeValue dcm.Mode

func (m *modeValue) String() string     { return string(*m) }
func (m *modeValue) Set(s string) error { *m = modeValue(s); return nil }
func (m *modeValue) Type() string       { return "string" }
