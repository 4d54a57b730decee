// Command dcm keeps a running HAProxy in step with Kubernetes through
// HAProxy's runtime API, reloading only when HAProxy cannot change something
// at runtime. main only reads flags and wires the parts together.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/demo"
	"github.com/dcm-router/dcm/dcm/engine"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/server"
)

type options struct {
	kubeconfig    string
	demo          bool
	listen        string
	httpBind      string
	httpsBind     string
	redirectPort  int
	haproxyBin    string
	masterSocket  string
	workDir       string
	mode          string
	slots         int
	poolSize      int
	stickyPool    int
	eventHistory  int
	namespaces    []string
	ingressClass  string
	routes        bool
	routeDomain   string
	authTokenFile string
	cookieSecret  string // file
	backendCA     string // file
	logLevel      string
	demoReady     time.Duration
	demoPreStop   time.Duration
}

// The engine puts the kube source's notices (the Routes API absent or
// served) on the portal.
var _ kube.Noticer = (*engine.Engine)(nil)

// defaultCookieSecret keeps sticky cookies equal across replicas and
// restarts when no --cookie-secret-file is given. It is public, so anyone
// can compute which cookie names which pod address; a private one hides it.
const defaultCookieSecret = "dcm-default-cookie-secret"

func parseFlags(args []string) (options, error) {
	var o options
	fs := pflag.NewFlagSet("dcm", pflag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; default: $KUBECONFIG, then in-cluster config, else the embedded demo")
	fs.BoolVar(&o.demo, "demo", false, "run the embedded demo: an in-memory cluster whose pods are local HTTP servers")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address of the portal, API and metrics")
	fs.StringVar(&o.httpBind, "http-bind", "127.0.0.1:8000", "address of HAProxy's HTTP frontend")
	fs.StringVar(&o.httpsBind, "https-bind", "127.0.0.1:8443", "address of HAProxy's HTTPS frontend (TLS routes)")
	fs.IntVar(&o.redirectPort, "https-redirect-port", 0, "port in the location of HTTP→HTTPS redirects: the one clients reach HTTPS on, e.g. 443 behind a Service that maps 443 to --https-bind (0: the port of --https-bind; 443 is left out)")
	fs.StringVar(&o.haproxyBin, "haproxy-bin", "haproxy", "HAProxy binary (2.6 or newer)")
	fs.StringVar(&o.masterSocket, "haproxy-master-socket", "", "attach to a running HAProxy master through this socket instead of starting one")
	fs.StringVar(&o.workDir, "work-dir", "", "directory for haproxy.cfg, map files and sockets (default: a directory under the user cache)")
	fs.StringVar(&o.mode, "mode", string(dcm.ModeDynamic), "how changes reach HAProxy: dynamic (runtime API), slots (pre-allocated slots, reload when full) or reload (reload on every change)")
	fs.IntVar(&o.slots, "slots", 8, "free server slots per backend in --mode=slots")
	fs.IntVar(&o.eventHistory, "event-history", 10000, "events kept for /events and feed clients that resume (memory grows with it until it is full)")
	fs.IntVar(&o.stickyPool, "sticky-pool-size", 10, "sticky spare backends (rendered with a dynamic cookie) in --mode=dynamic with a pool: new sticky routes (OpenShift Routes by default) take one instead of a reload")
	fs.IntVar(&o.poolSize, "pool-size", 10, "spare backends per route kind in --mode=dynamic: new routes take one instead of a reload (0: every new route reloads)")
	fs.StringSliceVar(&o.namespaces, "namespace", nil, "watch only these namespaces (repeatable; default all)")
	fs.StringVar(&o.ingressClass, "ingress-class", "", "serve only Ingresses of this class (default: all)")
	fs.BoolVar(&o.routes, "routes", true, "also serve OpenShift Routes (route.openshift.io/v1) when the API server serves them")
	fs.StringVar(&o.routeDomain, "route-subdomain", "", "give a Route without spec.host the host <name>-<namespace>.<this> (default: such Routes are rejected)")
	fs.StringVar(&o.authTokenFile, "auth-token-file", "", "file holding the API bearer token (default: a random token printed at start)")
	fs.StringVar(&o.cookieSecret, "cookie-secret-file", "", "file holding the secret sticky routes derive their cookie keys from; every replica must use the same (default: a built-in, public one)")
	fs.StringVar(&o.backendCA, "default-backend-ca-file", "", "CA (PEM) that reencrypt routes naming none verify their pods with, e.g. /var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt (default: none, such routes are rejected)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&o.demoReady, "demo-readiness-delay", 500*time.Millisecond, "demo: time from pod start to ready")
	fs.DurationVar(&o.demoPreStop, "demo-prestop-delay", time.Second, "demo: time a terminating pod keeps accepting before it shuts down")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.routeDomain != "" {
		if err := dcm.ValidateHost("--route-subdomain", o.routeDomain); err != nil {
			return o, err
		}
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if _, err := dcm.ParseMode(o.mode); err != nil {
		return o, err
	}
	if o.redirectPort < 0 || o.redirectPort > 65535 {
		return o, fmt.Errorf("--https-redirect-port %d: want 0 to 65535", o.redirectPort)
	}
	if o.mode == string(dcm.ModeSlots) && o.slots < 1 {
		return o, errors.New("--slots must be at least 1 in --mode=slots")
	}
	if o.poolSize < 0 || o.poolSize > 10000 {
		return o, errors.New("--pool-size must be between 0 and 10000")
	}
	if o.stickyPool < 0 || o.stickyPool > 10000 {
		return o, errors.New("--sticky-pool-size must be between 0 and 10000")
	}
	if o.eventHistory < 1 || o.eventHistory > 1000000 {
		return o, errors.New("--event-history must be between 1 and 1000000")
	}
	return o, nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "feed" {
		os.Exit(feedMain(os.Args[2:]))
	}
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(os.Stderr, subcommandsUsage)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dcm:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dcm:", err)
		os.Exit(1)
	}
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// kubeClient returns a client for the real cluster, or nil when dcm should
// run the demo.
func kubeClient(o options) (kubernetes.Interface, dynamic.Interface, error) {
	if o.demo {
		return nil, nil, nil
	}
	var cfg *rest.Config
	var err error
	switch path := o.kubeconfig; {
	case path != "" || os.Getenv("KUBECONFIG") != "":
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = path
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	default:
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, nil, nil
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes config: %w", err)
	}
	cfg.UserAgent = "dcm"
	// client-go's default of 5 requests a second is for command-line tools.
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	// OpenShift Routes are read as unstructured objects.
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return client, dyn, nil
}

func workDir(dir string) (string, error) {
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("--work-dir not set and no user cache dir: %w", err)
		}
		dir = filepath.Join(base, "dcm")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--work-dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("--work-dir: %w", err)
	}
	return dir, nil
}

func run(ctx context.Context, o options, out io.Writer) error {
	log, err := newLogger(o.logLevel)
	if err != nil {
		return err
	}
	// client-go reports watch failures and retries through klog.
	klog.SetSlogLogger(log.With("part", "client-go"))
	dir, err := workDir(o.workDir)
	if err != nil {
		return err
	}
	version, err := haproxy.DetectVersion(ctx, o.haproxyBin)
	if err != nil {
		return err
	}
	cookieSecret := defaultCookieSecret
	if o.cookieSecret != "" {
		b, err := os.ReadFile(o.cookieSecret)
		if err != nil {
			return fmt.Errorf("cookie secret: %w", err)
		}
		if cookieSecret = strings.TrimSpace(string(b)); cookieSecret == "" {
			return fmt.Errorf("cookie secret: %s is empty", o.cookieSecret)
		}
	}
	client, dyn, err := kubeClient(o)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 4)
	parts := 0 // goroutines that report on errs when they end
	var cluster *demo.Cluster
	if client != nil {
		warnings, err := kube.CheckAccess(ctx, client, o.namespaces)
		if err != nil {
			return err
		}
		for _, w := range warnings {
			log.Warn("permission missing: the API cannot scale workloads", "permission", w)
		}
	} else {
		cluster, err = demo.New(demo.Options{Apps: demo.DefaultApps(), ReadinessDelay: o.demoReady, PreStopDelay: o.demoPreStop}, log.With("part", "demo"))
		if err != nil {
			return fmt.Errorf("demo cluster: %w", err)
		}
		client = cluster.Client()
		parts++
		go func() { errs <- wrap("demo", cluster.Run(ctx)) }()
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := engine.NewMetrics(reg)
	caps := haproxy.CapsFor(version, dcm.Mode(o.mode), o.slots, o.poolSize)
	if caps.Pool > 0 {
		caps.StickyPool = o.stickyPool
	}
	var backendCA []byte
	if o.backendCA != "" {
		if backendCA, err = os.ReadFile(o.backendCA); err != nil {
			return fmt.Errorf("--default-backend-ca-file: %w", err)
		}
		if _, err := kube.ParseCA(backendCA); err != nil {
			return fmt.Errorf("--default-backend-ca-file %s: %w", o.backendCA, err)
		}
	}
	certs := &lateCerts{}
	driver := haproxy.NewDriver(haproxy.DriverConfig{
		Binary:       o.haproxyBin,
		WorkDir:      dir,
		MasterSocket: o.masterSocket,
		Settings:     haproxy.Settings{AdminSocket: filepath.Join(dir, "admin.sock"), HTTPBind: o.httpBind, HTTPSBind: o.httpsBind, HTTPSRedirectPort: redirectPort(o), CookieSecret: cookieSecret},
		Observer:     metrics.ObserveCommand,
		Certs:        certs,
		CAs:          certs,
	}, log.With("part", "haproxy"))
	eng := engine.New(engine.Config{Caps: caps, EventBuffer: o.eventHistory}, driver, metrics, log.With("part", "engine"))
	source := kube.NewSource(client, kube.Options{IngressClass: o.ingressClass, Namespaces: o.namespaces, DefaultBackendCA: backendCA}, eng, log.With("part", "kube"))
	switch {
	case dyn != nil && o.routes:
		source.WatchRoutes(kube.RouteWatchOptions{Client: dyn, Discovery: client.Discovery(),
			Convert: kube.RouteOptions{Subdomain: o.routeDomain}, Status: true})
	case o.routes:
		// The demo's in-memory cluster has no API server to serve the
		// Route CRD: say so, as a cluster without it is told.
		log.Info("OpenShift Routes are not served by the embedded demo cluster; Ingresses are")
	}
	certs.src = source // before anything runs: the driver asks only once the engine does
	parts += 2
	go func() { errs <- wrap("kubernetes", source.Run(ctx)) }()
	go func() { errs <- wrap("engine", eng.Run(ctx, source)) }()

	acc, err := portalAccess(o.authTokenFile, client, cluster != nil)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	srv := &http.Server{
		Handler: server.New(server.Deps{
			Engine: eng, Scaler: kube.NewScaler(client), Gatherer: reg,
			Authenticator: acc.authn, Authorizer: acc.authz,
			FeedClients: metrics.FeedClients, FeedDropped: metrics.FeedDropped,
			Log: log.With("part", "server"),
		}),
		ReadHeaderTimeout: 10 * time.Second,
		// Requests (the feed's websockets among them) end with dcm, so feed
		// clients get a bye rather than a broken connection.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	parts++
	go func() { errs <- wrap("portal", ignoreClosed(srv.Serve(ln))) }()

	var first error
	reported := 0
	select {
	case <-ready(ctx, eng):
		if cluster != nil {
			// The curl lines of the banner should answer with a pod name.
			demoServing(ctx, eng, 15*time.Second)
		}
		printBanner(out, o, ln.Addr().String(), acc.token, cluster != nil, dir)
		select {
		case <-ctx.Done():
		case first = <-errs:
			reported++
		}
	case <-ctx.Done():
	case first = <-errs:
		reported++
		if first == nil {
			first = errors.New("stopped before HAProxy was ready")
		}
	}
	return stopAll(cancel, srv, errs, parts-reported, first)
}

// stopAll cancels every part and waits (bounded) until each has ended, so
// HAProxy and the demo's pods are gone when dcm exits. n is the number of
// parts still to report; first is the error that ended the run, if any.
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

// ready is closed once the engine runs HAProxy with the first complete state.
func ready(ctx context.Context, eng *engine.Engine) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for !eng.Ready() {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		close(c)
	}()
	return c
}

// demoServing waits, bounded, until every demo route has a ready server.
func demoServing(ctx context.Context, eng *engine.Engine, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		serving := true
		for _, b := range eng.Snapshot().Backends {
			if !slices.ContainsFunc(b.Servers, func(s dcm.Server) bool { return s.State == dcm.StateReady }) {
				serving = false
			}
		}
		if serving {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func printBanner(out io.Writer, o options, portal, token string, isDemo bool, dir string) {
	fmt.Fprintf(out, "\ndcm is running (mode %s); HAProxy files in %s\n", o.mode, dir)
	fmt.Fprintf(out, "  portal:          http://%s/\n", portal)
	show := token
	switch {
	case token != "":
		fmt.Fprintf(out, "  admin token:     %s\n", token)
	case o.authTokenFile != "":
		fmt.Fprintf(out, "  tokens:          from %s\n", o.authTokenFile)
		show = "$TOKEN"
	default:
		fmt.Fprintf(out, "  sign in with:    a Kubernetes token allowed to get haproxy.dcm.io (deploy/portal-rbac.yaml)\n")
		show = "$TOKEN"
	}
	fmt.Fprintf(out, "  API, metrics:    curl -H 'Authorization: Bearer %s' http://%s/api/v1/snapshot   http://%s/metrics\n", show, portal, portal)
	if isDemo {
		fmt.Fprintf(out, "  through HAProxy: curl -H 'Host: web.demo.localhost' http://%s/\n", o.httpBind)
		fmt.Fprintf(out, "  scale web to 5:  curl -X POST -H 'Authorization: Bearer %s' -d '{\"namespace\":\"demo\",\"kind\":\"Deployment\",\"name\":\"web\",\"replicas\":5}' -H 'Content-Type: application/json' http://%s/api/v1/scale\n", show, portal)
	}
	fmt.Fprintln(out)
}

func wrap(part string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return nil
	}
	return fmt.Errorf("%s: %w", part, err)
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// lateCerts is the driver's CertSource and CASource: the Kubernetes
// source, which is built after the driver because it reports to the engine
// that drives it.
type lateCerts struct{ src *kube.Source }

func (c *lateCerts) CAPEM(ca, version string) ([]byte, error) {
	if c.src == nil {
		return nil, fmt.Errorf("no CA source for %s", ca)
	}
	return c.src.CAPEM(ca, version)
}

func (c *lateCerts) CertPEM(secret, version string) ([]byte, error) {
	if c.src == nil {
		return nil, fmt.Errorf("no certificate source for %s", secret)
	}
	return c.src.CertPEM(secret, version)
}

// redirectPort is the port HTTP→HTTPS redirects name: the flag's, else
// --https-bind's, so a redirect from the demo or a bare-metal HAProxy lands
// where HTTPS is served.
func redirectPort(o options) int {
	if o.redirectPort != 0 || o.httpsBind == "" {
		return o.redirectPort
	}
	_, port, err := net.SplitHostPort(o.httpsBind)
	if err != nil {
		return 0 // the renderer reports the bad bind
	}
	n, _ := strconv.Atoi(port)
	return n
}
