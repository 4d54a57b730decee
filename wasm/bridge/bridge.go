// Package bridge is the what-if planner as the browser calls it: JSON in,
// JSON out, with the latest snapshot kept on this side so a preview sends
// only its what-ifs across. The texts in are strings, decoded where they
// lie: the decoded values keep slices of them, and a snapshot of 10,000
// backends is 30 MB, which a copy per call would double in the browser's
// heap. The wasm main wires it to JavaScript; the
// parity tests call it natively, so both sides run this very code.
package bridge

import (
	"errors"
	"slices"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
	"github.com/dcm-router/dcm/wasm/codec"
	"github.com/dcm-router/dcm/wasm/wire"
)

// Planner keeps a snapshot current from the portal's feed and previews
// what-ifs against it. It is not safe for concurrent use: a Web Worker runs
// one at a time.
type Planner struct {
	costs  dcm.MemoryCosts
	snap   dcm.Snapshot
	loaded bool
	// prepared is the snapshot read back for previews (its desired state
	// and totals), once per snapshot and not per preview: at 10,000
	// backends each is a pass over 100,000 servers, on the worker's only
	// thread. Nil until a preview needs it after the snapshot moved.
	prepared *plan.Prepared
	out      []byte // the last preview's JSON, reused
}

// New returns a planner with no snapshot yet.
func New(costs dcm.MemoryCosts) *Planner { return &Planner{costs: costs} }

// FeedResult says what one feed message did to the planner's picture.
type FeedResult = wire.FeedResult

// Feed takes one raw message of GET /api/v1/feed.
func (p *Planner) Feed(raw string) (FeedResult, error) {
	var m wire.PlannerFeedMessage
	if err := codec.DecodeFeedMessage(raw, &m); err != nil {
		return FeedResult{}, dcm.Wrap("feed message", err)
	}
	r := FeedResult{Type: m.Type, Seq: p.snap.Seq}
	switch m.Type {
	case dcm.FeedTypeSnapshot:
		if m.Snapshot == nil {
			return r, errors.New("feed snapshot message without a snapshot")
		}
		p.load(*m.Snapshot)
		r.Seq, r.Changed = p.snap.Seq, true
	case dcm.FeedTypeEvent:
		if m.Event == nil {
			return r, errors.New("feed event message without an event")
		}
		if !p.loaded {
			r.NeedSnapshot = true
			return r, nil
		}
		before := p.snap.Seq
		next, ok := plan.Follow(p.snap, *m.Event)
		if next.Seq != p.snap.Seq {
			p.prepared = nil
		}
		p.snap = next
		r.Seq, r.Changed, r.NeedSnapshot = p.snap.Seq, p.snap.Seq != before, !ok
	}
	return r, nil
}

// Load replaces the picture with a snapshot (GET /api/v1/snapshot), unless
// the planner already follows a newer one.
func (p *Planner) Load(raw string) (FeedResult, error) {
	var s wire.PlannerSnapshot
	if err := codec.DecodeSnapshot(raw, &s); err != nil {
		return FeedResult{}, dcm.Wrap("snapshot", err)
	}
	r := FeedResult{Type: dcm.FeedTypeSnapshot}
	if !p.loaded || s.Seq >= p.snap.Seq {
		p.load(s)
		r.Changed = true
	}
	r.Seq = p.snap.Seq
	return r, nil
}

func (p *Planner) load(s wire.PlannerSnapshot) {
	// Only what the planner reads was decoded: routes and rejections are
	// the page's business.
	p.snap = dcm.Snapshot{Seq: s.Seq, Mode: s.Mode, Caps: s.Caps, Backends: s.Backends, Pool: s.Pool, DefaultCert: s.DefaultCert}
	p.prepared = nil
	p.loaded = true
}

// Seq is the seq of the picture previews start from (0 before any).
func (p *Planner) Seq() uint64 { return p.snap.Seq }

// Simulate previews a JSON array of what-ifs against the kept snapshot and
// returns the dcm.Simulation as JSON.
func (p *Planner) Simulate(whatifs string) ([]byte, error) {
	if !p.loaded {
		return nil, errors.New("no snapshot yet")
	}
	var ws []dcm.WhatIf
	if err := codec.DecodeWhatIfs(whatifs, &ws); err != nil {
		return nil, dcm.Wrap("what-ifs", err)
	}
	if p.prepared == nil {
		pr := plan.Prepare(p.snap, p.costs)
		p.prepared = &pr
	}
	sim := p.prepared.Simulate(ws)
	// The answer is written into the buffer of the last preview and
	// copied out once: grown from nothing, a preview at 1,000 backends
	// allocated a dozen ever larger buffers on the worker's one thread.
	out, err := codec.AppendSimulation(p.out[:0], &sim)
	p.out = out
	return slices.Clone(out), err
}

// SimulateOn previews what-ifs against a snapshot given with them, keeping
// nothing: the same answer POST /api/v1/plan gives for that snapshot.
func SimulateOn(snapshot, whatifs string, costs dcm.MemoryCosts) ([]byte, error) {
	p := New(costs)
	if _, err := p.Load(snapshot); err != nil {
		return nil, err
	}
	return p.Simulate(whatifs)
}

// ComputeInput is the planner's input as JSON.
type ComputeInput = wire.ComputeInput

// Compute runs plan.Compute on a ComputeInput and returns the dcm.Plan as JSON.
func Compute(input string) ([]byte, error) {
	var in ComputeInput
	if err := codec.DecodeComputeInput(input, &in); err != nil {
		return nil, dcm.Wrap("compute input", err)
	}
	pl := plan.Compute(in.Actual, in.Desired, in.Caps)
	return codec.AppendPlan(nil, &pl)
}

// EncodeFeedResult is a FeedResult as the wasm main returns it to
// JavaScript, passing an error of Feed or Load on.
func EncodeFeedResult(r FeedResult, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return codec.AppendFeedResult(nil, &r)
}
