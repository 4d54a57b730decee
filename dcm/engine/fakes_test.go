package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/plan"
)

// waitTimeout bounds every wait of the loop tests: long enough for a loaded
// machine under -race, far below anything a test would wait for by design.
const waitTimeout = 10 * time.Second

// signal wakes every waiter when something was recorded: fakes and the event
// collector broadcast, the tests' wait helper listens, so nothing sleeps.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

// wait returns a channel closed at the next broadcast; take it before
// checking the condition, so a broadcast in between is not missed.
func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

func (s *signal) broadcast() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.ch)
	s.ch = make(chan struct{})
}

// fakeSource is a Kubernetes source whose desired state the test sets.
type fakeSource struct {
	sig     *signal
	changed chan struct{}

	mu           sync.Mutex
	desired      dcm.Desired
	seen         time.Time
	synced       bool
	desiredCalls int // one per sync, and one for Run's start
	syncedCalls  int
}

func newFakeSource(sig *signal, d dcm.Desired, synced bool) *fakeSource {
	return &fakeSource{sig: sig, changed: make(chan struct{}, 1), desired: d, synced: synced}
}

// Set replaces the desired state and signals the change the way informers
// do: a signal already pending absorbs this one.
func (s *fakeSource) Set(d dcm.Desired) {
	s.mu.Lock()
	s.desired = d
	if s.seen.IsZero() {
		s.seen = time.Now()
	}
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *fakeSource) SetSynced() {
	s.mu.Lock()
	s.synced = true
	s.mu.Unlock()
}

func (s *fakeSource) Desired() (dcm.Desired, time.Time) {
	s.mu.Lock()
	d, seen := s.desired, s.seen
	s.seen = time.Time{}
	s.desiredCalls++
	s.mu.Unlock()
	s.sig.broadcast()
	return d, seen
}

// Current is what the source holds, leaving Desired's figures alone.
func (s *fakeSource) Current() dcm.Desired {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.desired
}

// Changed is asked once per round of the loop, as it goes back to wait:
// the announcement wakes tests waiting for what a round changed in the
// engine without a driver call or event after it (an update counted).
func (s *fakeSource) Changed() <-chan struct{} {
	s.sig.broadcast()
	return s.changed
}

func (s *fakeSource) Synced() bool {
	s.mu.Lock()
	ok := s.synced
	s.syncedCalls++
	s.mu.Unlock()
	s.sig.broadcast()
	return ok
}

func (s *fakeSource) counts() (desired, synced int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.desiredCalls, s.syncedCalls
}

// call is one driver call as the fake recorded it.
type call struct {
	kind       string // start, apply, write, reload, observe, observe-backends, observe-states, info
	start, end time.Time
	ops        []dcm.Op
	state      dcm.State               // what Start, Apply, Write or Reload was given
	names      []string                // the backends an observation asked for
	obs        map[string][]dcm.Server // what an observation reported
	err        error
}

// fakeDriver is HAProxy as the planner models it: its servers change by
// plan.Apply (which refuses what HAProxy refuses), a reload or a restart
// loads the last files written, and observations report what it holds. Tests
// inject failures through the hooks and read back every call.
type fakeDriver struct {
	sig    *signal
	events chan haproxy.ProcessEvent

	mu       sync.Mutex
	dp       plan.DataPlane
	files    dcm.State // the last state written: what a restart loads
	pid      int
	calls    []call
	inReload bool
	// overlaps lists the calls made while a reload was in flight.
	overlaps []string
	// startErr fails Start; applyErr, writeErr and reloadErr are asked
	// before each call (n counts calls of that kind from 1) and fail it
	// when they return an error. reloadErr may block: it runs while the
	// reload is in flight.
	startErr  error
	applyErr  func(n int, ops []dcm.Op) error
	writeErr  func(n int) error
	reloadErr func(n int, st dcm.State) error
	// observeErr fails a full read-back when it returns an error.
	observeErr func() error
	// refuseDel makes del server of "<proxy>/<server>" refused that many
	// times, as 2.6 does when a request reached it after the read-back;
	// then busyAfterRefusal traffic read-backs report it busy (busyReads
	// counts them down).
	refuseDel        map[string]int
	busyAfterRefusal int
	busyReads        map[string]int
	// stopped is closed when the test ends, so that a hook blocked on a
	// gate the test never opened (it failed first) lets Run return.
	stopped chan struct{}
	// applying and reloading count the calls entered, finished or not.
	applying, reloading int
}

func newFakeDriver(sig *signal) *fakeDriver {
	return &fakeDriver{sig: sig, events: make(chan haproxy.ProcessEvent, 4), pid: 100,
		refuseDel: map[string]int{}, busyReads: map[string]int{}, stopped: make(chan struct{})}
}

// block holds a hook until the test opens gate (or ends).
func (d *fakeDriver) block(gate <-chan struct{}) {
	select {
	case <-gate:
	case <-d.stopped:
	}
}

// reloadInFlight reports whether a Reload call has not returned yet.
func (d *fakeDriver) reloadInFlight() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inReload
}

// overlapping lists the calls made while a reload was in flight.
func (d *fakeDriver) overlapping() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.overlaps)
}

// entered counts the calls of kind started, finished or not.
func (d *fakeDriver) entered(kind string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if kind == "apply" {
		return d.applying
	}
	return d.reloading
}

// record appends c and wakes the waiters; d.mu must not be held.
func (d *fakeDriver) record(c call) {
	c.end = time.Now()
	d.mu.Lock()
	d.calls = append(d.calls, c)
	d.mu.Unlock()
	d.sig.broadcast()
}

func (d *fakeDriver) countLocked(kind string) int {
	n := 0
	for _, c := range d.calls {
		if c.kind == kind {
			n++
		}
	}
	return n
}

// enter notes a runtime call and whether a reload is in flight meanwhile.
func (d *fakeDriver) enter(kind string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inReload {
		d.overlaps = append(d.overlaps, kind)
	}
}

func (d *fakeDriver) Start(_ context.Context, initial dcm.State) error {
	c := call{kind: "start", start: time.Now(), state: initial}
	d.mu.Lock()
	c.err = d.startErr
	if c.err == nil {
		d.dp, d.files = plan.DataPlaneOf(plan.AfterReload(initial)), initial
	}
	d.mu.Unlock()
	d.record(c)
	return c.err
}

func (d *fakeDriver) Apply(_ context.Context, ops []dcm.Op, next dcm.State) error {
	d.enter("apply")
	c := call{kind: "apply", start: time.Now(), ops: slices.Clone(ops), state: next}
	d.mu.Lock()
	d.applying++
	n := d.applying
	hook := d.applyErr
	d.mu.Unlock()
	d.sig.broadcast()
	if hook != nil {
		c.err = hook(n, ops)
	}
	if c.err == nil {
		c.err = d.applyOps(ops)
	}
	d.record(c)
	return c.err
}

// applyOps applies ops but the del servers it refuses, and reports those
// as the driver does: the rest applied, the refused ones named.
func (d *fakeDriver) applyOps(ops []dcm.Op) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var busy []string
	ops = slices.DeleteFunc(slices.Clone(ops), func(o dcm.Op) bool {
		ref := o.ProxyName() + "/" + o.Server
		if o.Kind != dcm.OpDelServer || d.refuseDel[ref] == 0 {
			return false
		}
		d.refuseDel[ref]--
		d.busyReads[ref] = d.busyAfterRefusal
		busy = append(busy, ref)
		return true
	})
	dp, err := plan.Apply(d.dp, ops)
	if err != nil {
		return fmt.Errorf("fake haproxy refused: %w", err)
	}
	d.dp = dp
	if len(busy) > 0 {
		return &haproxy.BusyError{Servers: busy}
	}
	return nil
}

func (d *fakeDriver) Write(st dcm.State) error {
	c := call{kind: "write", start: time.Now(), state: st}
	d.mu.Lock()
	n := d.countLocked("write") + 1
	hook := d.writeErr
	d.mu.Unlock()
	if hook != nil {
		c.err = hook(n)
	}
	if c.err == nil {
		d.mu.Lock()
		d.files = st
		d.mu.Unlock()
	}
	d.record(c)
	return c.err
}

func (d *fakeDriver) Reload(_ context.Context, st dcm.State) (haproxy.ReloadResult, error) {
	d.enter("reload")
	c := call{kind: "reload", start: time.Now(), state: st}
	d.mu.Lock()
	d.reloading++
	n := d.reloading
	hook := d.reloadErr
	d.inReload = true
	old := d.pid
	d.mu.Unlock()
	// The announcement lets a test act while the reload is in flight.
	d.sig.broadcast()
	if hook != nil {
		c.err = hook(n, st)
	}
	d.mu.Lock()
	d.inReload = false
	res := haproxy.ReloadResult{OldPID: old}
	if c.err == nil {
		d.pid++
		res.NewPID = d.pid
		d.dp, d.files = plan.DataPlaneOf(plan.AfterReload(st)), st
	}
	d.mu.Unlock()
	d.record(c)
	return res, c.err
}

func (d *fakeDriver) Observe(context.Context) (map[string][]dcm.Server, error) {
	d.mu.Lock()
	hook := d.observeErr
	d.mu.Unlock()
	if hook != nil {
		if err := hook(); err != nil {
			d.enter("observe")
			d.record(call{kind: "observe", start: time.Now(), err: err})
			return nil, err
		}
	}
	return d.observe("observe", nil, true), nil
}

func (d *fakeDriver) ObserveBackends(_ context.Context, names []string) (map[string][]dcm.Server, error) {
	return d.observe("observe-backends", names, true), nil
}

// Share is not HAProxy's business: the fake renders nothing to share.
func (d *fakeDriver) Share(dcm.State) {}

func (d *fakeDriver) ObserveStates(_ context.Context, names []string) (map[string][]dcm.Server, error) {
	return d.observe("observe-states", names, false), nil
}

// observe reports the servers of the backends asked (all for nil) as
// HAProxy's stats would: seen, idle unless busyReads says otherwise, and
// without traffic figures for a state-only read.
func (d *fakeDriver) observe(kind string, names []string, traffic bool) map[string][]dcm.Server {
	d.enter(kind)
	c := call{kind: kind, start: time.Now(), names: slices.Clone(names)}
	d.mu.Lock()
	out := map[string][]dcm.Server{}
	for proxy, servers := range d.dp.Servers {
		if names != nil && !slices.Contains(names, proxy) {
			continue
		}
		seen := make([]dcm.Server, len(servers))
		for i, s := range servers {
			s.Unobserved = false
			s.Sessions, s.Queued, s.UsedConn, s.IdleConn = 0, 0, 0, 0
			if ref := proxy + "/" + s.Name; traffic && d.busyReads[ref] > 0 {
				d.busyReads[ref]--
				s.Sessions = 1
			}
			seen[i] = s
		}
		out[proxy] = seen
	}
	d.mu.Unlock()
	c.obs = make(map[string][]dcm.Server, len(out)) // plan.Merge writes over what it is given
	for proxy, servers := range out {
		c.obs[proxy] = slices.Clone(servers)
	}
	d.record(c)
	return out
}

func (d *fakeDriver) Info(context.Context) (haproxy.Info, error) {
	d.enter("info")
	d.mu.Lock()
	pid := d.pid
	d.mu.Unlock()
	d.record(call{kind: "info", start: time.Now()})
	return haproxy.Info{Pid: pid, Version: "2.6.12"}, nil
}

func (d *fakeDriver) Version() haproxy.Version {
	return haproxy.Version{Major: 2, Minor: 6, Patch: 12}
}

func (d *fakeDriver) Events() <-chan haproxy.ProcessEvent { return d.events }

func (d *fakeDriver) Close() error { return nil }

func (d *fakeDriver) ReadFiles() (haproxy.Files, error) {
	return haproxy.Files{}, errors.New("the fake driver has no files")
}

func (d *fakeDriver) Render(dcm.State) (haproxy.Files, error) {
	return haproxy.Files{}, errors.New("the fake driver renders nothing")
}

// restart is the supervisor bringing a dead master back from the files on
// disk; the engine hears of it through Events.
func (d *fakeDriver) restart() {
	d.mu.Lock()
	d.pid++
	d.dp = plan.DataPlaneOf(plan.AfterReload(d.files))
	pid := d.pid
	d.mu.Unlock()
	d.events <- haproxy.ProcessEvent{Type: haproxy.ProcessRestarted, PID: pid, Time: time.Now()}
}

// tamper changes HAProxy behind dcm's back (someone at the admin socket).
func (d *fakeDriver) tamper(change func(servers map[string][]dcm.Server)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	servers := make(map[string][]dcm.Server, len(d.dp.Servers))
	for k, v := range d.dp.Servers {
		servers[k] = slices.Clone(v)
	}
	change(servers)
	d.dp.Servers = servers
}

// snapshot copies the recorded calls.
func (d *fakeDriver) snapshot() []call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// recordingHandler keeps the engine's log for the test: some decisions
// (a reload deferred) are visible only there. On failure the log is printed.
type recordingHandler struct {
	sig     *signal
	mu      *sync.Mutex
	records *[]string
}

func (h recordingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h recordingHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.mu.Lock()
	*h.records = append(*h.records, b.String())
	h.mu.Unlock()
	h.sig.broadcast()
	return nil
}

func (h recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordingHandler) WithGroup(string) slog.Handler      { return h }

// harness runs an engine against the fakes.
type harness struct {
	t       *testing.T
	sig     *signal
	e       *Engine
	d       *fakeDriver
	src     *fakeSource
	metrics *Metrics
	done    chan error // Run's result

	mu     sync.Mutex
	logs   []string
	events []dcm.Event
}

// newHarness wires an engine to fakes; the test sets the driver's hooks,
// then calls start.
func newHarness(t *testing.T, cfg Config, initial dcm.Desired) *harness {
	t.Helper()
	h := &harness{t: t, sig: newSignal(), done: make(chan error, 1)}
	h.d = newFakeDriver(h.sig)
	h.src = newFakeSource(h.sig, initial, false)
	h.metrics = NewMetrics(prometheus.NewRegistry())
	log := slog.New(recordingHandler{sig: h.sig, mu: &h.mu, records: &h.logs})
	h.e = New(cfg, h.d, h.metrics, log)
	return h
}

// start runs the engine (Kubernetes listed when synced) until the test ends.
func (h *harness) start(synced bool) {
	h.t.Helper()
	if synced {
		h.src.SetSynced()
	}
	_, _, sub := h.e.hub.Subscribe(0, 10000)
	ctx, cancel := context.WithCancel(context.Background())
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for {
			select {
			case ev := <-sub.Events():
				h.mu.Lock()
				h.events = append(h.events, *ev)
				h.mu.Unlock()
				h.sig.broadcast()
			case <-sub.Done():
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { h.done <- h.e.Run(ctx, h.src) }()
	h.t.Cleanup(func() {
		close(h.d.stopped)
		cancel()
		select {
		case err := <-h.done:
			if err != nil {
				h.t.Errorf("Run: %v", err)
			}
		case <-time.After(waitTimeout):
			h.t.Error("Run did not return after its context was cancelled")
		}
		<-collected
		if h.t.Failed() {
			h.mu.Lock()
			h.t.Logf("engine log:\n%s", strings.Join(h.logs, "\n"))
			h.mu.Unlock()
		}
	})
}

// waitFor waits until cond holds, woken by every recorded call, event and
// log line; it fails the test after waitTimeout.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.After(waitTimeout)
	for {
		woken := h.sig.wait()
		if cond() {
			return
		}
		select {
		case <-woken:
		case <-deadline:
			h.t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
	}
}

// waitReady waits for Run to have started HAProxy and made its first sync.
func (h *harness) waitReady() {
	h.t.Helper()
	h.waitFor("the engine to be ready", h.e.Ready)
}

// calls returns the recorded driver calls of the given kinds (all without).
func (h *harness) calls(kinds ...string) []call {
	var out []call
	for _, c := range h.d.snapshot() {
		if len(kinds) == 0 || slices.Contains(kinds, c.kind) {
			out = append(out, c)
		}
	}
	return out
}

// waitCalls waits for n calls of kind and returns them.
func (h *harness) waitCalls(kind string, n int) []call {
	h.t.Helper()
	h.waitFor(fmt.Sprintf("%d %s calls", n, kind), func() bool { return len(h.calls(kind)) >= n })
	return h.calls(kind)
}

// eventsOf returns the published events of type typ.
func (h *harness) eventsOf(typ dcm.EventType) []dcm.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []dcm.Event
	for _, ev := range h.events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// waitEvent waits for an event of type typ that match accepts, and returns it.
func (h *harness) waitEvent(typ dcm.EventType, what string, match func(dcm.Event) bool) dcm.Event {
	h.t.Helper()
	var found dcm.Event
	h.waitFor(what, func() bool {
		for _, ev := range h.eventsOf(typ) {
			if match == nil || match(ev) {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}

// logged reports whether the engine logged a message containing s.
func (h *harness) logged(s string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.ContainsFunc(h.logs, func(l string) bool { return strings.Contains(l, s) })
}

// actual is the engine's picture of HAProxy.
func (h *harness) actual() dcm.State {
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	return h.e.actual
}

func counter(t *testing.T, c *prometheus.CounterVec, label string) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.WithLabelValues(label).Write(&m); err != nil {
		t.Fatalf("read counter %s: %v", label, err)
	}
	return m.GetCounter().GetValue()
}

func plainCounter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatalf("read counter: %v", err)
	}
	return m.GetCounter().GetValue()
}

// Desired states for the loop tests. Nothing reaches a real HAProxy.

func testRoute(name string) dcm.Route {
	return dcm.Route{Namespace: "demo", Name: name, Kind: dcm.KindHTTP, Host: name + ".example", Path: "/",
		PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin, Check: true}
}

func testEndpoint(pod, ip string, st dcm.AdminState) dcm.Endpoint {
	return dcm.Endpoint{Name: pod + ":http", Addr: ip, Port: 8080, Weight: 1, State: st, Pod: pod}
}

// desiredOf is the desired state of routes by name, each with its endpoints.
func desiredOf(routes map[string][]dcm.Endpoint) dcm.Desired {
	var d dcm.Desired
	for name, eps := range routes {
		r := testRoute(name)
		eps = slices.Clone(eps)
		slices.SortFunc(eps, func(a, b dcm.Endpoint) int { return strings.Compare(a.Name, b.Name) })
		d.Backends = append(d.Backends, &dcm.DesiredBackend{Name: r.BackendName(), Route: r, Endpoints: eps})
	}
	slices.SortFunc(d.Backends, func(a, b *dcm.DesiredBackend) int { return strings.Compare(a.Name, b.Name) })
	return d
}

// serverOf finds a server in a state by backend and server name.
func serverOf(st dcm.State, backend, server string) (dcm.Server, bool) {
	b, ok := st.Backend(backend)
	if !ok {
		return dcm.Server{}, false
	}
	return b.Server(server)
}

func hasOp(ops []dcm.Op, kind dcm.OpKind, server string) bool {
	return slices.ContainsFunc(ops, func(o dcm.Op) bool { return o.Kind == kind && o.Server == server })
}

func (d *fakeDriver) SetMaxConn(context.Context, int) (bool, error) {
	return false, errors.New("fake driver: no maxconn")
}

func (d *fakeDriver) ReadTraffic(context.Context, bool) (haproxy.Traffic, error) {
	return haproxy.Traffic{}, errors.New("fake driver: no traffic")
}
