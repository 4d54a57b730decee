package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/plan"
)

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
		e.setActual(plan.AfterReload(e.actual))
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
