package engine

import (
	"slices"

	"github.com/dcm-router/dcm/dcm"
)

// GatewayBindsListener is what a Source may also be: it hears which
// Gateway binds HAProxy has beyond the pre-bound ones
// (dcm.State.GatewayBinds) each time they change, so that a listener on
// another port is reported Programmed once a reload has bound it, not
// before.
type GatewayBindsListener interface {
	GatewayBound(binds []dcm.GatewayBind)
}

// tellGatewayBinds tells the source the Gateway binds of the state HAProxy
// runs now when they changed since it was last told. Called by the sync
// (and at start), never with mu held: the source takes its own locks.
func (e *Engine) tellGatewayBinds(st dcm.State) {
	l, ok := e.source.(GatewayBindsListener)
	if !ok || (e.toldBinds && slices.Equal(e.boundBinds, st.GatewayBinds)) {
		return
	}
	e.boundBinds, e.toldBinds = slices.Clone(st.GatewayBinds), true
	l.GatewayBound(slices.Clone(st.GatewayBinds))
}
