package dcm

import (
	"errors"
	"time"
)

// ErrNotFound says an action named a backend or server that does not exist.
var ErrNotFound = errors.New("not found")

// EventType classifies the audit log.
type EventType string

const (
	// EventApplied: a plan's ops were acknowledged by HAProxy.
	EventApplied EventType = "applied"
	// EventReload: HAProxy reloaded (or failed to), with reasons.
	EventReload EventType = "reload"
	// EventRejected: a Kubernetes object was refused; everything else goes on.
	EventRejected EventType = "rejected"
	// EventAccepted: a previously rejected object is valid again.
	EventAccepted EventType = "accepted"
	// EventSyncError: a sync failed; the next one converges through a reload.
	EventSyncError EventType = "sync-error"
	// EventHAProxy: the HAProxy process started, exited or was restarted.
	EventHAProxy EventType = "haproxy"
	// EventAction: someone acted through the API or portal.
	EventAction EventType = "action"
	// EventObserved: HAProxy reported a server's admin state or health changed
	// (a health check failed, someone used the admin socket).
	EventObserved EventType = "observed"
	// EventSource: the Kubernetes source says something about what it
	// watches as a whole: an API it would read is not served (OpenShift
	// Routes on a cluster without them), or is served now.
	EventSource EventType = "source"
	// EventPrediction: a change made from a what-if preview is done; what the
	// planner predicted and what HAProxy was really asked, side by side.
	EventPrediction EventType = "prediction"
	// EventGateways: the Gateway API objects dcm serves or their status
	// changed; the event carries them whole (Event.Gateways).
	EventGateways EventType = "gateways"
)

// ObjectRef names a Kubernetes object.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (o ObjectRef) String() string { return o.Kind + " " + o.Namespace + "/" + o.Name }

// ReloadInfo describes one reload.
type ReloadInfo struct {
	Time     time.Time      `json:"time"`
	Reasons  []ReloadReason `json:"reasons"`
	Duration float64        `json:"durationSeconds"`
	OldPID   int            `json:"oldPid,omitempty"`
	NewPID   int            `json:"newPid,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// Event is one entry of the audit log and the feed. Seq is strictly
// increasing over the life of the process.
type Event struct {
	Seq     uint64      `json:"seq"`
	Time    time.Time   `json:"time"`
	Type    EventType   `json:"type"`
	Message string      `json:"message"`
	Ops     []Op        `json:"ops,omitempty"`
	Reload  *ReloadInfo `json:"reload,omitempty"`
	Object  *ObjectRef  `json:"object,omitempty"`
	// Reason is machine-readable: why an object was rejected, why a sync failed.
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
	// Backends the event touched, for filtering.
	Backends []string `json:"backends,omitempty"`
	// State holds those backends as they are after the event, so a client
	// can keep its picture current from events alone. A reload touches
	// every backend and carries no state: clients take a fresh snapshot.
	State []*Backend `json:"state,omitempty"`
	// Prediction compares a preview with what happened (prediction events).
	Prediction *PredictionCheck `json:"prediction,omitempty"`
	// Gateways is the whole Gateway API picture after a gateways event.
	Gateways *GatewayAPI `json:"gateways,omitempty"`
}

// PredictionCheck counts runtime commands by backend and kind ("be op" or
// "be set-state:drain"; "reload" for reloads): new pods' names cannot be
// known before they exist, so commands are compared by kind, not by server.
type PredictionCheck struct {
	WhatIfs   []WhatIf       `json:"whatifs"`
	Seq       uint64         `json:"seq"` // the snapshot the prediction was made from
	Predicted map[string]int `json:"predicted"`
	Actual    map[string]int `json:"actual"`
	Match     bool           `json:"match"`
}

// Rejection is an object dcm currently refuses to serve.
type Rejection struct {
	Object  ObjectRef `json:"object"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
}
