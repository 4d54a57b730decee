// Package engine runs dcm's sync loop: desired state from Kubernetes and
// observed state from HAProxy go into the planner, and the plan goes to
// HAProxy through the runtime API, or through a reload when it must.
package engine

import (
	"context"
	"fmt"
	"log/slog"
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
	// Apply applies ops; next is the state they lead to (which Write writes).
	Apply(ctx context.Context, ops []dcm.Op, next dcm.State) error
	Write(st dcm.State) error
	Reload(ctx context.Context, st dcm.State) (haproxy.ReloadResult, error)
	Observe(ctx context.Context) (map[string][]dcm.Server, error)
	ObserveBackends(ctx context.Context, names []string) (map[string][]dcm.Server, error)
	ObserveStates(ctx context.Context, names []string) (map[string][]dcm.Server, error)
	// Share gives the driver st's backends to hold in place of the ones it
	// last wrote that render the same (st came from an observation).
	Share(st dcm.State)
	Info(ctx context.Context) (haproxy.Info, error)
	Version() haproxy.Version
	Events() <-chan haproxy.ProcessEvent
	// Close stops HAProxy (when the driver started it) and waits for it.
	Close() error
	// ReadFiles reads the files on disk; Render renders a state without writing it.
	ReadFiles() (haproxy.Files, error)
	Render(st dcm.State) (haproxy.Files, error)
	// SetMaxConn changes the global maxconn at runtime and in the files;
	// reload says the running worker cannot take it (it is above its start
	// value) and the next rendering carries it.
	SetMaxConn(ctx context.Context, n int) (reload bool, err error)
	// ReadTraffic reads the backends' (and with servers, the servers')
	// traffic counters and the pid of the worker they belong to.
	ReadTraffic(ctx context.Context, servers bool) (haproxy.Traffic, error)
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
	// TrafficEvery is how often HAProxy's traffic counters are read into
	// the per-route series (traffic.go); negative turns them off.
	TrafficEvery time.Duration
	// TrafficPerServer adds per-server series: their number grows with
	// the pods, not the routes, so they are opt-in.
	TrafficPerServer bool
	// WriteGap is the least time between two writes of the files while
	// syncs keep coming (fileWriter); 0 is a second, negative none.
	WriteGap time.Duration
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
	if c.TrafficEvery == 0 {
		c.TrafficEvery = 15 * time.Second
	}
	if c.EventBuffer <= 0 {
		c.EventBuffer = 10000
	}
	switch {
	case c.WriteGap == 0:
		c.WriteGap = time.Second
	case c.WriteGap < 0:
		c.WriteGap = 0
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
	// boundBinds are the Gateway binds last told to the source
	// (tellGatewayBinds, toldBinds once told); the sync's own.
	boundBinds []dcm.GatewayBind
	toldBinds  bool

	mu     sync.Mutex // guards everything below; events are published under it so snapshots and seq agree
	actual dcm.State
	// generation counts the changes of actual (ActualState).
	generation uint64
	desired    dcm.Desired
	updates    dcm.Updates
	lastReload *dcm.ReloadInfo
	reloads    int
	started    time.Time
	pid        int
	running    bool
	ready      bool
	rejected   map[dcm.ObjectRef]dcm.Rejection
	// gateways is the Gateway API picture the kube source last reported.
	gateways *dcm.GatewayAPI
	// observeCursor is where the periodic observation pass continues.
	observeCursor int
	// overrides are the admins' changes on top of Kubernetes, by endpoint.
	overrides map[string]override
	// applied is the desired state HAProxy serves (markApplied), for the
	// fleet view; appliedValid once a sync found it so.
	applied      dcm.Desired
	appliedValid bool
	// expectations are previews whose changes are being compared with what
	// the engine applies.
	expectations []*expectation
	// track lets a change cost what it changes (tracking.go).
	track tracking
	// files writes the applied states' files behind the syncs (files.go);
	// set by Run before the first sync.
	files *fileWriter
	// syncing is held for each sync, so FlushFiles can wait for the one in
	// flight (which may have applied a change and not queued its files yet).
	syncing sync.Mutex
	// traffic keeps the per-route traffic totals, under a lock of its own
	// (traffic_loop.go).
	traffic trafficReader
	// digests hash desired states for Status, under digestMu: hashing a
	// large change must not hold up the sync loop.
	digestMu sync.Mutex
	digests  digests
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

// ActualState is the state dcm holds of HAProxy, and a number that
// changes whenever it does: the access log names routes and pods by it,
// and indexes it again only when the number has moved. The state is
// shared: read it, never change it.
func (e *Engine) ActualState() (dcm.State, uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.actual, e.generation
}

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
	files := newFileWriter(e.writeFilesNow, e.writeFailed, e.cfg.WriteGap)
	defer files.close() // before the driver's Close: the last state is written
	e.mu.Lock()
	e.files = files
	// HAProxy loaded initial from the file, where drain is written as
	// maint: expect that, so the first read-back reports no drift.
	e.setDesired(desired)
	e.setActual(plan.AfterReload(initial))
	e.started, e.running = time.Now(), true
	e.mu.Unlock()
	e.tellGatewayBinds(initial)
	e.refreshInfo(ctx)
	// Drain cannot be written in a configuration: restore it at runtime.
	e.sync(ctx, syncRequest{observe: true})
	e.mu.Lock()
	e.ready = true
	e.mu.Unlock()
	defer e.startTraffic(ctx)()
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

func (e *Engine) publish(ev dcm.Event) dcm.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hub.Publish(ev)
}

func (e *Engine) desiredNow() dcm.Desired {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.desired
}
