// Package engine runs dcm's sync loop: desired state from Kubernetes and
// observed state from HAProxy go into the planner, and the plan goes to
// HAProxy through the runtime API, or through a reload when it must.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/plan"
)

// Source is where desired state comes from (dcm/kube in production).
type Source interface {
	// Desired returns the current desired state and when the oldest change
	// not returned before was seen (zero if none).
	Desired() (dcm.Desired, time.Time)
	// Changed is signalled when Desired changed; bursts coalesce.
	Changed() <-chan struct{}
	// Synced reports whether the initial list from Kubernetes is complete.
	Synced() bool
}

// Driver is the HAProxy side (dcm/haproxy in production).
type Driver interface {
	Start(ctx context.Context, initial dcm.State) error
	// Apply applies ops; next is the state they lead to (map replaces send its maps).
	Apply(ctx context.Context, ops []dcm.Op, next dcm.State) error
	Write(st dcm.State) error
	Reload(ctx context.Context, st dcm.State) (haproxy.ReloadResult, error)
	Observe(ctx context.Context) (map[string][]dcm.Server, error)
	ObserveBackends(ctx context.Context, names []string) (map[string][]dcm.Server, error)
	ObserveStates(ctx context.Context, names []string) (map[string][]dcm.Server, error)
	Info(ctx context.Context) (haproxy.Info, error)
	Version() haproxy.Version
	Events() <-chan haproxy.ProcessEvent
	// Close stops HAProxy (when the driver started it) and waits for it.
	Close() error
	// ReadFiles reads the files on disk; Render renders a state without writing it.
	ReadFiles() (haproxy.Files, error)
	Render(st dcm.State) (haproxy.Files, error)
}

// Config tunes the loop.
type Config struct {
	Caps dcm.Caps
	// ObserveEvery is how long one pass over the whole HAProxy state takes,
	// to notice drift and refresh figures (sessions, health). The pass is
	// made in chunks of ObserveChunk backends so that reading back a large
	// HAProxy never holds up an endpoint change for long.
	ObserveEvery time.Duration
	ObserveChunk int
	// IdlePollEvery is how often servers waiting in maint are checked for
	// idleness, so that del server follows soon after the last request.
	IdlePollEvery time.Duration
	// RetryReloadAfter is the first delay before a failed reload is retried;
	// it doubles up to a minute.
	RetryReloadAfter time.Duration
	// EventBuffer is how many events the hub keeps for clients that resume.
	EventBuffer int
}

func (c Config) withDefaults() Config {
	if c.ObserveEvery <= 0 {
		c.ObserveEvery = 10 * time.Second
	}
	if c.ObserveChunk <= 0 {
		c.ObserveChunk = 25
	}
	if c.IdlePollEvery <= 0 {
		c.IdlePollEvery = 200 * time.Millisecond
	}
	if c.RetryReloadAfter <= 0 {
		c.RetryReloadAfter = time.Second
	}
	if c.EventBuffer <= 0 {
		c.EventBuffer = 10000
	}
	return c
}

// Engine owns the picture of HAProxy and keeps it in step with Kubernetes.
type Engine struct {
	cfg     Config
	driver  Driver
	source  Source
	metrics *Metrics
	hub     *Hub
	log     *slog.Logger

	reloadReq chan dcm.ReloadReason
	kicks     chan struct{} // an admin changed an override: sync now

	mu         sync.Mutex // guards everything below; events are published under it so snapshots and seq agree
	actual     dcm.State
	desired    dcm.Desired
	updates    dcm.Updates
	lastReload *dcm.ReloadInfo
	reloads    int
	started    time.Time
	pid        int
	running    bool
	ready      bool
	rejected   map[dcm.ObjectRef]dcm.Rejection
	// observeCursor is where the periodic observation pass continues.
	observeCursor int
	// overrides are the admins' changes on top of Kubernetes, by endpoint.
	overrides map[string]override
	// expectations are previews whose changes are being compared with what
	// the engine applies.
	expectations []*expectation
	// retry holds a failed reload: its reasons, when to try again, and the
	// delay after that (doubling up to a minute).
	retry struct {
		reasons []dcm.ReloadReason
		at      time.Time
		delay   time.Duration
	}
}

// New wires an engine; Run starts it with its source. The source is given
// to Run because it reports rejected objects to the engine it feeds.
func New(cfg Config, driver Driver, metrics *Metrics, log *slog.Logger) *Engine {
	cfg = cfg.withDefaults()
	e := &Engine{
		cfg: cfg, driver: driver, metrics: metrics, hub: NewHub(cfg.EventBuffer), log: log,
		reloadReq: make(chan dcm.ReloadReason, 16),
		kicks:     make(chan struct{}, 1),
		rejected:  map[dcm.ObjectRef]dcm.Rejection{},
		overrides: map[string]override{},
	}
	return e
}

// Metrics exposes the collectors (the haproxy client reports command timings to them).
func (e *Engine) Metrics() *Metrics { return e.metrics }

// Hub is the event hub (the portal's feed subscribes to it).
func (e *Engine) Hub() *Hub { return e.hub }

// Ready reports whether HAProxy runs the first complete desired state.
func (e *Engine) Ready() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ready
}

func (e *Engine) kick() {
	select {
	case e.kicks <- struct{}{}:
	default:
	}
}

// Reload asks for a reload with reason manual (the portal's button).
func (e *Engine) Reload(actor string) {
	e.log.Info("reload requested", "actor", actor)
	e.RequestReload(dcm.ReasonManual)
}

// Subscribe returns the events after since and a subscription to the
// later ones (see Hub.Subscribe).
func (e *Engine) Subscribe(since uint64, queue int) ([]dcm.Event, bool, dcm.Subscription) {
	return e.hub.Subscribe(since, queue)
}

// Events returns the events after since that the hub still keeps.
func (e *Engine) Events(since uint64) ([]dcm.Event, bool) {
	return e.hub.Since(since)
}

// RequestReload asks for a reload with a reason (an admin's request, or a test).
func (e *Engine) RequestReload(reason dcm.ReloadReason) {
	select {
	case e.reloadReq <- reason:
	default: // the queue is full: the reload it leads to is this one too
	}
}

// Run waits for Kubernetes to be listed, starts HAProxy with the complete
// desired state, then syncs until ctx is done.
func (e *Engine) Run(ctx context.Context, source Source) error {
	e.source = source
	if err := e.waitSynced(ctx); err != nil {
		return err
	}
	desired, _ := e.source.Desired()
	initial := plan.Fresh(desired, e.cfg.Caps)
	if err := e.driver.Start(ctx, initial); err != nil {
		return fmt.Errorf("start haproxy: %w", err)
	}
	defer e.driver.Close()
	e.mu.Lock()
	// HAProxy loaded initial from the file, where drain is written as
	// maint: expect that, so the first read-back reports no drift.
	e.actual, e.desired = plan.AfterReload(initial), desired
	e.started, e.running = time.Now(), true
	e.mu.Unlock()
	e.refreshInfo(ctx)
	// Drain cannot be written in a configuration: restore it at runtime.
	e.sync(ctx, syncRequest{observe: true})
	e.mu.Lock()
	e.ready = true
	e.mu.Unlock()
	e.publish(dcm.Event{Type: dcm.EventHAProxy, Message: fmt.Sprintf("HAProxy %s started (worker pid %d) with %d backends",
		e.driver.Version(), e.pid, len(initial.Backends))})
	return e.loop(ctx)
}

func (e *Engine) waitSynced(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !e.source.Synced() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the initial Kubernetes list: %w", ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

type syncRequest struct {
	observe     bool // read the whole state back first
	observeIdle bool // read back the backends with servers waiting for idle
	observeNext bool // read back the next chunk of the periodic pass
	reasons     []dcm.ReloadReason
}

func (e *Engine) loop(ctx context.Context) error {
	// Deadlines rather than fresh timers per round, so that a steady stream
	// of Kubernetes events cannot postpone observation for ever.
	nextObserve := time.Now().Add(e.observeDelay())
	var nextIdle time.Time
	for {
		var idle, retry <-chan time.Time
		observe := time.After(time.Until(nextObserve))
		if len(e.waitingBackends()) > 0 {
			if nextIdle.IsZero() {
				nextIdle = time.Now().Add(e.cfg.IdlePollEvery)
			}
			idle = time.After(time.Until(nextIdle))
		} else {
			nextIdle = time.Time{}
		}
		if at, ok := e.retryAt(); ok {
			retry = time.After(time.Until(at))
		}
		var expect <-chan time.Time
		if e.expecting() {
			expect = time.After(time.Second)
		}
		req := syncRequest{}
		select {
		case <-ctx.Done():
			return nil
		case <-e.source.Changed():
		case <-e.kicks:
		case <-observe:
			req.observeNext = true
			nextObserve = time.Now().Add(e.observeDelay())
		case <-idle:
			req.observeIdle = true
			nextIdle = time.Time{}
		case r := <-e.reloadReq:
			req.reasons = e.queuedReloads(r)
		case ev := <-e.driver.Events():
			e.processEvent(ctx, ev)
			if ev.Type != haproxy.ProcessRestarted {
				continue
			}
			req.observe = true
		case <-retry:
			req.reasons = e.pendingReasons()
		case <-expect:
			e.settleExpectations(time.Now())
			continue
		}
		e.sync(ctx, req)
	}
}

// queuedReloads returns r and the reasons of every request queued behind
// it, so that a burst of requests (clicks while a reload runs, failed
// writes) is one reload that names all of them.
func (e *Engine) queuedReloads(r dcm.ReloadReason) []dcm.ReloadReason {
	reasons := []dcm.ReloadReason{r}
	for {
		select {
		case r := <-e.reloadReq:
			reasons = append(reasons, r)
		default:
			return reasons
		}
	}
}

func (e *Engine) expecting() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.expectations) > 0
}

// retryAt says when a failed reload is due for its retry.
func (e *Engine) retryAt() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.retry.at, len(e.retry.reasons) > 0
}

func (e *Engine) pendingReasons() []dcm.ReloadReason {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.retry.reasons)
}

// observeDelay spreads one observation pass over ObserveEvery.
func (e *Engine) observeDelay() time.Duration {
	e.mu.Lock()
	n := len(e.actual.Backends)
	e.mu.Unlock()
	chunks := max(1, (n+e.cfg.ObserveChunk-1)/e.cfg.ObserveChunk)
	return e.cfg.ObserveEvery / time.Duration(chunks)
}

// nextChunk returns the backends to observe next and advances the cursor;
// last says the chunk ends a pass over every backend.
func (e *Engine) nextChunk() (names []string, last bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	bs := e.actual.Backends
	if len(bs) == 0 {
		return nil, false
	}
	if e.observeCursor >= len(bs) {
		e.observeCursor = 0
	}
	end := min(e.observeCursor+e.cfg.ObserveChunk, len(bs))
	names = make([]string, 0, end-e.observeCursor)
	for _, b := range bs[e.observeCursor:end] {
		names = append(names, b.ProxyName())
	}
	e.observeCursor = end
	return names, end == len(bs)
}

func hasEndpoint(b dcm.DesiredBackend, name string) bool {
	_, ok := slices.BinarySearchFunc(b.Endpoints, name, func(e dcm.Endpoint, n string) int { return strings.Compare(e.Name, n) })
	return ok
}

// sync runs one round of the loop. When HAProxy cannot be brought in step
// the round says so in the log and events, and a later round converges
// through a reload.
func (e *Engine) sync(ctx context.Context, req syncRequest) {
	desired, seen := e.source.Desired()
	if req.observe {
		if e.observe(ctx, nil) {
			req.reasons = append(req.reasons, dcm.ReasonDrift)
		}
	} else if req.observeNext {
		if names, last := e.nextChunk(); len(names) > 0 {
			missing, err := e.observeWith(ctx, names, false)
			if missing {
				req.reasons = append(req.reasons, dcm.ReasonDrift)
			}
			if last && err == nil {
				e.metrics.ObservationPasses.Inc()
			}
		}
	} else if req.observeIdle {
		if names := e.waitingBackends(); len(names) > 0 {
			e.observe(ctx, names)
		}
	}
	e.mu.Lock()
	actual := e.actual
	e.desired = desired
	pruneOverrides(desired, e.overrides)
	desired = withOverrides(desired, e.overrides)
	e.mu.Unlock()

	var p dcm.Plan
	if len(req.reasons) > 0 {
		p = plan.Reload(desired, e.cfg.Caps, req.reasons...)
	} else {
		p = plan.Compute(actual, desired, e.cfg.Caps)
	}
	if p.Empty() {
		if !seen.IsZero() { // a Kubernetes change that HAProxy does not see
			e.mu.Lock()
			e.updates.Noop++
			e.mu.Unlock()
			e.metrics.Updates.WithLabelValues("noop").Inc()
		}
		return
	}
	if p.Reload {
		if at, ok := e.retryAt(); ok && time.Now().Before(at) && len(req.reasons) == 0 {
			// The last reload failed: wait for its retry rather than hammer
			// HAProxy with the same configuration on every event.
			e.log.Debug("reload deferred until the retry of the failed one", "at", at)
			return
		}
		e.reload(ctx, p, seen)
		return
	}
	err := e.driver.Apply(ctx, p.Ops, p.Next)
	var busy *haproxy.BusyError
	if errors.As(err, &busy) {
		if ops, next, send, ok := keepBusy(actual, p.Ops, p.Next, busy.Servers, busy.Unsent); ok {
			// A request reached the server after the read-back that found it
			// idle: the rest applied; it is deleted once idle, no reload.
			// So is its CA file; the files of CAs no server uses go now.
			e.log.Debug("del server deferred: connections still attached", "servers", busy.Servers)
			p.Ops, p.Next, err = ops, next, nil
			if len(send) > 0 {
				err = e.driver.Apply(ctx, send, next)
			}
		}
	}
	if err != nil {
		e.log.Error("runtime update failed; converging through a reload", "ops", len(p.Ops), "err", err)
		e.publish(dcm.Event{Type: dcm.EventSyncError, Reason: string(dcm.ReasonRuntimeError), Message: err.Error(),
			Ops: p.Ops, Backends: backendsOf(p.Ops)})
		// Learn what HAProxy really did before rendering a configuration
		// that converges from it.
		e.observe(ctx, nil)
		e.reload(ctx, plan.Reload(desired, e.cfg.Caps, dcm.ReasonRuntimeError), seen)
		return
	}
	acked := time.Now()
	if !seen.IsZero() {
		e.metrics.EventToApplied.Observe(acked.Sub(seen).Seconds())
	}
	e.recordOps(p.Ops, false)
	e.commit(p.Next)
	e.writeFiles(p.Next)
	e.mu.Lock()
	e.updates.Dynamic++
	e.mu.Unlock()
	e.metrics.Updates.WithLabelValues("dynamic").Inc()
	e.log.Info("applied at runtime", "ops", len(p.Ops), "waiting", p.Waiting)
	touched := backendsOf(p.Ops)
	e.publish(dcm.Event{Type: dcm.EventApplied, Time: acked, Message: fmt.Sprintf("%d runtime commands applied", len(p.Ops)),
		Ops: p.Ops, Backends: touched, State: backendsNamed(p.Next, e.desiredNow(), touched)})
}

// reload loads the configuration rendered from p.Next, then applies p.Ops to
// the new worker (what a file cannot express).
func (e *Engine) reload(ctx context.Context, p dcm.Plan, seen time.Time) {
	reasons := p.Reasons
	start := time.Now()
	res, err := e.driver.Reload(ctx, p.Next)
	dur := time.Since(start)
	info := &dcm.ReloadInfo{Time: start, Reasons: reasons, Duration: dur.Seconds(), OldPID: res.OldPID, NewPID: res.NewPID}
	if err != nil {
		info.Error = err.Error()
		for _, r := range reasons {
			e.metrics.ReloadFailures.WithLabelValues(string(r)).Inc()
		}
		e.mu.Lock()
		e.lastReload = info
		e.retry.reasons = reasons
		e.retry.delay = nextRetryDelay(e.retry.delay, e.cfg.RetryReloadAfter)
		e.retry.at = time.Now().Add(e.retry.delay)
		if res.NewPID != 0 {
			e.pid = res.NewPID
		}
		e.mu.Unlock()
		msg := fmt.Sprintf("reload for %v failed, old worker keeps serving: %v", reasons, err)
		if res.NewPID != 0 {
			// The master did reload: the new worker serves the files just
			// written, but dcm cannot talk to it. The retry reloads again
			// rather than trust runtime state it could not check.
			msg = fmt.Sprintf("reload for %v: new worker %d serves the new configuration, but dcm cannot reach it; retrying: %v",
				reasons, res.NewPID, err)
		}
		e.log.Error("reload failed", "reasons", reasons, "new_pid", res.NewPID, "err", err)
		e.publish(dcm.Event{Type: dcm.EventReload, Reload: info, Reason: "failed", Message: msg})
		return
	}
	for _, r := range reasons {
		e.metrics.Reloads.WithLabelValues(string(r)).Inc()
	}
	e.metrics.ReloadDuration.Observe(dur.Seconds())
	e.commit(plan.AfterReload(p.Next))
	if len(p.Ops) > 0 {
		// Should this fail, the state stays AfterReload and the next sync
		// plans the same ops again.
		if err := e.driver.Apply(ctx, p.Ops, p.Next); err != nil {
			e.log.Error("restoring runtime state after the reload failed", "err", err)
			e.publish(dcm.Event{Type: dcm.EventSyncError, Reason: string(dcm.ReasonRuntimeError), Message: err.Error(), Ops: p.Ops})
		} else {
			e.commit(p.Next)
		}
	}
	if !seen.IsZero() {
		e.metrics.EventToApplied.Observe(time.Since(seen).Seconds())
	}
	e.recordOps(p.Ops, true)
	e.mu.Lock()
	e.lastReload = info
	e.retry.reasons, e.retry.delay = nil, 0
	e.reloads++
	e.pid = res.NewPID
	e.updates.Reload++
	e.mu.Unlock()
	e.metrics.Updates.WithLabelValues("reload").Inc()
	e.log.Info("reloaded", "reasons", reasons, "duration", dur.Round(time.Millisecond), "old_pid", res.OldPID, "new_pid", res.NewPID)
	e.publish(dcm.Event{Type: dcm.EventReload, Reload: info, Ops: p.Ops,
		Message: fmt.Sprintf("reloaded in %s for %v (worker %d → %d)", dur.Round(time.Millisecond), reasons, res.OldPID, res.NewPID)})
	e.observe(ctx, nil)
}

// maxRetryDelay bounds the backoff of a failing reload: a configuration
// HAProxy keeps refusing is still tried again every minute, so a fix outside
// dcm (a certificate, a file system) is picked up without a restart.
const maxRetryDelay = time.Minute

// nextRetryDelay is the wait before retrying a reload that failed after a
// wait of prev (0 for the first failure): first, doubling per failure up to
// maxRetryDelay, so a broken configuration is not hammered on every event.
func nextRetryDelay(prev, first time.Duration) time.Duration {
	return min(max(prev*2, first), maxRetryDelay)
}

func (e *Engine) writeFiles(st dcm.State) {
	start := time.Now()
	if err := e.driver.Write(st); err != nil {
		// The runtime is right but the files are not: a reload now would
		// lose state, so make the next sync reload from a fresh render.
		e.log.Error("writing configuration files failed", "err", err)
		e.publish(dcm.Event{Type: dcm.EventSyncError, Reason: "write-failed", Message: err.Error()})
		e.RequestReload(dcm.ReasonRuntimeError)
		return
	}
	e.metrics.ConfigWrite.Observe(time.Since(start).Seconds())
}

func (e *Engine) commit(st dcm.State) {
	e.mu.Lock()
	e.actual = st
	e.mu.Unlock()
	e.metrics.setState(st)
}

// waitingBackends lists (by HAProxy name) the backends with a retired server
// (its endpoint is gone, it is in maint) that HAProxy has not yet reported
// idle: they are read back every IdlePollEvery so that del server follows
// the last request soon.
func (e *Engine) waitingBackends() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var names []string
	for _, b := range e.actual.Backends {
		db, desired := e.desired.Backend(b.Name)
		for _, s := range b.Servers {
			retired := s.Endpoint != "" && (!desired || !hasEndpoint(db, s.Endpoint))
			if retired && s.State == dcm.StateMaint && !s.Deletable() {
				names = append(names, b.ProxyName())
				break
			}
		}
	}
	return names
}

// observe reads HAProxy's view of some backends (all when names, HAProxy's
// names for them, is nil) and merges it into the engine's state. It reports true when HAProxy lacks a
// backend dcm manages, which only a reload can repair.
func (e *Engine) observe(ctx context.Context, names []string) (missing bool) {
	missing, _ = e.observeWith(ctx, names, true)
	return missing
}

// observeWith is observe; without traffic it reads only admin state,
// address, weight and health (cheap), and keeps the traffic figures dcm had.
func (e *Engine) observeWith(ctx context.Context, names []string, traffic bool) (missing bool, err error) {
	var obs map[string][]dcm.Server
	switch {
	case names == nil:
		obs, err = e.driver.Observe(ctx)
	case traffic:
		obs, err = e.driver.ObserveBackends(ctx, names)
	default:
		obs, err = e.driver.ObserveStates(ctx, names)
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			e.log.Warn("observing HAProxy failed", "err", err)
		}
		return false, err
	}
	if names == nil {
		defer e.metrics.ObservationPasses.Inc()
	}
	e.mu.Lock()
	before := e.actual
	merged, drift, missing := merge(e.actual, obs, names, traffic)
	e.actual = merged
	changed := healthChanged(before, merged)
	switch {
	case len(drift) > 0:
		// Someone changed HAProxy behind dcm's back (or it lost state):
		// say what differs; the sync that follows sets it back.
		touched := slices.Compact(sortStrings(append(slices.Clone(changed), driftBackends(drift)...)))
		e.hub.Publish(dcm.Event{Type: dcm.EventObserved, Reason: DriftReason, Backends: touched,
			State:   backendsNamed(merged, e.desired, touched),
			Message: fmt.Sprintf("HAProxy differs from dcm in %d places; repairing: %s", len(drift), strings.Join(drift, "; "))})
	case len(changed) > 0:
		e.hub.Publish(dcm.Event{Type: dcm.EventObserved, Backends: changed, State: backendsNamed(merged, e.desired, changed),
			Message: fmt.Sprintf("HAProxy reports new state or health in %d backends", len(changed))})
	}
	e.mu.Unlock()
	if len(drift) > 0 {
		e.metrics.PredictionMismatch.Add(float64(len(drift)))
		e.log.Warn("HAProxy differs from dcm's state; the next sync repairs it", "differences", drift)
	}
	e.metrics.setState(merged)
	return missing, nil
}

// DriftReason marks the observed event that reports HAProxy differing from
// dcm's state.
const DriftReason = "drift"

// driftBackends takes the backend names out of merge's drift lines
// ("backend/server: …" or "backend: …").
func driftBackends(drift []string) []string {
	out := make([]string, 0, len(drift))
	for _, d := range drift {
		name, _, _ := strings.Cut(d, ": ")
		name, _, _ = strings.Cut(name, "/")
		out = append(out, name)
	}
	return out
}

// healthChanged lists the backends where a server's admin state or health
// differs between two observations (sessions come and go too often to say).
func healthChanged(a, b dcm.State) []string {
	var out []string
	for _, nb := range b.Backends {
		ob, ok := a.Backend(nb.Name)
		if !ok {
			continue
		}
		if !slices.EqualFunc(ob.Servers, nb.Servers, func(x, y dcm.Server) bool {
			return x.Name == y.Name && x.State == y.State && x.Health == y.Health
		}) {
			out = append(out, nb.Name)
		}
	}
	return out
}

// merge takes HAProxy's figures and admin state as the truth. A server
// HAProxy lacks is dropped from the state (the planner adds it back); one dcm
// does not know is kept so the planner retires it. names are the backends
// obs was asked for (nil: all of them); obs and names use HAProxy's names
// (ProxyName), the state dcm's. One of them missing from obs is
// reported, since only a reload can bring a backend back. Without traffic,
// obs carries no sessions figures: the ones dcm had are kept, and a server
// changed since its last traffic observation stays unproven idle.
func merge(st dcm.State, obs map[string][]dcm.Server, names []string, traffic bool) (_ dcm.State, drift []string, missing bool) {
	asked := func(string) bool { return true }
	if names != nil {
		set := make(map[string]bool, len(names))
		for _, n := range names {
			set[n] = true
		}
		asked = func(n string) bool { return set[n] }
	}
	out := dcm.State{Backends: slices.Clone(st.Backends), Pool: st.Pool}
	for i, b := range out.Backends {
		seen, ok := obs[b.ProxyName()]
		if !ok {
			if asked(b.ProxyName()) {
				drift = append(drift, b.Name+": backend missing in HAProxy")
				missing = true
			}
			continue
		}
		known := make(map[string]dcm.Server, len(b.Servers))
		for _, s := range b.Servers {
			known[s.Name] = s
		}
		servers := make([]dcm.Server, 0, len(seen))
		for _, o := range seen {
			s, ok := known[o.Name]
			if !ok {
				drift = append(drift, b.Name+"/"+o.Name+": unknown server")
				o.Origin = dcm.OriginRuntime
				o.Unobserved = !traffic
				servers = append(servers, o)
				continue
			}
			delete(known, o.Name)
			if s.Addr != o.Addr && o.Addr != "" && s.Addr != "" || s.Port != o.Port && s.Addr != "" || s.Weight != o.Weight || s.State != o.State {
				drift = append(drift, fmt.Sprintf("%s/%s: dcm has %s:%d w%d %s, HAProxy %s:%d w%d %s", b.Name, s.Name,
					s.Addr, s.Port, s.Weight, s.State, o.Addr, o.Port, o.Weight, o.State))
			}
			if s.Addr != "" || o.Addr != "0.0.0.0" {
				s.Addr, s.Port = o.Addr, o.Port
			}
			s.Weight, s.State, s.Health = o.Weight, o.State, o.Health
			if traffic {
				s.Sessions, s.Queued, s.UsedConn, s.IdleConn = o.Sessions, o.Queued, o.UsedConn, o.IdleConn
				s.Unobserved = false
			}
			servers = append(servers, s)
		}
		for name := range known {
			drift = append(drift, b.Name+"/"+name+": missing in HAProxy")
		}
		dcm.SortServers(servers)
		b.Servers = servers
		out.Backends[i] = b
	}
	slices.Sort(drift)
	return out, drift, missing
}

// processEvent records what happened to the HAProxy master. A restarted
// master loaded the files on disk, which equal the state dcm applied; the
// observe that follows restores what a file cannot hold (drain).
func (e *Engine) processEvent(ctx context.Context, ev haproxy.ProcessEvent) {
	msg := fmt.Sprintf("HAProxy master %d %s", ev.PID, ev.Type)
	if ev.Err != nil {
		msg += ": " + ev.Err.Error()
	}
	switch ev.Type {
	case haproxy.ProcessRestarted:
		e.log.Warn("HAProxy was restarted from the files on disk", "pid", ev.PID)
		e.refreshInfo(ctx)
		e.mu.Lock()
		e.started, e.running = time.Now(), true
		// The files equal the state dcm applied, so that is what the new
		// master loaded, less what a file cannot hold: the observe that
		// follows then reports only real differences as drift.
		e.actual = plan.AfterReload(e.actual)
		e.mu.Unlock()
	default:
		e.log.Error("HAProxy master exited unexpectedly", "pid", ev.PID, "err", ev.Err)
		e.mu.Lock()
		e.running = false
		e.mu.Unlock()
	}
	e.publish(dcm.Event{Type: dcm.EventHAProxy, Reason: string(ev.Type), Message: msg})
}

func (e *Engine) refreshInfo(ctx context.Context) {
	info, err := e.driver.Info(ctx)
	if err != nil {
		e.log.Warn("show info failed", "err", err)
		return
	}
	e.mu.Lock()
	e.pid = info.Pid
	e.mu.Unlock()
}

func (e *Engine) publish(ev dcm.Event) dcm.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hub.Publish(ev)
}

// backendsNamed picks backends of st by name (names sorted, as backendsOf
// gives them), marked for clients as markRetired does.
func backendsNamed(st dcm.State, d dcm.Desired, names []string) []dcm.Backend {
	out := make([]dcm.Backend, 0, len(names))
	for _, n := range names {
		if b, ok := st.Backend(n); ok {
			out = append(out, b)
		}
	}
	return markRetired(out, d)
}

// markRetired flags, for clients, the servers whose endpoint Kubernetes no
// longer has: with it a snapshot says what Kubernetes asks, so the what-if
// planner can start from a snapshot alone. Backends are copied only when a
// flag changes.
func markRetired(backends []dcm.Backend, d dcm.Desired) []dcm.Backend {
	out := backends
	copied := false
	for i, b := range backends {
		db, ok := d.Backend(b.Name)
		var servers []dcm.Server
		for k, s := range b.Servers {
			retired := s.Endpoint != "" && (!ok || !hasEndpoint(db, s.Endpoint))
			if retired == s.Retired {
				continue
			}
			if servers == nil {
				servers = slices.Clone(b.Servers)
			}
			servers[k].Retired = retired
		}
		if servers == nil {
			continue
		}
		if !copied {
			out, copied = slices.Clone(backends), true
		}
		b.Servers = servers
		out[i] = b
	}
	return out
}

func sortStrings(s []string) []string {
	slices.Sort(s)
	return s
}

// backendsOf lists the backends ops touch: a server op's, and those whose
// entries a map replace changes.
func backendsOf(ops []dcm.Op) []string {
	var out []string
	for _, o := range ops {
		if o.Kind != dcm.OpMapReplace {
			out = append(out, o.Backend)
			continue
		}
		for _, e := range o.Set {
			out = append(out, e.Backend)
		}
		for _, e := range o.Del {
			out = append(out, e.Backend)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Rejected records an object dcm refuses (the kube source calls it).
func (e *Engine) Rejected(obj dcm.ObjectRef, reason, message string) {
	e.log.Warn("object rejected; everything else keeps serving", "object", obj.String(), "reason", reason, "message", message)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rejected[obj] = dcm.Rejection{Object: obj, Reason: reason, Message: message}
	// Counted once listed: whoever sees the counter move finds the
	// rejection in the snapshot.
	e.metrics.Rejected.WithLabelValues(reason).Inc()
	e.hub.Publish(dcm.Event{Type: dcm.EventRejected, Object: &obj, Reason: reason, Message: message})
}

// Accepted records that a rejected object is valid again or gone.
func (e *Engine) Accepted(obj dcm.ObjectRef) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.rejected[obj]; !ok {
		return
	}
	delete(e.rejected, obj)
	e.hub.Publish(dcm.Event{Type: dcm.EventAccepted, Object: &obj, Message: obj.String() + " is accepted again"})
}

// Notice records what the kube source says about what it watches (the
// OpenShift Routes API not served, then served): the source logs it, the
// event puts it on the portal.
func (e *Engine) Notice(reason, message string) {
	e.publish(dcm.Event{Type: dcm.EventSource, Reason: reason, Message: message})
}

// Action records what someone did through the API or portal.
func (e *Engine) Action(actor, message string, obj dcm.ObjectRef) {
	e.log.Info("action", "actor", actor, "message", message)
	e.publish(dcm.Event{Type: dcm.EventAction, Actor: actor, Message: message, Object: &obj})
}

func (e *Engine) desiredNow() dcm.Desired {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.desired
}

// Snapshot is the whole picture at the current seq.
func (e *Engine) Snapshot() dcm.Snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	routes := make([]dcm.Route, 0, len(e.desired.Backends))
	for _, b := range e.desired.Backends {
		routes = append(routes, b.Route)
	}
	rejected := make([]dcm.Rejection, 0, len(e.rejected))
	for _, r := range e.rejected {
		rejected = append(rejected, r)
	}
	slices.SortFunc(rejected, func(a, b dcm.Rejection) int {
		switch {
		case a.Object.String() < b.Object.String():
			return -1
		case a.Object.String() > b.Object.String():
			return 1
		}
		return 0
	})
	var last *dcm.ReloadInfo
	if e.lastReload != nil {
		c := *e.lastReload
		last = &c
	}
	return dcm.Snapshot{
		Seq:  e.hub.Seq(),
		Mode: e.cfg.Caps.Mode,
		Caps: e.cfg.Caps,
		HAProxy: dcm.HAProxyInfo{
			Version: e.driver.Version().String(), PID: e.pid, Started: e.started, Reloads: e.reloads, Running: e.running,
		},
		Updates:    e.updates,
		LastReload: last,
		Routes:     routes,
		Backends:   markRetired(e.actual.Backends, e.desired),
		Pool:       slices.Clone(e.actual.Pool),
		Rejected:   rejected,
	}
}

// keepBusy puts back into next the servers whose del server HAProxy
// refused ("<proxy>/<server>"), as they were in actual but in maint and not
// yet observed idle, and drops their del ops. Of the ca-del ops the driver
// did not send (unsent), those of a CA a kept server still uses are dropped
// too (planned again with its last server's deletion); the others are
// returned to send. It reports false when a server's backend is not in next
// any more (its spare went back to the pool): that state cannot hold the
// server, and a reload converges.
func keepBusy(actual dcm.State, ops []dcm.Op, next dcm.State, servers []string, unsent []dcm.Op) (_ []dcm.Op, _ dcm.State, send []dcm.Op, ok bool) {
	next.Backends = slices.Clone(next.Backends)
	kept := map[[2]string]bool{}
	for _, ref := range servers {
		proxy, name, _ := strings.Cut(ref, "/")
		ai := slices.IndexFunc(actual.Backends, func(b dcm.Backend) bool { return b.ProxyName() == proxy })
		if ai < 0 {
			return nil, dcm.State{}, nil, false
		}
		ab := actual.Backends[ai]
		si := slices.IndexFunc(ab.Servers, func(s dcm.Server) bool { return s.Name == name })
		ni := slices.IndexFunc(next.Backends, func(b dcm.Backend) bool { return b.Name == ab.Name && b.ProxyName() == proxy })
		if si < 0 || ni < 0 {
			return nil, dcm.State{}, nil, false
		}
		srv := ab.Servers[si]
		srv.State, srv.Unobserved = dcm.StateMaint, true
		nb := &next.Backends[ni]
		pos, found := slices.BinarySearchFunc(nb.Servers, name, func(s dcm.Server, n string) int { return strings.Compare(s.Name, n) })
		if !found {
			nb.Servers = slices.Insert(slices.Clone(nb.Servers), pos, srv)
		}
		kept[[2]string{ab.Name, name}] = true
	}
	used := map[string]bool{}
	for _, c := range dcm.CAsOf(next.Backends) {
		used[c.Version] = true
	}
	held := map[string]bool{} // unsent ca-del ops whose CA a kept server uses
	for _, o := range unsent {
		if o.Upstream != nil && used[o.Upstream.Version] {
			held[o.Upstream.Version] = true
		} else {
			send = append(send, o)
		}
	}
	ops = slices.DeleteFunc(slices.Clone(ops), func(o dcm.Op) bool {
		return o.Kind == dcm.OpDelServer && kept[[2]string{o.Backend, o.Server}] ||
			o.Kind == dcm.OpCADel && o.Upstream != nil && held[o.Upstream.Version]
	})
	return ops, next, send, true
}
