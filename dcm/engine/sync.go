package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/plan"
)

// sync runs one round of the loop. When HAProxy cannot be brought in step
// the round says so in the log and events, and a later round converges
// through a reload.
func (e *Engine) sync(ctx context.Context, req syncRequest) {
	e.syncing.Lock() // FlushFiles waits for the sync in flight to queue its files
	defer e.syncing.Unlock()
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
	e.setDesired(desired)
	pruneOverrides(desired, e.overrides)
	desired = withOverrides(desired, e.overrides)
	e.mu.Unlock()

	var p dcm.Plan
	if len(req.reasons) > 0 {
		p = plan.Reload(desired, e.cfg.Caps, req.reasons...)
	} else if changed, ok := e.changedSince(actual, desired); ok {
		p = plan.ComputeChanged(actual, desired, e.cfg.Caps, changed)
	} else {
		p = plan.Compute(actual, desired, e.cfg.Caps)
	}
	if p.Empty() {
		e.planned(actual, desired)
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
		if ops, next, send, ok := plan.KeepBusy(actual, p.Ops, p.Next, busy.Servers, busy.Unsent); ok {
			// HAProxy refused a del server: plan.KeepBusy is the rule (the
			// server stays until idle, no reload); what the driver did not
			// send after it, but a CA file a kept server uses, goes now.
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
			Ops: p.Ops, Backends: plan.BackendsOf(p.Ops)})
		// Learn what HAProxy really did before rendering a configuration
		// that converges from it.
		e.observe(ctx, nil)
		e.reload(ctx, plan.Reload(desired, e.cfg.Caps, dcm.ReasonRuntimeError), seen)
		return
	}
	e.appliedAtRuntime(p, desired, seen)
}

// appliedAtRuntime records a plan HAProxy took at runtime: its state, the
// files to write behind the sync, the figures and the event.
func (e *Engine) appliedAtRuntime(p dcm.Plan, desired dcm.Desired, seen time.Time) {
	acked := time.Now()
	if !seen.IsZero() {
		e.metrics.EventToApplied.Observe(acked.Sub(seen).Seconds())
	}
	e.recordOps(p.Ops, false)
	e.commit(p.Next)
	e.planned(p.Next, desired)
	e.writeFiles(p.Next)
	e.mu.Lock()
	e.updates.Dynamic++
	e.mu.Unlock()
	e.metrics.Updates.WithLabelValues("dynamic").Inc()
	e.log.Info("applied at runtime", "ops", len(p.Ops), "waiting", p.Waiting)
	touched := plan.BackendsOf(p.Ops)
	e.publish(dcm.Event{Type: dcm.EventApplied, Time: acked, Message: fmt.Sprintf("%d runtime commands applied", len(p.Ops)),
		Ops: p.Ops, Backends: touched, State: plan.BackendsNamed(p.Next, e.desiredNow(), touched)})
}

// reload loads the configuration rendered from p.Next, then applies p.Ops to
// the new worker (what a file cannot express).
func (e *Engine) reload(ctx context.Context, p dcm.Plan, seen time.Time) {
	// No write of an older state may land after the reload's own.
	e.files.flush()
	e.readTrafficBeforeReload(ctx)
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
		// plans the same ops again (nothing recorded as planned: it plans
		// every backend).
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
	e.markApplied()
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

// writeFiles has the files of st written behind the sync (fileWriter).
func (e *Engine) writeFiles(st dcm.State) { e.files.queue(st) }

// writeFilesNow writes the files of st, on the file writer's goroutine.
func (e *Engine) writeFilesNow(st dcm.State) error {
	start := time.Now()
	if err := e.driver.Write(st); err != nil {
		return err
	}
	e.metrics.ConfigWrite.Observe(time.Since(start).Seconds())
	return nil
}

// writeFailed: the runtime is right but the files are not, so a reload now
// would lose state: the next sync reloads from a fresh render.
func (e *Engine) writeFailed(err error) {
	e.log.Error("writing configuration files failed", "err", err)
	e.publish(dcm.Event{Type: dcm.EventSyncError, Reason: "write-failed", Message: err.Error()})
	e.RequestReload(dcm.ReasonRuntimeError)
}

func (e *Engine) commit(st dcm.State) {
	e.mu.Lock()
	e.setActual(st)
	e.mu.Unlock()
	e.tellGatewayBinds(st)
}
