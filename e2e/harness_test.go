// Package e2e drives dcm end to end: the real haproxy binary, the demo
// cluster whose pods are real HTTP servers, and (with the control-plane
// harness) a real kube-apiserver.
package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
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
)

// stackOptions choose what a test runs.
type stackOptions struct {
	caps dcm.Caps
	// apps run in a demo cluster; ignored when source is set.
	apps []demo.App
	// source replaces Kubernetes with a source the test controls.
	source engine.Source
	// client replaces the demo cluster with another Kubernetes client.
	client kubernetes.Interface
	// observeEvery is the engine's observation pass (default 1s).
	observeEvery time.Duration
}

// stack is dcm wired as main wires it, with the real haproxy binary.
type stack struct {
	t        testing.TB
	cluster  *demo.Cluster
	client   kubernetes.Interface
	driver   *haproxy.Driver
	eng      *engine.Engine
	reg      *prometheus.Registry
	httpAddr string
	dir      string
	http     *http.Client
}

func startStack(tb testing.TB, o stackOptions) *stack {
	tb.Helper()
	bin := testkit.HAProxy(tb)
	if o.caps.Mode == "" {
		o.caps = dcm.Caps{Mode: dcm.ModeDynamic, AddServer: true}
	}
	log := testkit.Logger(tb)
	ctx, cancel := context.WithCancel(context.Background())
	s := &stack{t: tb, dir: testkit.ShortDir(tb), httpAddr: testkit.FreeAddr(tb), reg: prometheus.NewRegistry(),
		http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
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

	metrics := engine.NewMetrics(s.reg)
	s.driver = haproxy.NewDriver(haproxy.DriverConfig{
		Binary: bin, WorkDir: s.dir,
		Settings: haproxy.Settings{HTTPBind: s.httpAddr},
		Observer: metrics.ObserveCommand,
	}, log.With("part", "haproxy"))
	if o.observeEvery == 0 {
		o.observeEvery = time.Second
	}
	s.eng = engine.New(engine.Config{Caps: o.caps, IdlePollEvery: 50 * time.Millisecond, ObserveEvery: o.observeEvery},
		s.driver, metrics, log.With("part", "engine"))

	source := o.source
	if source == nil {
		s.client = o.client
		if s.client == nil {
			apps := o.apps
			if apps == nil {
				apps = demo.DefaultApps()
			}
			cluster, err := demo.New(demo.Options{Apps: apps, ReadinessDelay: 100 * time.Millisecond,
				PreStopDelay: 300 * time.Millisecond}, log.With("part", "demo"))
			if err != nil {
				tb.Fatal(err)
			}
			s.cluster, s.client = cluster, cluster.Client()
			goRun("demo", cluster.Run)
		}
		src := kube.NewSource(s.client, kube.Options{}, s.eng, log.With("part", "kube"))
		goRun("kube", src.Run)
		source = src
	}
	goRun("engine", func(ctx context.Context) error { return s.eng.Run(ctx, source) })
	s.eventually("the engine is ready", 20*time.Second, func() error {
		if !s.eng.Ready() {
			return fmt.Errorf("not ready")
		}
		return nil
	})
	return s
}

// eventually retries check until it passes or the timeout ends.
func (s *stack) eventually(what string, timeout time.Duration, check func() error) {
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

// get sends one request through HAProxy.
func (s *stack) get(host, path string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+s.httpAddr+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// served sends n requests and returns who answered; any non-200 is an error.
func (s *stack) served(host, path string, n int) (map[string]int, error) {
	got := map[string]int{}
	for range n {
		code, body, err := s.get(host, path)
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

// readyPods are the demo pods of an app that are ready and not terminating.
func (s *stack) readyPods(ns, app string) []string {
	var out []string
	for _, p := range s.cluster.Pods(ns, app) {
		if p.Ready && !p.Terminating {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

// waitServes waits until requests through HAProxy reach exactly the ready
// pods of the app, then checks it once more over a larger sample.
func (s *stack) waitServes(host, path, ns, app string, replicas int) {
	s.t.Helper()
	s.eventually(fmt.Sprintf("%s%s serves the %d ready pods of %s", host, path, replicas, app), 15*time.Second, func() error {
		want := s.readyPods(ns, app)
		if len(want) != replicas {
			return fmt.Errorf("%d pods ready, want %d", len(want), replicas)
		}
		return s.servesExactly(host, path, want, 3*replicas)
	})
	want := s.readyPods(ns, app)
	if err := s.servesExactly(host, path, want, 6*replicas); err != nil {
		s.t.Fatalf("%s%s after convergence: %v", host, path, err)
	}
}

func (s *stack) servesExactly(host, path string, want []string, n int) error {
	got, err := s.served(host, path, n)
	if err != nil {
		return err
	}
	var names []string
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	if !slices.Equal(names, want) {
		return fmt.Errorf("served by %v, ready pods are %v", names, want)
	}
	return nil
}

func (s *stack) workerPID() int {
	s.t.Helper()
	info, err := s.driver.Info(context.Background())
	if err != nil {
		s.t.Fatalf("show info: %v", err)
	}
	return info.Pid
}

// counter sums a counter family over the label pairs given (all series when none).
func (s *stack) counter(name string, labels ...string) float64 {
	s.t.Helper()
	mfs, err := s.reg.Gather()
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

func (s *stack) reloads() float64 { return s.counter("dcm_reloads_total") }

func (s *stack) backend(name string) dcm.Backend {
	s.t.Helper()
	for _, b := range s.eng.Snapshot().Backends {
		if b.Name == name {
			return b
		}
	}
	s.t.Fatalf("no backend %s in the snapshot", name)
	return dcm.Backend{}
}

func (s *stack) scale(ns, name string, replicas int32) {
	s.t.Helper()
	if err := s.cluster.Scale(context.Background(), ns, name, replicas); err != nil {
		s.t.Fatalf("scale %s/%s to %d: %v", ns, name, replicas, err)
	}
}

// load keeps requests flowing to a route and counts failures, so tests can
// prove that other routes are never disturbed.
type load struct {
	mu       sync.Mutex
	ok, fail int
	lastErr  string
	stop     chan struct{}
	done     chan struct{}
}

func (s *stack) startLoad(host, path string) *load {
	l := &load{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			select {
			case <-l.stop:
				return
			default:
			}
			code, body, err := s.get(host, path)
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

func (l *load) finish() (ok, fail int, lastErr string) {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok, l.fail, l.lastErr
}
