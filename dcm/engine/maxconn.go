package engine

import (
	"context"
	"fmt"

	"github.com/dcm-router/dcm/dcm"
)

// SetMaxConn changes HAProxy's global maxconn for an admin. Lowering it, or
// raising it back up to the value HAProxy started with, is a runtime command;
// above that a new worker must start, so the engine reloads with a reason
// of its own. The value holds until dcm restarts, which starts from
// --max-connections again.
func (e *Engine) SetMaxConn(ctx context.Context, actor string, n int) error {
	e.FlushFiles() // the driver rewrites the files it last wrote, with n
	reload, err := e.driver.SetMaxConn(ctx, n)
	if err != nil {
		return fmt.Errorf("set maxconn %d: %w", n, err)
	}
	how := "at runtime"
	if reload {
		how = "by a reload: above the maxconn the worker started with"
		e.RequestReload(dcm.ReasonMaxConnRaised)
	}
	e.Action(actor, fmt.Sprintf("global maxconn set to %d %s", n, how), dcm.ObjectRef{})
	return nil
}
