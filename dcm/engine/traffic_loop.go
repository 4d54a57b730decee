package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// startTraffic reads HAProxy's traffic counters every TrafficEvery in a
// goroutine of its own, apart from the sync loop: one show stat of 10,000
// backends takes tens of milliseconds to answer and longer to parse, which
// must hold up neither a sync nor a scrape. The returned func stops it and
// waits, so that the driver is not closed under a read.
func (e *Engine) startTraffic(ctx context.Context) (stop func()) {
	if e.cfg.TrafficEvery < 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(e.cfg.TrafficEvery)
		defer t.Stop()
		for {
			e.readTraffic(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// trafficReader holds the running totals; its lock makes one read and
// fold at a time (the periodic one, or the one before a reload).
type trafficReader struct {
	mu   sync.Mutex
	book *trafficBook
}

// readTrafficBeforeReload reads the counters of the worker a reload is
// about to replace: what it served since the last periodic read would
// otherwise be lost with it (in --mode=reload, up to an interval of
// traffic at every change). It costs the reload one show stat.
func (e *Engine) readTrafficBeforeReload(ctx context.Context) {
	if e.cfg.TrafficEvery > 0 {
		e.readTraffic(ctx)
	}
}

// readTraffic folds one read into the totals and publishes them to the
// collector.
func (e *Engine) readTraffic(ctx context.Context) {
	e.traffic.mu.Lock()
	defer e.traffic.mu.Unlock()
	if e.traffic.book == nil {
		e.traffic.book = newTrafficBook()
	}
	book := e.traffic.book
	start := time.Now()
	read, err := e.driver.ReadTraffic(ctx, e.cfg.TrafficPerServer)
	if err != nil {
		if !errors.Is(err, context.Canceled) && ctx.Err() == nil {
			e.metrics.TrafficErrors.Inc()
			e.log.Warn("reading HAProxy's traffic counters failed", "err", err)
		}
		return
	}
	// The carriers are taken after the read: should a reload come
	// between the two, the new worker's first requests to a route that
	// moved are not counted (the next read starts from them), never
	// counted twice.
	e.mu.Lock()
	by := carriers(e.actual)
	e.mu.Unlock()
	book.add(read, by, time.Now())
	e.metrics.Traffic.set(book.view())
	e.metrics.TrafficRead.Observe(time.Since(start).Seconds())
}

// TrafficRates are the recent request and error rates per route, by backend
// name (GET /api/v1/traffic, the portal's sparklines).
func (e *Engine) TrafficRates() dcm.TrafficRates {
	out := dcm.TrafficRates{Every: max(0, e.cfg.TrafficEvery.Seconds()), Backends: map[string]dcm.TrafficSeries{}}
	for _, rt := range e.metrics.Traffic.current() {
		out.Backends[rt.Backend] = dcm.TrafficSeries{Requests: rt.requests, Errors: rt.errs}
	}
	return out
}
