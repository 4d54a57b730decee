// Package wire holds the JSON shapes of the what-if bridge that are not the
// model's: what a feed message did, and the planner's input. They live
// apart from wasm/bridge so that internal/codecgen can read them while the
// codec it writes for them (wasm/codec) does not compile.
package wire

import "github.com/dcm-router/dcm/dcm"

// FeedResult says what one feed message did to the planner's picture.
type FeedResult struct {
	Type string `json:"type"`
	Seq  uint64 `json:"seq"`
	// Changed is set when the picture moved: a preview shown is stale.
	Changed bool `json:"changed"`
	// NeedSnapshot is set when the message cannot be followed (a reload,
	// missed events, no snapshot yet): fetch /api/v1/snapshot and Load it.
	NeedSnapshot bool `json:"needSnapshot"`
}

// ComputeInput is the planner's input as JSON.
type ComputeInput struct {
	Actual  dcm.State   `json:"actual"`
	Desired dcm.Desired `json:"desired"`
	Caps    dcm.Caps    `json:"caps"`
}

// PlannerSnapshot is a dcm.Snapshot as the planner reads it: the members
// it keeps (the bridge's picture), with the same names and types. The
// routes, rejections and HAProxy's figures are the page's: the decoder
// steps over them without building them, a tenth of a snapshot of 10,000
// backends (its routes repeat the backends'). TestPlannerShapes holds the
// members to dcm.Snapshot's.
type PlannerSnapshot struct {
	Seq         uint64         `json:"seq"`
	Mode        dcm.Mode       `json:"mode"`
	Caps        dcm.Caps       `json:"caps"`
	Backends    []*dcm.Backend `json:"backends"`
	Pool        []string       `json:"pool,omitempty"`
	DefaultCert dcm.Cert       `json:"defaultCert,omitzero"`
}

// PlannerFeedMessage is a dcm.FeedMessage as the planner reads it: its
// snapshot a PlannerSnapshot, without hello's and bye's members.
type PlannerFeedMessage struct {
	Type     string           `json:"type"`
	Seq      uint64           `json:"seq"`
	Snapshot *PlannerSnapshot `json:"snapshot,omitempty"`
	Event    *dcm.Event       `json:"event,omitempty"`
}
