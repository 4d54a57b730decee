package engine

import (
	"fmt"

	"github.com/dcm-router/dcm/dcm"
)

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

// GatewayView records the Gateway API dcm serves and the status the kube
// source computed for it, for the snapshot and the feed.
func (e *Engine) GatewayView(v dcm.GatewayAPI) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gateways = &v
	c := v
	e.hub.Publish(dcm.Event{Type: dcm.EventGateways, Message: fmt.Sprintf("Gateway API: %d Gateways, %d HTTPRoutes", len(v.Gateways), len(v.HTTPRoutes)), Gateways: &c})
}
