// Command dcm keeps a running HAProxy in step with Kubernetes through
// HAProxy's runtime API, reloading only when HAProxy cannot change something
// at runtime. main reads its flags into a system.Config and runs the system
// it assembles.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/engine"
	"github.com/dcm-router/dcm/system"
)

// parseFlags reads dcm's flags into a Config; each flag's default is the
// value system.Defaults gives, so the harness of the e2e tests starts
// from what these flags give when none is set.
func parseFlags(args []string) (system.Config, error) {
	c := system.Defaults()
	fs := pflag.NewFlagSet("dcm", pflag.ContinueOnError)
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "path to a kubeconfig; default: $KUBECONFIG, then in-cluster config, else the embedded demo")
	fs.BoolVar(&c.Demo, "demo", c.Demo, "run the embedded demo: an in-memory cluster whose pods are local HTTP servers")
	fs.StringVar(&c.Listen, "listen", c.Listen, "address of the portal, API and metrics")
	fs.StringVar(&c.HTTPBind, "http-bind", c.HTTPBind, "address of HAProxy's HTTP frontend")
	fs.StringVar(&c.HTTPSBind, "https-bind", c.HTTPSBind, "address of HAProxy's HTTPS frontend (TLS routes)")
	fs.IntVar(&c.HTTPSRedirectPort, "https-redirect-port", c.HTTPSRedirectPort, "port in the location of HTTP→HTTPS redirects: the one clients reach HTTPS on, e.g. 443 behind a Service that maps 443 to --https-bind (0: the port of --https-bind; 443 is left out)")
	fs.StringVar(&c.HAProxyBin, "haproxy-bin", c.HAProxyBin, "HAProxy binary (2.6 or newer)")
	fs.StringVar(&c.MasterSocket, "haproxy-master-socket", c.MasterSocket, "attach to a running HAProxy master through this socket instead of starting one")
	fs.StringVar(&c.WorkDir, "work-dir", c.WorkDir, "directory for haproxy.cfg, map files and sockets (default: a directory under the user cache)")
	mode := string(c.Mode)
	fs.StringVar(&mode, "mode", mode, "how changes reach HAProxy: dynamic (runtime API), slots (pre-allocated slots, reload when full) or reload (reload on every change)")
	fs.IntVar(&c.Slots, "slots", c.Slots, "free server slots per backend in --mode=slots")
	fs.IntVar(&c.EventHistory, "event-history", c.EventHistory, "events kept for /events and feed clients that resume (memory grows with it until it is full)")
	fs.IntVar(&c.StickyPoolSize, "sticky-pool-size", c.StickyPoolSize, "sticky spare backends (rendered with a dynamic cookie) in --mode=dynamic with a pool: new sticky routes (OpenShift Routes by default) take one instead of a reload")
	fs.IntVar(&c.PoolSize, "pool-size", c.PoolSize, "spare backends per route kind in --mode=dynamic: new routes take one instead of a reload (0: every new route reloads)")
	fs.StringSliceVar(&c.Namespaces, "namespace", c.Namespaces, "watch only these namespaces (repeatable; default all)")
	fs.StringVar(&c.IngressClass, "ingress-class", c.IngressClass, "serve only Ingresses of this class (default: all)")
	fs.BoolVar(&c.Routes, "routes", c.Routes, "also serve OpenShift Routes (route.openshift.io/v1) when the API server serves them")
	fs.StringVar(&c.RouteSubdomain, "route-subdomain", c.RouteSubdomain, "give a Route without spec.host the host <name>-<namespace>.<this> (default: such Routes are rejected)")
	fs.StringVar(&c.AuthTokenFile, "auth-token-file", c.AuthTokenFile, "file holding the API bearer token (default: a random token printed at start)")
	fs.StringVar(&c.CookieSecretFile, "cookie-secret-file", c.CookieSecretFile, "file holding the secret sticky routes derive their cookie keys from; every replica must use the same (default: a built-in, public one)")
	fs.StringVar(&c.DefaultBackendCAFile, "default-backend-ca-file", c.DefaultBackendCAFile, "CA (PEM) that reencrypt routes naming none verify their pods with, e.g. /var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt (default: none, such routes are rejected)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.DurationVar(&c.DemoReadinessDelay, "demo-readiness-delay", c.DemoReadinessDelay, "demo: time from pod start to ready")
	fs.DurationVar(&c.DemoPreStopDelay, "demo-prestop-delay", c.DemoPreStopDelay, "demo: time a terminating pod keeps accepting before it shuts down")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.Mode = dcm.Mode(mode)
	return c, c.Validate()
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

// run assembles dcm from cfg, prints the banner once HAProxy serves, and
// runs until ctx ends or a part fails.
func run(ctx context.Context, cfg system.Config, out io.Writer) error {
	log, err := system.NewLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	// client-go reports watch failures and retries through klog.
	klog.SetSlogLogger(log.With("part", "client-go"))
	sys, err := system.New(ctx, cfg, system.Deps{Log: log})
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- sys.Run(ctx) }()
	select {
	case <-sys.Ready():
	case err := <-done:
		if err == nil && ctx.Err() == nil {
			err = errors.New("stopped before HAProxy was ready")
		}
		return err
	}
	if sys.Cluster() != nil {
		// The curl lines of the banner should answer with a pod name.
		demoServing(ctx, sys.Engine(), 15*time.Second)
	}
	printBanner(out, cfg, sys)
	return <-done
}

// demoServing waits, bounded, until every demo route has a ready server.
func demoServing(ctx context.Context, eng *engine.Engine, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for !allServing(eng.Snapshot()) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func allServing(snap dcm.Snapshot) bool {
	for _, b := range snap.Backends {
		if !slices.ContainsFunc(b.Servers, func(s dcm.Server) bool { return s.State == dcm.StateReady }) {
			return false
		}
	}
	return true
}

func printBanner(out io.Writer, cfg system.Config, sys *system.System) {
	portal, token := sys.PortalAddr(), sys.Token()
	fmt.Fprintf(out, "\ndcm is running (mode %s); HAProxy files in %s\n", cfg.Mode, sys.WorkDir())
	fmt.Fprintf(out, "  portal:          http://%s/\n", portal)
	show := token
	switch {
	case token != "":
		fmt.Fprintf(out, "  admin token:     %s\n", token)
	case cfg.AuthTokenFile != "":
		fmt.Fprintf(out, "  tokens:          from %s\n", cfg.AuthTokenFile)
		show = "$TOKEN"
	default:
		fmt.Fprintf(out, "  sign in with:    a Kubernetes token allowed to get haproxy.dcm.io (deploy/portal-rbac.yaml)\n")
		show = "$TOKEN"
	}
	fmt.Fprintf(out, "  API, metrics:    curl -H 'Authorization: Bearer %s' http://%s/api/v1/snapshot   http://%s/metrics\n", show, portal, portal)
	if sys.Cluster() != nil {
		fmt.Fprintf(out, "  through HAProxy: curl -H 'Host: web.demo.localhost' http://%s/\n", cfg.HTTPBind)
		fmt.Fprintf(out, "  scale web to 5:  curl -X POST -H 'Authorization: Bearer %s' -d '{\"namespace\":\"demo\",\"kind\":\"Deployment\",\"name\":\"web\",\"replicas\":5}' -H 'Content-Type: application/json' http://%s/api/v1/scale\n", show, portal)
	}
	fmt.Fprintln(out)
}
