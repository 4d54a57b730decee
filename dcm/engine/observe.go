package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
)

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

// waitingBackends lists (by HAProxy name) the backends with a retired server
// HAProxy has not yet reported idle (plan.WaitingBackends): they are read
// back every IdlePollEvery so that del server follows the last request soon.
func (e *Engine) waitingBackends() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return sortStrings(slices.Collect(maps.Keys(e.track.waiting)))
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
	merged, drift, missing := plan.Merge(e.actual, obs, names, traffic)
	e.setActual(merged)
	changed := plan.HealthChanged(before, merged)
	switch {
	case len(drift) > 0:
		// Someone changed HAProxy behind dcm's back (or it lost state):
		// say what differs; the sync that follows sets it back.
		touched := slices.Compact(sortStrings(append(slices.Clone(changed), plan.DriftBackends(drift)...)))
		e.hub.Publish(dcm.Event{Type: dcm.EventObserved, Reason: DriftReason, Backends: touched,
			State:   plan.BackendsNamed(merged, e.desired, touched),
			Message: fmt.Sprintf("HAProxy differs from dcm in %d places; repairing: %s", len(drift), strings.Join(drift, "; "))})
	case len(changed) > 0:
		e.hub.Publish(dcm.Event{Type: dcm.EventObserved, Backends: changed, State: plan.BackendsNamed(merged, e.desired, changed),
			Message: fmt.Sprintf("HAProxy reports new state or health in %d backends", len(changed))})
	}
	e.mu.Unlock()
	// The driver holds the backends it last wrote; those merged replaced
	// but that render as they did, it holds as merged has them: one copy.
	// Only the replaced ones are handed over: a chunk of the periodic
	// pass replaces a few of 10,000.
	e.driver.Share(dcm.State{Backends: pickBackends(merged, movedBackends(before.Backends, merged.Backends))})
	if len(drift) > 0 {
		e.metrics.PredictionMismatch.Add(float64(len(drift)))
		e.log.Warn("HAProxy differs from dcm's state; the next sync repairs it", "differences", drift)
	}
	return missing, nil
}

// DriftReason marks the observed event that reports HAProxy differing from
// dcm's state.
const DriftReason = "drift"

// pickBackends are the backends of st named by names (sorted), in order.
func pickBackends(st dcm.State, names []string) []*dcm.Backend {
	out := make([]*dcm.Backend, 0, len(names))
	for _, n := range names {
		if b, ok := st.Backend(n); ok {
			out = append(out, b)
		}
	}
	return out
}
