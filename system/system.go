package system

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/dcm-router/dcm/dcm/accesslog"
	"github.com/dcm-router/dcm/dcm/demo"
	"github.com/dcm-router/dcm/dcm/engine"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/server"
	"github.com/dcm-router/dcm/server/fleet"
)

// Deps are what New takes from its caller besides the Config: what a
// process has (its log) and what a test or an embedder brings instead of
// the real thing. main passes only Log.
type Deps struct {
	// Log receives dcm's log; nil: text on stderr at Config.LogLevel.
	Log *slog.Logger
	// Kubernetes is the API server's client configuration; nil: found
	// from the Config (kubeconfig, in-cluster, else the demo).
	Kubernetes *rest.Config
	// Cluster is a demo cluster someone else runs: dcm watches it as a
	// second replica would. DemoApps are the workloads of a demo cluster
	// of dcm's own (nil: the demo's, with its showcase of every kind of
	// route, demo.Options.Showcase).
	Cluster  *demo.Cluster
	DemoApps []demo.App
	// Source replaces Kubernetes with a desired state of the caller's;
	// Certs and CAs then hand HAProxy its routes' PEM.
	Source engine.Source
	Certs  haproxy.CertSource
	CAs    haproxy.CASource
	// Commands also sees every admin socket command (the metrics do).
	Commands haproxy.Observer
	// AccessLog is where --access-log=stdout writes (nil: os.Stdout).
	AccessLog io.Writer
}

// System is dcm assembled: New builds it, Run runs it.
type System struct {
	cfg      Config
	log      *slog.Logger
	dir      string
	client   kubernetes.Interface // nil with Deps.Source
	cluster  *demo.Cluster        // the demo's, nil against a real cluster
	ownDemo  bool                 // the cluster is ours to run
	registry *prometheus.Registry
	driver   *haproxy.Driver
	engine   *engine.Engine
	source   engine.Source
	kube     *kube.Source // nil with Deps.Source
	// gateways reads and writes the Gateway API (nil but against a real
	// cluster).
	gateways gwclient.Interface
	events   *kube.Events // nil but against a real cluster that lets dcm write them
	// noStatus: dcm may not hold the Lease, so it writes no status.
	noStatus bool
	access   access
	portal   net.Listener
	// fleet reads the other replicas (nil without --peers or
	// --peer-service); peerSlices finds them in a Service.
	fleet      *fleet.Collector
	peerSlices *kube.PeerSlices
	// accessLog reads HAProxy's access log; nil with --access-log=off.
	accessLog *accesslog.Logger
	ready     chan struct{}
}

// New assembles dcm: it checks HAProxy and the configuration, connects to
// Kubernetes (or builds the demo cluster) and binds the portal. Nothing
// runs until Run, which releases what New opened when it ends.
func New(ctx context.Context, cfg Config, deps Deps) (*System, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := deps.Log
	if log == nil {
		var err error
		if log, err = NewLogger(cfg.LogLevel); err != nil {
			return nil, err
		}
	}
	s := &System{cfg: cfg, log: log, registry: prometheus.NewRegistry(), ready: make(chan struct{})}
	var err error
	if s.dir, err = workDir(cfg.WorkDir); err != nil {
		return nil, err
	}
	version, err := haproxy.DetectVersion(ctx, cfg.HAProxyBin)
	if err != nil {
		return nil, err
	}
	cookieSecret, err := readCookieSecret(cfg.CookieSecretFile)
	if err != nil {
		return nil, err
	}
	backendCA, err := readBackendCA(cfg.DefaultBackendCAFile)
	if err != nil {
		return nil, err
	}
	var dyn dynamic.Interface
	if deps.Source == nil {
		if dyn, err = s.connect(ctx, deps); err != nil {
			return nil, err
		}
	}

	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := engine.NewMetrics(s.registry)
	// The PEM store comes first: the driver reads from it, the source
	// (which reports to the engine, which drives the driver) writes to it.
	pems := kube.NewPEMStore()
	certs, cas := haproxy.CertSource(pems), haproxy.CASource(pems)
	if deps.Source != nil {
		certs, cas = deps.Certs, deps.CAs
	}
	settings := haproxy.Settings{AdminSocket: filepath.Join(s.dir, "admin.sock"), HTTPBind: cfg.HTTPBind, HTTPSBind: cfg.HTTPSBind,
		HTTPSRedirectPort: cfg.RedirectPort(), CookieSecret: cookieSecret, LogSocket: logSocket(cfg, s.dir)}
	if err := httpSettings(cfg, &settings, log); err != nil {
		return nil, err
	}
	if settings.Gateway, err = cfg.GatewayBinds(); err != nil {
		return nil, err
	}
	s.driver = haproxy.NewDriver(haproxy.DriverConfig{
		Binary:        cfg.HAProxyBin,
		WorkDir:       s.dir,
		MasterSocket:  cfg.MasterSocket,
		Settings:      settings,
		Observer:      observers(metrics.ObserveCommand, deps.Commands),
		Certs:         certs,
		CAs:           cas,
		ReadTimeout:   cfg.AdminReadTimeout,
		ReloadTimeout: cfg.ReloadTimeout,
	}, log.With("part", "haproxy"))
	s.engine = engine.New(engine.Config{Caps: cfg.caps(version), EventBuffer: cfg.EventHistory,
		ObserveEvery: cfg.ObserveEvery, IdlePollEvery: cfg.IdlePollEvery, RetryReloadAfter: cfg.RetryReloadAfter,
		TrafficEvery: trafficEvery(cfg.TrafficInterval), TrafficPerServer: cfg.MetricsPerServer},
		s.driver, metrics, log.With("part", "engine"))
	s.source = deps.Source
	if s.source == nil {
		if s.kube, err = s.kubeSource(dyn, backendCA, pems); err != nil {
			return nil, err
		}
		s.source = s.kube
	}

	if s.access, err = portalAccess(cfg.AuthTokenFile, s.client, s.cluster != nil && deps.Source == nil); err != nil {
		return nil, err
	}
	if s.portal, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	if err := s.listenAccessLog(settings.LogSocket, deps); err != nil {
		s.portal.Close()
		return nil, err
	}
	if err := s.wireFleet(); err != nil {
		s.portal.Close()
		return nil, err
	}
	return s, nil
}

// connect finds Kubernetes: the caller's, the Config's, else the demo.
func (s *System) connect(ctx context.Context, deps Deps) (dynamic.Interface, error) {
	restCfg := deps.Kubernetes
	if restCfg == nil && deps.Cluster == nil && !s.cfg.Demo {
		var err error
		if restCfg, err = clusterConfig(s.cfg.Kubeconfig); err != nil {
			return nil, err
		}
	}
	if restCfg == nil {
		if err := s.demoCluster(deps); err != nil {
			return nil, err
		}
		// The showcase's OpenShift Route is served by a dynamic client of
		// the demo's own (nil without a showcase).
		return s.cluster.Dynamic(), nil
	}
	client, dyn, err := clients(restCfg)
	if err != nil {
		return nil, err
	}
	lacking, err := kube.CheckAccess(ctx, client, s.cfg.Namespaces, s.cfg.leaseNamespace())
	if err != nil {
		return nil, err
	}
	for _, l := range lacking {
		s.log.Warn("permission missing: dcm runs without "+l.Feature, "permission", l.String())
	}
	s.noStatus = kube.Lacks(lacking, kube.FeatureLeaderElection)
	// Events only here, with a real cluster: the demo's in-memory one
	// would keep them for ever, and nobody can describe its objects.
	if !kube.Lacks(lacking, kube.FeatureEvents) {
		ec, err := eventsClient(restCfg)
		if err != nil {
			return nil, err
		}
		s.events = kube.NewEvents(ec)
	}
	s.client = client
	if s.gateways, err = gatewayClient(restCfg); err != nil {
		return nil, err
	}
	return dyn, nil
}

// demoCluster is the in-memory cluster: the caller's, or one of dcm's own.
func (s *System) demoCluster(deps Deps) error {
	if deps.Cluster != nil {
		s.cluster, s.client = deps.Cluster, deps.Cluster.Client()
		return nil
	}
	apps := deps.DemoApps
	if apps == nil {
		apps = demo.DefaultApps()
	}
	// The showcase comes with the default apps it routes to: dcm's own demo
	// (make run) shows every kind of route; a caller's apps are all it gets.
	cluster, err := demo.New(demo.Options{Apps: apps, Showcase: deps.DemoApps == nil, ReadinessDelay: s.cfg.DemoReadinessDelay, PreStopDelay: s.cfg.DemoPreStopDelay},
		s.log.With("part", "demo"))
	if err != nil {
		return fmt.Errorf("demo cluster: %w", err)
	}
	s.cluster, s.client, s.ownDemo = cluster, cluster.Client(), true
	return nil
}

// kubeSource watches what the Config says, keeping PEM in pems.
func (s *System) kubeSource(dyn dynamic.Interface, backendCA []byte, pems *kube.PEMStore) (*kube.Source, error) {
	// Validate has parsed the selectors already.
	routeSel, _ := kube.ParseSelector("--route-selector", s.cfg.RouteSelector)
	binds, err := s.cfg.GatewayBinds()
	if err != nil {
		return nil, err
	}
	nsSel, _ := kube.ParseSelector("--namespace-selector", s.cfg.NamespaceSelector)
	src := kube.NewSource(s.client, kube.Options{IngressClass: s.cfg.IngressClass, Namespaces: s.cfg.Namespaces,
		DefaultBackendCA: backendCA, PEMs: pems, AllowCrossNamespaceHosts: s.cfg.AllowCrossNamespaceHosts,
		AllowWildcardRoutes: s.cfg.AllowWildcardRoutes, DefaultCertificate: s.cfg.DefaultSSLCertificate,
		RouteSelector: routeSel, NamespaceSelector: nsSel, Events: s.events,
		RouterName: s.cfg.RouterName, RouterCanonicalHostname: s.cfg.RouterCanonicalHostname,
		GatewayControllerName: s.cfg.GatewayControllerName, GatewayBinds: binds,
		GatewayReserved: []string{s.cfg.HTTPBind, s.cfg.HTTPSBind}}, s.engine, s.log.With("part", "kube"))
	// The demo writes no status (as before it served Routes): nobody reads
	// an in-memory cluster's, and it has no leader to elect.
	status := !s.noStatus && s.cluster == nil
	if dyn != nil && status {
		if err := s.wireStatus(src); err != nil {
			return nil, err
		}
	}
	switch {
	case dyn != nil && s.cfg.Routes:
		src.WatchRoutes(kube.RouteWatchOptions{Client: dyn, Discovery: s.client.Discovery(),
			Convert: kube.RouteOptions{Subdomain: s.cfg.RouteSubdomain, AllowWildcard: s.cfg.AllowWildcardRoutes}, Status: status,
			Recheck: s.cfg.RoutesRecheck, MaxRecheck: s.cfg.RoutesMaxRecheck})
	case s.cfg.Routes:
		// The demo's in-memory cluster has no API server to serve the
		// Route CRD: say so, as a cluster without it is told.
		s.log.Info("OpenShift Routes are not served by the embedded demo cluster; Ingresses are")
	}
	switch {
	case len(binds.Addresses) > 0 && s.gateways != nil:
		src.WatchGateways(kube.GatewayWatchOptions{Client: s.gateways, Core: s.client, Discovery: s.client.Discovery(),
			Status: status, Recheck: s.cfg.RoutesRecheck, MaxRecheck: s.cfg.RoutesMaxRecheck})
	case len(binds.Addresses) > 0:
		s.log.Info("the Gateway API is not served by the embedded demo cluster; Ingresses are")
	}
	return src, nil
}

// Run runs every part until ctx ends or one of them fails, then stops them
// all (bounded) and returns the first error. HAProxy and the demo's pods
// are gone when it returns.
func (s *System) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{
		Handler:           server.New(s.serverDeps()),
		ReadHeaderTimeout: 10 * time.Second,
		// Requests (the feed's websockets among them) end with dcm, so feed
		// clients get a bye rather than a broken connection.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	type part struct {
		name string
		run  func(context.Context) error
	}
	parts := []part{
		{"engine", func(ctx context.Context) error { return s.engine.Run(ctx, s.source) }},
		{"portal", func(context.Context) error { return ignoreClosed(srv.Serve(s.portal)) }},
	}
	if s.kube != nil {
		parts = append(parts, part{"kubernetes", s.kube.Run})
	}
	if s.ownDemo {
		parts = append(parts, part{"demo", s.cluster.Run})
	}
	if s.accessLog != nil {
		parts = append(parts, part{"access log", s.accessLog.Run})
	}
	if s.peerSlices != nil {
		parts = append(parts, part{"peers", s.runPeerSlices})
	}
	errs := make(chan error, len(parts))
	for _, p := range parts {
		go func() { errs <- stopped(ctx, p.name, p.run(ctx)) }()
	}
	go s.watchReady(ctx)
	var first error
	n := len(parts)
	select {
	case <-ctx.Done():
	case first = <-errs:
		n--
	}
	return stopAll(cancel, srv, errs, n, first)
}

// stopped is how a part that ended reports: nothing once ctx is over, an
// error otherwise (a part that stops on its own has stopped too early).
func stopped(ctx context.Context, part string, err error) error {
	switch {
	case ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)):
		return nil
	case err == nil:
		return fmt.Errorf("%s stopped", part)
	}
	return fmt.Errorf("%s: %w", part, err)
}

// stopAll cancels every part and waits (bounded) until each has ended. n
// is the number of parts still to report; first is the error that ended
// the run, if any.
func stopAll(cancel context.CancelFunc, srv *http.Server, errs <-chan error, n int, first error) error {
	cancel()
	shutdown, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	_ = srv.Shutdown(shutdown)
	for ; n > 0; n-- {
		select {
		case err := <-errs:
			if first == nil {
				first = err
			}
		case <-shutdown.Done():
			return errors.Join(first, errors.New("some parts did not stop within 10s"))
		}
	}
	return first
}

// watchReady closes Ready once the engine runs HAProxy with the first
// complete state.
func (s *System) watchReady(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !s.engine.Ready() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	close(s.ready)
}

func (s *System) serverDeps() server.Deps {
	metrics := s.engine.Metrics()
	d := server.Deps{
		Engine: s.engine, Gatherer: s.registry,
		Authenticator: s.access.authn, Authorizer: s.access.authz,
		FeedClients: metrics.FeedClients, FeedDropped: metrics.FeedDropped,
		Log: s.log.With("part", "server"),
	}
	if s.client != nil {
		d.Scaler = kube.NewScaler(s.client)
	}
	if s.fleet != nil {
		d.Fleet = s.fleet
	}
	return d
}

// Ready is closed once HAProxy serves the first complete desired state.
func (s *System) Ready() <-chan struct{} { return s.ready }

// Engine, Driver, Registry, Client and Cluster are the parts, for main's
// banner and for tests; Client and Cluster are nil with Deps.Source, and
// Cluster against a real cluster.
func (s *System) Engine() *engine.Engine         { return s.engine }
func (s *System) Driver() *haproxy.Driver        { return s.driver }
func (s *System) Registry() *prometheus.Registry { return s.registry }
func (s *System) Client() kubernetes.Interface   { return s.client }
func (s *System) Cluster() *demo.Cluster         { return s.cluster }

// Kube is the Kubernetes source (nil when the caller brought its own).
func (s *System) Kube() *kube.Source { return s.kube }

// Config is the configuration the System runs.
func (s *System) Config() Config { return s.cfg }

// WorkDir is where HAProxy's files and sockets are.
func (s *System) WorkDir() string { return s.dir }

// PortalAddr is the address the portal listens on (Config.Listen, with
// the port the system chose for port 0).
func (s *System) PortalAddr() string { return s.portal.Addr().String() }

// Token is the admin token generated for the demo's portal; "" when
// tokens come from a file or from Kubernetes.
func (s *System) Token() string { return s.access.token }

// trafficEvery is --traffic-interval for the engine, where 0 means its
// default and a negative value means off.
func trafficEvery(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
