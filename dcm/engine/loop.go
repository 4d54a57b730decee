package engine

import (
	"context"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
)

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
