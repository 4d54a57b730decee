// Package system assembles the running dcm from a Config: the Kubernetes
// client (or the embedded demo cluster), the HAProxy driver, the engine,
// the Kubernetes source and the portal. It is the one place that wires
// them: main fills a Config from its flags and calls it, and so does the
// e2e harness, so that end-to-end tests run what ships.
package system

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/accesslog"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/kube"
)

// Config is everything dcm runs with. main fills it from flags, each
// flag's default the field's value in Defaults; the e2e harness starts
// from Defaults too and changes only what a test names.
type Config struct {
	// Where Kubernetes is: a kubeconfig (--kubeconfig; else $KUBECONFIG,
	// then the in-cluster config, else the demo), or the demo (--demo).
	Kubeconfig string
	Demo       bool

	// What dcm serves.
	Namespaces     []string // --namespace; empty: all
	IngressClass   string   // --ingress-class; "": every Ingress
	Routes         bool     // --routes: OpenShift Routes too, when served
	RouteSubdomain string   // --route-subdomain
	// DefaultBackendCAFile is --default-backend-ca-file, read once at start.
	DefaultBackendCAFile string
	// DefaultSSLCertificate is --default-ssl-certificate: the
	// kubernetes.io/tls Secret (namespace/name) served to hosts without a
	// certificate of their own; "": a self-signed one.
	DefaultSSLCertificate string
	// AllowCrossNamespaceHosts is --allow-cross-namespace-hosts: objects of
	// any namespace may serve paths of one host (default: the host belongs
	// to the namespace of its oldest object, as in OpenShift).
	AllowCrossNamespaceHosts bool
	// AllowWildcardRoutes is --allow-wildcard-routes: Route wildcardPolicy
	// Subdomain and Ingress hosts *.<domain> are served.
	AllowWildcardRoutes bool
	// RouteSelector and NamespaceSelector are --route-selector and
	// --namespace-selector: label selectors (labels.Parse syntax) of the
	// Ingresses and Routes dcm serves and of their namespaces; "": all.
	RouteSelector, NamespaceSelector string

	// Status (system/status.go).
	// RouterName is --router-name: the routerName of dcm's entry in a
	// Route's status.ingress; RouterCanonicalHostname is
	// --router-canonical-hostname, its routerCanonicalHostname.
	RouterName, RouterCanonicalHostname string
	// PublishService (namespace/name) and PublishAddresses are
	// --publish-service and --publish-address: what an Ingress's
	// status.loadBalancer.ingress says; neither: no Ingress status.
	PublishService   string
	PublishAddresses []string
	// LeaderElect is --leader-elect: replicas elect the one that writes
	// status with a Lease (LeaderElectionLease, "": kube.LeaseName of
	// RouterName) in LeaderElectionNamespace ("": the pod's, else
	// dcm-system), held for LeaseDuration, renewed within RenewDeadline,
	// tried every RetryPeriod (--leader-election-*).
	LeaderElect                                          bool
	LeaderElectionNamespace, LeaderElectionLease         string
	LeaseDuration, RenewDeadline, LeaderElectRetryPeriod time.Duration

	// Gateway API (system/gateway.go): GatewayControllerName is
	// --gateway-controller-name, the GatewayClasses dcm serves;
	// GatewayAddresses (IPs and CIDRs), GatewayHTTPPorts and
	// GatewayHTTPSPorts are what HAProxy pre-binds for Gateways
	// (--gateway-addresses, --gateway-http-ports, --gateway-https-ports);
	// no address: dcm serves no Gateway.
	GatewayControllerName               string
	GatewayAddresses                    []string
	GatewayHTTPPorts, GatewayHTTPSPorts []int
	GatewayPoolSize                     int // --gateway-pool-size, with a pool and Gateway addresses
	GatewayAddressSpares                int // --gateway-address-spares: 0 binds every Gateway address

	// HAProxy.
	HAProxyBin   string // --haproxy-bin
	MasterSocket string // --haproxy-master-socket
	// WorkDir is --work-dir; "": a directory under the user cache.
	WorkDir   string
	HTTPBind  string // --http-bind
	HTTPSBind string // --https-bind
	// HTTPSRedirectPort is --https-redirect-port; 0: HTTPSBind's port.
	HTTPSRedirectPort int
	// CookieSecretFile is --cookie-secret-file; "": DefaultCookieSecret.
	CookieSecretFile string
	Mode             dcm.Mode // --mode
	Slots            int      // --slots, in slots mode
	PoolSize         int      // --pool-size, in dynamic mode
	StickyPoolSize   int      // --sticky-pool-size, with a pool
	// HTTP behaviour (system/http.go): --max-connections,
	// --forwarded-headers, --error-page-503/404 (HTML files), --timeout-*.
	MaxConnections             int
	ForwardedHeaders           string
	ErrorPage503, ErrorPage404 string
	Timeouts                   haproxy.Timeouts
	// DisableHTTP2 and EnableHTTP2DefaultCert are --disable-http2 and
	// --enable-http2-default-cert (haproxy.HTTP2), read at start.
	DisableHTTP2, EnableHTTP2DefaultCert bool

	// The portal.
	Listen        string // --listen
	AuthTokenFile string // --auth-token-file
	EventHistory  int    // --event-history
	// Peers and PeerService find the other replicas for the fleet view
	// (system/fleet.go).
	Peers       []string // --peers
	PeerService string   // --peer-service
	// TrafficInterval is --traffic-interval: how often the per-route
	// traffic series read HAProxy's counters (0 turns them off).
	TrafficInterval  time.Duration
	MetricsPerServer bool   // --metrics-per-server
	LogLevel         string // --log-level
	// AccessLog is --access-log: off, stdout or syslog://host:port
	// (accesslog.ParseTarget); read at start.
	AccessLog string

	// The demo's pods.
	DemoReadinessDelay time.Duration // --demo-readiness-delay
	DemoPreStopDelay   time.Duration // --demo-prestop-delay

	// Timing that no flag sets: what dcm ships with, changed only by a test
	// that is about it.
	ObserveEvery     time.Duration // one pass reading all of HAProxy's state back
	IdlePollEvery    time.Duration // reading back servers waiting to be deleted
	RetryReloadAfter time.Duration // the first retry of a failed reload
	AdminReadTimeout time.Duration // each admin socket read
	ReloadTimeout    time.Duration // the wait for a reloaded worker
	// RoutesRecheck is the first wait before asking again whether the
	// Routes API is served; it doubles up to RoutesMaxRecheck.
	RoutesRecheck, RoutesMaxRecheck time.Duration
}

// DefaultCookieSecret keeps sticky cookies equal across replicas and
// restarts when no --cookie-secret-file is given. It is public, so anyone
// can compute which cookie names which pod address; a private one hides it.
const DefaultCookieSecret = "dcm-default-cookie-secret"

// Defaults is the configuration dcm runs with when no flag is given.
func Defaults() Config {
	return Config{
		Routes:                 true,
		RouterName:             kube.DefaultRouterName,
		LeaderElect:            true,
		LeaseDuration:          15 * time.Second,
		RenewDeadline:          10 * time.Second,
		LeaderElectRetryPeriod: 2 * time.Second,
		HAProxyBin:             "haproxy",
		HTTPBind:               "127.0.0.1:8000",
		HTTPSBind:              "127.0.0.1:8443",
		GatewayControllerName:  DefaultGatewayControllerName,
		GatewayHTTPPorts:       []int{80},
		GatewayPoolSize:        DefaultGatewayPoolSize,
		GatewayHTTPSPorts:      []int{443},
		Mode:                   dcm.ModeDynamic,
		Slots:                  8,
		PoolSize:               10,
		StickyPoolSize:         10,
		MaxConnections:         DefaultMaxConnections,
		ForwardedHeaders:       string(dcm.ForwardAppend),
		Timeouts:               haproxy.DefaultTimeouts,
		Listen:                 "127.0.0.1:8080",
		EventHistory:           10000,
		TrafficInterval:        15 * time.Second,
		LogLevel:               "info",
		AccessLog:              "off",
		DemoReadinessDelay:     500 * time.Millisecond,
		DemoPreStopDelay:       time.Second,
		ObserveEvery:           10 * time.Second,
		IdlePollEvery:          200 * time.Millisecond,
		RetryReloadAfter:       time.Second,
		AdminReadTimeout:       haproxy.DefaultReadTimeout,
		ReloadTimeout:          30 * time.Second,
		RoutesRecheck:          10 * time.Second,
		RoutesMaxRecheck:       5 * time.Minute,
	}
}

// Validate says what is wrong with c, naming the flag.
func (c Config) Validate() error {
	if c.DefaultSSLCertificate != "" {
		if err := validateSecretFlag("--default-ssl-certificate", c.DefaultSSLCertificate); err != nil {
			return err
		}
		if c.HTTPSBind == "" {
			// No HTTPS frontend would serve it.
			return fmt.Errorf("--default-ssl-certificate needs --https-bind")
		}
	}
	if c.RouteSubdomain != "" {
		if err := dcm.ValidateHost("--route-subdomain", c.RouteSubdomain); err != nil {
			return err
		}
	}
	if _, err := kube.ParseSelector("--route-selector", c.RouteSelector); err != nil {
		return err
	}
	if _, err := kube.ParseSelector("--namespace-selector", c.NamespaceSelector); err != nil {
		return err
	}
	if _, err := accesslog.ParseTarget(c.AccessLog); err != nil {
		return err
	}
	if _, err := dcm.ParseMode(string(c.Mode)); err != nil {
		return err
	}
	switch {
	case c.HTTPSRedirectPort < 0 || c.HTTPSRedirectPort > 65535:
		return fmt.Errorf("--https-redirect-port %d: want 0 to 65535", c.HTTPSRedirectPort)
	case c.Mode == dcm.ModeSlots && c.Slots < 1:
		return errors.New("--slots must be at least 1 in --mode=slots")
	case c.PoolSize < 0 || c.PoolSize > 10000:
		return errors.New("--pool-size must be between 0 and 10000")
	case c.GatewayPoolSize < 0 || c.GatewayPoolSize > 10000:
		return errors.New("--gateway-pool-size must be between 0 and 10000")
	case c.GatewayAddressSpares < 0 || c.GatewayAddressSpares > maxGatewayAddresses:
		return fmt.Errorf("--gateway-address-spares must be between 0 and %d", maxGatewayAddresses)
	case c.StickyPoolSize < 0 || c.StickyPoolSize > 10000:
		return errors.New("--sticky-pool-size must be between 0 and 10000")
	case c.EventHistory < 1 || c.EventHistory > 1000000:
		return errors.New("--event-history must be between 1 and 1000000")
	case c.TrafficInterval < 0 || c.TrafficInterval > 0 && c.TrafficInterval < 100*time.Millisecond:
		return errors.New("--traffic-interval must be 0 (off) or at least 100ms")
	}
	if err := c.validateHTTP(); err != nil {
		return err
	}
	if err := c.validateStatus(); err != nil {
		return err
	}
	if _, err := c.GatewayBinds(); err != nil {
		return err
	}
	if err := c.validateFleet(); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"ObserveEvery", c.ObserveEvery}, {"IdlePollEvery", c.IdlePollEvery}, {"RetryReloadAfter", c.RetryReloadAfter},
		{"AdminReadTimeout", c.AdminReadTimeout}, {"ReloadTimeout", c.ReloadTimeout},
		{"RoutesRecheck", c.RoutesRecheck}, {"RoutesMaxRecheck", c.RoutesMaxRecheck}} {
		if d.d <= 0 {
			return fmt.Errorf("%s %s: want a positive duration", d.name, d.d)
		}
	}
	return nil
}

// caps is what this HAProxy and the configured mode allow.
func (c Config) caps(v haproxy.Version) dcm.Caps {
	caps := haproxy.CapsFor(v, c.Mode, c.Slots, c.PoolSize)
	if caps.Pool > 0 {
		caps.StickyPool = c.StickyPoolSize
		if len(c.GatewayAddresses) > 0 {
			caps.GatewayPool = c.GatewayPoolSize
		}
	}
	// Validate has checked the flags: an error leaves no Gateway bound.
	caps.Gateway, _ = c.GatewayBinds()
	return caps
}

// RedirectPort is the port HTTP→HTTPS redirects name: the flag's, else
// HTTPSBind's, so a redirect from the demo or a bare-metal HAProxy lands
// where HTTPS is served.
func (c Config) RedirectPort() int {
	if c.HTTPSRedirectPort != 0 || c.HTTPSBind == "" {
		return c.HTTPSRedirectPort
	}
	_, port, err := net.SplitHostPort(c.HTTPSBind)
	if err != nil {
		return 0 // the renderer reports the bad bind
	}
	n, _ := strconv.Atoi(port)
	return n
}
