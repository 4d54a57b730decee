// Package harness wires dcm as main does — the engine, the real haproxy
// binary, and the demo cluster, a real control plane or a source the test
// sets by hand — and gives end-to-end tests their tools: requests through
// HAProxy, metrics, events, and waiting until something holds.
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/demo"
	"github.com/dcm-router/dcm/dcm/engine"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/kube"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/server"
)

// Options choose what a test runs.
type Options struct {
	// Caps default to dynamic mode.
	Caps dcm.Caps
	// Apps run in a demo cluster (default: the demo's); ignored when Source or Client is set.
	Apps []demo.App
	// ReadinessDelay is how long the demo's pods take to turn ready (default 100ms).
	ReadinessDelay time.Duration
	// Source replaces Kubernetes with a source the test controls.
	Source engine.Source
	// Client replaces the demo cluster with another Kubernetes client.
	Client kubernetes.Interface
	// HTTPS serves an HTTPS frontend on a free loopback port
	// (Stack.HTTPSAddr), as --https-bind does.
	HTTPS bool
	// RedirectToHTTPSPort puts the HTTPS frontend's port in HTTP→HTTPS
	// redirects, as main's --https-redirect-port default does.
	RedirectToHTTPSPort bool
	// Certs hands the driver the edge certificates (a Source of its own
	// gives none; the Kubernetes source is used when it runs).
	Certs haproxy.CertSource
	// CAs hands the driver the destination CAs of reencrypt routes (the
	// Kubernetes source is used when it runs and CAs is nil).
	CAs haproxy.CASource
	// DefaultBackendCA is the Kubernetes source's --default-backend-ca-file
	// content.
	DefaultBackendCA []byte
	// Namespaces limits what dcm watches, as --namespace does.
	Namespaces []string
	// ObserveEvery is the engine's observation pass (default 1s).
	ObserveEvery time.Duration
	// PortalTokens serves the portal and API, wired as main wires them, on
	// a free loopback port (Stack.PortalURL) for these tokens, in the
	// format of --auth-token-file; empty: no portal.
	PortalTokens string
	// PortalAuthenticator and PortalAuthorizer serve the portal with these
	// instead (for Kubernetes tokens, as main does in a cluster).
	PortalAuthenticator server.Authenticator
	PortalAuthorizer    server.Authorizer
	// Binary replaces the haproxy binary (a test's wrapper around it), as
	// --haproxy-bin does.
	Binary string
	// ReadTimeout bounds each admin socket read (default: the driver's).
	ReadTimeout time.Duration
	// ReloadTimeout bounds the wait for a new worker (default: the driver's).
	ReloadTimeout time.Duration
	// WorkDir is HAProxy's work directory (default: a fresh temporary one).
	WorkDir string
	// RetryReloadAfter is the engine's first delay before a failed reload is
	// retried (default: the engine's).
	RetryReloadAfter time.Duration
	// RecordCommands keeps every admin-socket command dcm sends (Stack.Commands).
	RecordCommands bool
	// Cluster watches the demo cluster another Stack runs, as a second dcm
	// replica would (the other Stack keeps running it).
	Cluster *demo.Cluster
	// CookieSecret is what --cookie-secret-file holds (sticky routes' keys).
	CookieSecret string
	// Routes watches OpenShift Routes too, as main does with --routes.
	Routes *kube.RouteWatchOptions
	// LogTo also gets dcm's log lines, from level info up.
	LogTo io.Writer
}

// Stack is dcm wired as main wires it, with the real haproxy binary.
type Stack struct {
	t        testing.TB
	Cluster  *demo.Cluster // nil unless the demo runs
	Client   kubernetes.Interface
	Driver   *haproxy.Driver
	Engine   *engine.Engine
	Registry *prometheus.Registry
	HTTPAddr string // HAProxy's frontend
	// HTTPSAddr is HAProxy's HTTPS frontend with Options.HTTPS.
	HTTPSAddr string
	Dir       string // HAProxy's files and sockets
	HTTP      *http.Client
	// PortalURL is the portal's http://host:port when Options.PortalTokens is set.
	PortalURL string
	// ConvergeWithin bounds how long Serves waits (default 15s).
	ConvergeWithin time.Duration

	cmdMu    sync.Mutex
	commands []string
}

// Commands lists the admin-socket commands sent so far, in order, when
// Options.RecordCommands is set.
func (s *Stack) Commands() []string {
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	return slices.Clone(s.commands)
}

// Start runs the stack until the test ends and waits until HAProxy serves
// the first complete state.
func Start(tb testing.TB, o Options) *Stack {
	tb.Helper()
	bin := testkit.HAProxy(tb)
	if o.Binary != "" {
		bin = o.Binary
	}
	if o.Caps.Mode == "" {
		o.Caps = dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	}
	log := testkit.Logger(tb)
	if o.LogTo != nil {
		log = slog.New(slog.NewTextHandler(io.MultiWriter(testkit.Writer{TB: tb}, o.LogTo), &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	dir := o.WorkDir
	if dir == "" {
		dir = testkit.ShortDir(tb)
	}
	s := &Stack{t: tb, Dir: dir, HTTPAddr: testkit.FreeAddr(tb), Registry: prometheus.NewRegistry(), ConvergeWithin: 15 * time.Second,
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	var wg sync.WaitGroup
	tb.Cleanup(func() {
		cancel()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			tb.Error("the stack did not stop within 20s")
		}
	})
	goRun := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				tb.Errorf("%s: %v", name, err)
			}
		}()
	}

	metrics := engine.NewMetrics(s.Registry)
	if o.HTTPS {
		s.HTTPSAddr = testkit.FreeAddr(tb)
	}
	certs := &lateCerts{src: o.Certs, cas: o.CAs}
	redirectPort := 0
	if o.RedirectToHTTPSPort && s.HTTPSAddr != "" {
		_, port, err := net.SplitHostPort(s.HTTPSAddr)
		if err != nil {
			tb.Fatalf("https address %q: %v", s.HTTPSAddr, err)
		}
		redirectPort, _ = strconv.Atoi(port)
	}
	s.Driver = haproxy.NewDriver(haproxy.DriverConfig{
		Binary: bin, WorkDir: s.Dir,
		Settings: haproxy.Settings{HTTPBind: s.HTTPAddr, HTTPSBind: s.HTTPSAddr, HTTPSRedirectPort: redirectPort, CookieSecret: o.CookieSecret},
		Observer: func(command string, d time.Duration, err error) {
			metrics.ObserveCommand(command, d, err)
			if o.RecordCommands {
				s.cmdMu.Lock()
				s.commands = append(s.commands, command)
				s.cmdMu.Unlock()
			}
		},
		Certs:       certs,
		CAs:         certs,
		ReadTimeout: o.ReadTimeout, ReloadTimeout: o.ReloadTimeout,
	}, log.With("part", "haproxy"))
	if o.ObserveEvery == 0 {
		o.ObserveEvery = time.Second
	}
	s.Engine = engine.New(engine.Config{Caps: o.Caps, IdlePollEvery: 50 * time.Millisecond, ObserveEvery: o.ObserveEvery,
		RetryReloadAfter: o.RetryReloadAfter},
		s.Driver, metrics, log.With("part", "engine"))

	source := o.Source
	if source == nil {
		s.Client = o.Client
		if o.Cluster != nil {
			s.Cluster, s.Client = o.Cluster, o.Cluster.Client()
		}
		if s.Client == nil {
			apps := o.Apps
			if apps == nil {
				apps = demo.DefaultApps()
			}
			ready := o.ReadinessDelay
			if ready == 0 {
				ready = 100 * time.Millisecond
			}
			cluster, err := demo.New(demo.Options{Apps: apps, ReadinessDelay: ready,
				PreStopDelay: 300 * time.Millisecond}, log.With("part", "demo"))
			if err != nil {
				tb.Fatal(err)
			}
			s.Cluster, s.Client = cluster, cluster.Client()
			goRun("demo", cluster.Run)
		}
		if s.Cluster == nil {
			// As main does against a real cluster.
			if _, err := kube.CheckAccess(ctx, s.Client, o.Namespaces); err != nil {
				tb.Fatal(err)
			}
		}
		src := kube.NewSource(s.Client, kube.Options{Namespaces: o.Namespaces, DefaultBackendCA: o.DefaultBackendCA}, s.Engine, log.With("part", "kube"))
		if o.Routes != nil {
			src.WatchRoutes(*o.Routes)
		}
		goRun("kube", src.Run)
		source = src
		if certs.src == nil {
			certs.src = src
		}
		if certs.cas == nil {
			certs.cas = src
		}
	}
	goRun("engine", func(ctx context.Context) error { return s.Engine.Run(ctx, source) })
	if o.PortalTokens != "" || o.PortalAuthenticator != nil {
		s.servePortal(ctx, o, metrics, log)
	}
	s.Eventually("the engine is ready", 20*time.Second, func() error {
		if !s.Engine.Ready() {
			return fmt.Errorf("not ready")
		}
		return nil
	})
	return s
}

// servePortal starts server.New as main does, until the test ends (ctx
// ends its requests, the feed's websockets among them).
func (s *Stack) servePortal(ctx context.Context, o Options, metrics *engine.Metrics, log *slog.Logger) {
	s.t.Helper()
	authn, authz := o.PortalAuthenticator, o.PortalAuthorizer
	if authn == nil {
		tokens, err := server.ParseTokens(strings.NewReader(o.PortalTokens))
		if err != nil {
			s.t.Fatalf("portal tokens: %v", err)
		}
		authn, authz = tokens, server.RoleAuthorizer{}
	}
	var scaler server.Scaler
	if s.Client != nil {
		scaler = kube.NewScaler(s.Client)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	srv := &http.Server{
		Handler: server.New(server.Deps{
			Engine: s.Engine, Scaler: scaler, Gatherer: s.Registry,
			Authenticator: authn, Authorizer: authz,
			FeedClients: metrics.FeedClients, FeedDropped: metrics.FeedDropped,
			Log: log.With("part", "server"),
		}),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() { _ = srv.Serve(ln) }() // ErrServerClosed at cleanup
	s.t.Cleanup(func() { _ = srv.Close() })
	s.PortalURL = "http://" + ln.Addr().String()
}

// Eventually retries check until it passes or the timeout ends.
func (s *Stack) Eventually(what string, timeout time.Duration, check func() error) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Get sends one request through HAProxy.
func (s *Stack) Get(host, path string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// Served sends n requests and returns who answered; any non-200 is an error.
func (s *Stack) Served(host, path string, n int) (map[string]int, error) {
	got := map[string]int{}
	for range n {
		code, body, err := s.Get(host, path)
		if err != nil {
			return got, err
		}
		if code != http.StatusOK {
			return got, fmt.Errorf("HTTP %d: %s", code, body)
		}
		got[body]++
	}
	return got, nil
}

// ReadyPods are the demo pods of an app that are ready and not terminating.
func (s *Stack) ReadyPods(ns, app string) []string {
	var out []string
	for _, p := range s.Cluster.Pods(ns, app) {
		if p.Ready && !p.Terminating {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

// DemoServes waits until requests through HAProxy reach exactly the ready
// pods of a demo app, then checks it once more over a larger sample.
func (s *Stack) DemoServes(host, path, ns, app string, replicas int) {
	s.t.Helper()
	s.Serves(host, path, replicas, func() ([]string, error) { return s.ReadyPods(ns, app), nil })
}

// Serves waits until requests through HAProxy reach exactly the pods ready
// lists (and there are replicas of them), then checks it once more over a
// larger sample.
func (s *Stack) Serves(host, path string, replicas int, ready func() ([]string, error)) {
	s.t.Helper()
	s.Eventually(fmt.Sprintf("%s%s serves its %d ready pods", host, path, replicas), s.ConvergeWithin, func() error {
		want, err := ready()
		if err != nil {
			return err
		}
		if len(want) != replicas {
			return fmt.Errorf("%d pods ready, want %d", len(want), replicas)
		}
		return s.ServesExactly(host, path, want, 3*replicas)
	})
	want, err := ready()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.ServesExactly(host, path, want, 6*replicas); err != nil {
		s.t.Fatalf("%s%s after convergence: %v", host, path, err)
	}
}

// ServesExactly sends n requests and checks that exactly the pods in want
// answered them, and nothing failed.
func (s *Stack) ServesExactly(host, path string, want []string, n int) error {
	got, err := s.Served(host, path, n)
	if err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(got))
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(names, want) {
		return fmt.Errorf("served by %v, ready pods are %v", names, want)
	}
	return nil
}

// WorkerPID is the pid HAProxy's show info reports.
func (s *Stack) WorkerPID() int {
	s.t.Helper()
	info, err := s.Driver.Info(context.Background())
	if err != nil {
		s.t.Fatalf("show info: %v", err)
	}
	return info.Pid
}

// Counter sums a counter family over the label pairs given (all series when none).
func (s *Stack) Counter(name string, labels ...string) float64 {
	s.t.Helper()
	mfs, err := s.Registry.Gather()
	if err != nil {
		s.t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metrics
				}
			}
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// Reloads is dcm_reloads_total over all reasons.
func (s *Stack) Reloads() float64 { return s.Counter("dcm_reloads_total") }

// Backend is a backend of the engine's snapshot; the test fails if there is none.
func (s *Stack) Backend(name string) dcm.Backend {
	s.t.Helper()
	for _, b := range s.Engine.Snapshot().Backends {
		if b.Name == name {
			return b
		}
	}
	s.t.Fatalf("no backend %s in the snapshot", name)
	return dcm.Backend{}
}

// Scale scales a demo Deployment through the scale subresource.
func (s *Stack) Scale(ns, name string, replicas int32) {
	s.t.Helper()
	if err := s.Cluster.Scale(context.Background(), ns, name, replicas); err != nil {
		s.t.Fatalf("scale %s/%s to %d: %v", ns, name, replicas, err)
	}
}

// Load keeps requests flowing to a route and counts failures, so tests can
// prove that other routes are never disturbed.
type Load struct {
	mu       sync.Mutex
	ok, fail int
	lastErr  string
	stop     chan struct{}
	done     chan struct{}
}

// StartLoad sends requests to host+path until Finish.
func (s *Stack) StartLoad(host, path string) *Load {
	l := &Load{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			select {
			case <-l.stop:
				return
			default:
			}
			code, body, err := s.Get(host, path)
			l.mu.Lock()
			if err != nil || code != http.StatusOK {
				l.fail++
				l.lastErr = fmt.Sprintf("%d %s %v", code, body, err)
			} else {
				l.ok++
			}
			l.mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return l
}

// Finish stops the load and says how it went.
func (l *Load) Finish() (ok, fail int, lastErr string) {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok, l.fail, l.lastErr
}

// ExpectStatus sends one request and checks its status code.
func (s *Stack) ExpectStatus(host, path string, want int) error {
	code, body, err := s.Get(host, path)
	if err != nil {
		return err
	}
	if code != want {
		return errors.New("got HTTP " + http.StatusText(code) + ": " + body)
	}
	return nil
}

// Recorder collects the engine's events.
type Recorder struct {
	mu     sync.Mutex
	events []dcm.Event
}

// Events returns the events recorded so far.
func (r *Recorder) Events() []dcm.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Subscribe records the engine's events from now until the test ends.
func (s *Stack) Subscribe(t *testing.T) *Recorder {
	r := &Recorder{}
	_, _, sub := s.Engine.Hub().Subscribe(s.Engine.Hub().Seq(), 10000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev := <-sub.C:
				r.mu.Lock()
				r.events = append(r.events, *ev)
				r.mu.Unlock()
			case <-sub.Done():
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); sub.Close(); <-done })
	return r
}

// ServerSteps lists, per server of a backend, the states it was set to and
// "del" when it was deleted, in the order HAProxy received them.
func (r *Recorder) ServerSteps(backend string) map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for _, ev := range r.events {
		if ev.Type != dcm.EventApplied {
			continue
		}
		for _, op := range ev.Ops {
			if op.Backend != backend {
				continue
			}
			switch op.Kind {
			case dcm.OpSetState:
				out[op.Server] = append(out[op.Server], string(op.State))
			case dcm.OpDelServer:
				out[op.Server] = append(out[op.Server], "del")
			}
		}
	}
	return out
}

// ReloadReasons lists the reasons of the successful reloads recorded.
func (r *Recorder) ReloadReasons() []dcm.ReloadReason {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []dcm.ReloadReason
	for _, ev := range r.events {
		if ev.Type == dcm.EventReload && ev.Reload != nil && ev.Reload.Error == "" {
			out = append(out, ev.Reload.Reasons...)
		}
	}
	return out
}

// lateCerts is the driver's CertSource, known only once the source is
// built (after the driver, as in main).
type lateCerts struct {
	src haproxy.CertSource
	cas haproxy.CASource
}

func (c *lateCerts) CAPEM(ca, version string) ([]byte, error) {
	if c.cas == nil {
		return nil, fmt.Errorf("no CA source for %s", ca)
	}
	return c.cas.CAPEM(ca, version)
}

func (c *lateCerts) CertPEM(secret, version string) ([]byte, error) {
	if c.src == nil {
		return nil, fmt.Errorf("no certificate source for %s", secret)
	}
	return c.src.CertPEM(secret, version)
}

// StaticSource is a desired state the test sets by hand: it stands in for
// Kubernetes so a test can remove an endpoint while its pod keeps serving,
// which only dcm can then explain.
type StaticSource struct {
	mu      sync.Mutex
	desired dcm.Desired
	seen    time.Time
	changed chan struct{}
}

// NewStaticSource starts with d.
func NewStaticSource(d dcm.Desired) *StaticSource {
	return &StaticSource{desired: d, changed: make(chan struct{}, 1)}
}

func (s *StaticSource) Desired() (dcm.Desired, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := s.seen
	s.seen = time.Time{}
	return s.desired, seen
}

func (s *StaticSource) Changed() <-chan struct{} { return s.changed }
func (s *StaticSource) Synced() bool             { return true }

func (s *StaticSource) Set(d dcm.Desired) {
	s.mu.Lock()
	s.desired, s.seen = d, time.Now()
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Observed lists HAProxy's servers as "backend/server addr:port weight state".
func (s *Stack) Observed(t *testing.T) []string {
	t.Helper()
	obs, err := s.Driver.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for b, servers := range obs {
		for _, sv := range servers {
			out = append(out, b+"/"+sv.Name+" "+sv.Addr+":"+strconv.Itoa(sv.Port)+" w"+strconv.Itoa(sv.Weight)+" "+string(sv.State))
		}
	}
	slices.Sort(out)
	return out
}
