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
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/demo"
	"github.com/dcm-router/dcm/dcm/engine"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/routing"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/system"
)

// RetireWait bounds a wait for retired servers to be deleted. HAProxy
// 2.6 refuses del server while it keeps an idle connection to the server
// for reuse, and its purge takes such a connection only after up to three
// pool-purge-delay rounds of 5s.
const RetireWait = 30 * time.Second

// Options choose what a test runs. What dcm itself runs with is
// system.Defaults — dcm with no flags — changed only by Config, and by the
// environment a test needs (see EffectiveConfig).
type Options struct {
	// Config changes the shipped configuration as flags would: a test sets
	// only what it is about. The changes are logged, and Start fails the
	// test if anything else differs from the defaults.
	Config func(*system.Config)
	// Apps run in a demo cluster of the stack's own (default: DefaultApps, without the showcase);
	// unused with Source, Kubernetes or Cluster.
	Apps []demo.App
	// Showcase runs the demo as make run does: the default apps and a route
	// of every kind (demo.Options.Showcase); Apps must be nil.
	Showcase bool
	// Source replaces Kubernetes with a source the test controls; Certs
	// and CAs hand HAProxy its routes' PEM.
	Source engine.Source
	Certs  haproxy.CertSource
	CAs    haproxy.CASource
	// Kubernetes is a real API server's client configuration (default:
	// the demo cluster).
	Kubernetes *rest.Config
	// Cluster watches the demo cluster another Stack runs, as a second dcm
	// replica would (the other Stack keeps running it).
	Cluster *demo.Cluster
	// PodNetwork is the test's own network namespace: HAProxy may be
	// handed its addresses besides 127.0.0.0/8 (see AddressGuard).
	PodNetwork netip.Prefix
	// LogTo also gets dcm's log lines, from level info up.
	LogTo io.Writer
	// AccessLog gets what --access-log=stdout writes (Config sets the
	// flag), instead of the test process's stdout.
	AccessLog io.Writer
	// ReadyWithin bounds the wait for dcm's first complete state (default
	// 20s): a benchmark of a large cluster times its start itself.
	ReadyWithin time.Duration
}

// Stack is dcm assembled by system.New, as main assembles it, with the
// real haproxy binary.
type Stack struct {
	t testing.TB
	// System is the running dcm; the fields below are its parts.
	System   *system.System
	Cluster  *demo.Cluster // nil unless the demo runs
	Client   kubernetes.Interface
	Driver   *haproxy.Driver
	Engine   *engine.Engine
	Registry *prometheus.Registry
	HTTPAddr string // HAProxy's frontend
	// HTTPSAddr is HAProxy's HTTPS frontend.
	HTTPSAddr string
	Dir       string // HAProxy's files and sockets
	HTTP      *http.Client
	// PortalURL is the portal's http://host:port.
	PortalURL string
	// ConvergeWithin bounds how long Serves waits (default 15s).
	ConvergeWithin time.Duration

	guard    *AddressGuard
	cmdMu    sync.Mutex
	commands []string
	// startFailed: TryStart returned dcm's error, so stopping does not
	// fail the test with it (or with the cancellation that followed).
	startFailed bool
	// stopOnce: a test may stop dcm (Stop) before its end.
	stopOnce sync.Once
	stopFn   func()
}

// Stop ends dcm now, as at the end of the test (a replica that goes
// away); later calls do nothing.
func (s *Stack) Stop() { s.stopOnce.Do(s.stopFn) }

// Commands lists the admin-socket commands sent so far, in order.
func (s *Stack) Commands() []string {
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	return slices.Clone(s.commands)
}

func (s *Stack) record(command string, _ time.Duration, _ error) {
	s.cmdMu.Lock()
	s.commands = append(s.commands, command)
	s.cmdMu.Unlock()
	s.guard.Command(command)
}

// Start runs dcm until the test ends and waits until HAProxy serves the
// first complete state.
func Start(tb testing.TB, o Options) *Stack {
	tb.Helper()
	s, err := TryStart(tb, o)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TryStart is Start, but returns an error when dcm stops or is not ready
// within o.ReadyWithin, rather than failing the test: a benchmark reports a
// start that fails at some size as a result. What it started is stopped at
// the end of the test either way.
func TryStart(tb testing.TB, o Options) (*Stack, error) {
	tb.Helper()
	testkit.HAProxy(tb) // skips, saying why, where there is none
	cfg := EffectiveConfig(tb, o)
	log := testkit.Logger(tb)
	if o.LogTo != nil {
		log = slog.New(slog.NewTextHandler(io.MultiWriter(testkit.Writer{TB: tb}, o.LogTo), &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	s := &Stack{t: tb, ConvergeWithin: 15 * time.Second, guard: NewAddressGuard(o.PodNetwork),
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	ctx, cancel := context.WithCancel(context.Background())
	apps := o.Apps
	if apps == nil && !o.Showcase {
		// The default apps without the showcase: the e2e tests count the
		// routes, servers and reloads of these three.
		apps = demo.DefaultApps()
	}
	sys, err := system.New(ctx, cfg, system.Deps{Log: log, Kubernetes: o.Kubernetes, Cluster: o.Cluster, DemoApps: apps,
		Source: o.Source, Certs: o.Certs, CAs: o.CAs, Commands: s.record, AccessLog: o.AccessLog})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("assemble dcm: %w", err)
	}
	s.System, s.Cluster, s.Client = sys, sys.Cluster(), sys.Client()
	s.Driver, s.Engine, s.Registry = sys.Driver(), sys.Engine(), sys.Registry()
	s.HTTPAddr, s.HTTPSAddr, s.Dir = cfg.HTTPBind, cfg.HTTPSBind, sys.WorkDir()
	s.PortalURL = "http://" + sys.PortalAddr()
	done := make(chan error, 1)
	go func() { done <- sys.Run(ctx) }()
	s.stopFn = func() { s.stop(cancel, done) }
	tb.Cleanup(s.Stop)
	go s.guardEvents(ctx)
	within := o.ReadyWithin
	if within <= 0 {
		within = 20 * time.Second
	}
	select {
	case <-sys.Ready():
	case err := <-done:
		done <- err // for the cleanup
		s.startFailed = true
		return nil, fmt.Errorf("dcm stopped before it was ready: %w", err)
	case <-time.After(within):
		s.startFailed = true
		return nil, fmt.Errorf("dcm not ready within %s", within)
	}
	s.guard.Snapshot(s.Engine.Snapshot())
	return s, nil
}

// stop ends dcm at the end of the test, bounded, after a last look at the
// addresses HAProxy was handed.
func (s *Stack) stop(cancel context.CancelFunc, done <-chan error) {
	s.guard.Snapshot(s.Engine.Snapshot())
	s.guard.ConfigDir(s.Dir)
	cancel()
	select {
	case err := <-done:
		switch {
		case err != nil && s.startFailed:
			s.t.Logf("dcm, which did not start: %v", err)
		case err != nil:
			s.t.Errorf("dcm: %v", err)
		}
	case <-time.After(20 * time.Second):
		s.t.Error("dcm did not stop within 20s")
	}
	if err := s.guard.Err(); err != nil {
		s.t.Error(err)
	}
}

// guardEvents checks the whole state HAProxy runs after every reload and
// restart, when servers reach it through the configuration file rather
// than through commands.
func (s *Stack) guardEvents(ctx context.Context) {
	hub := s.Engine.Hub()
	_, _, sub := hub.Subscribe(hub.Seq(), 10000)
	defer sub.Close()
	for {
		select {
		case ev := <-sub.C:
			if ev.Type == dcm.EventReload || ev.Type == dcm.EventHAProxy {
				s.guard.Snapshot(s.Engine.Snapshot())
			}
		case <-sub.Done():
			return
		case <-ctx.Done():
			return
		}
	}
}

// File writes content into a file of the test's own, for the options
// that name a file (AuthTokenFile, CookieSecretFile,
// DefaultBackendCAFile), and returns its path.
func File(tb testing.TB, name, content string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Eventually retries check until it passes or the timeout ends.
func (s *Stack) Eventually(what string, timeout time.Duration, check func() error) {
	s.t.Helper()
	testkit.Eventually(s.t, what, timeout, check)
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
			return *b
		}
	}
	s.t.Fatalf("no backend %s in the snapshot", name)
	return dcm.Backend{}
}

// SnapshotBackend finds a backend in the engine's snapshot.
func (s *Stack) SnapshotBackend(name string) (dcm.Backend, bool) {
	for _, b := range s.Engine.Snapshot().Backends {
		if b.Name == name {
			return *b, true
		}
	}
	return dcm.Backend{}, false
}

// Scale scales a demo Deployment through the scale subresource.
func (s *Stack) Scale(ns, name string, replicas int32) {
	s.t.Helper()
	if err := s.Cluster.Scale(context.Background(), ns, name, replicas); err != nil {
		s.t.Fatalf("scale %s/%s to %d: %v", ns, name, replicas, err)
	}
}

// DesiredReplicas is a demo Deployment's spec.replicas: what a scale sets at
// once, before any pod starts or stops.
func (s *Stack) DesiredReplicas(ns, name string) int32 {
	s.t.Helper()
	sc, err := s.Cluster.Client().AppsV1().Deployments(ns).GetScale(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatalf("scale of %s/%s: %v", ns, name, err)
	}
	return sc.Spec.Replicas
}

// Load keeps requests flowing to a route and counts failures, so tests can
// prove that other routes are never disturbed.
type Load struct {
	mu       sync.Mutex
	ok, fail int
	lastErr  string
	// firstFail is when the first request failed, after the load began:
	// whether a failure came before or during a change tells a test that
	// started too early from a change that broke something.
	start, firstFail time.Time
	stop             chan struct{}
	done             chan struct{}
}

// StartLoad sends requests to host+path until Finish.
func (s *Stack) StartLoad(host, path string) *Load {
	l := &Load{stop: make(chan struct{}), done: make(chan struct{}), start: time.Now()}
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
				if l.firstFail.IsZero() {
					l.firstFail = time.Now()
				}
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
	if l.fail == 0 {
		return l.ok, 0, ""
	}
	return l.ok, l.fail, fmt.Sprintf("%s; the first failure %s into the load of %s", l.lastErr,
		l.firstFail.Sub(l.start).Round(time.Millisecond), time.Since(l.start).Round(time.Millisecond))
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

// WithTokens is o serving the portal to these tokens, in the format of
// --auth-token-file, as that flag does (on top of o's Config).
func WithTokens(tb testing.TB, o Options, tokens string) Options {
	tb.Helper()
	file := File(tb, "tokens", tokens)
	named := o.Config
	o.Config = func(c *system.Config) {
		if named != nil {
			named(c)
		}
		c.AuthTokenFile = file
	}
	return o
}

// Spares is the number of spare backends dcm renders at a reload: the
// pool of each kind, the sticky ones and the Gateway's HTTP ones, for clusters of fewer than
// plan.PoolShare times as many routes of a kind (the tests' are).
func (s *Stack) Spares() int {
	caps := s.Engine.Snapshot().Caps
	return caps.Pool*len(routing.PoolKinds) + caps.StickyPool + caps.GatewayPool
}

// PoolSize is an Options.Config that sets --pool-size only.
func PoolSize(n int) func(*system.Config) {
	return func(c *system.Config) { c.PoolSize = n }
}
