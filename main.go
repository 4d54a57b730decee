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

// parseFlags reads dcm's flags (system.Config.FlagSet) into a Config that
// starts as system.Defaults, which the harness of the e2e tests starts from
// too.
func parseFlags(args []string) (system.Config, error) {
	c := system.Defaults()
	fs := c.FlagSet()
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
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
	// With --access-log=stdout, stdout holds JSON lines only, for a log
	// collector to read: the banner goes to stderr with dcm's own log.
	banner := os.Stdout
	if o.AccessLog == "stdout" {
		banner = os.Stderr
	}
	if err := run(ctx, o, banner); err != nil {
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
		examples := sys.Cluster().Examples(cfg.HTTPBind, cfg.HTTPSBind)
		if len(examples) == 0 {
			fmt.Fprintf(out, "  through HAProxy: curl -H 'Host: web.demo.localhost' http://%s/\n", cfg.HTTPBind)
		}
		// One line per kind of route the demo shows, on the binds HAProxy
		// really has (a TLS kind only with --https-bind).
		for _, e := range examples {
			if e.HTTPS && cfg.HTTPSBind == "" {
				continue
			}
			fmt.Fprintf(out, "  %-16s %s\n", e.Kind+":", e.Line)
		}
		fmt.Fprintf(out, "  scale web to 5:  curl -X POST -H 'Authorization: Bearer %s' -d '{\"namespace\":\"demo\",\"kind\":\"Deployment\",\"name\":\"web\",\"replicas\":5}' -H 'Content-Type: application/json' http://%s/api/v1/scale\n", show, portal)
	}
	fmt.Fprintln(out)
}
