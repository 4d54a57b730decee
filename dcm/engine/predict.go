package engine

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
)

// expectTimeout bounds how long a prediction waits for the commands it
// predicted: scale-ins finish when the last request of the retired pods does.
const expectTimeout = 2 * time.Minute

// expectation is a change made from a preview, waiting to be compared with
// what the engine really did.
type expectation struct {
	check    dcm.PredictionCheck
	backends map[string]bool
	deadline time.Time
}

// opKey names an op for the comparison: backend and kind, and the state
// for set-state.
func opKey(o dcm.Op) string {
	k := o.Backend + " " + string(o.Kind)
	if o.Kind == dcm.OpSetState {
		k += ":" + string(o.State)
	}
	return k
}

// Simulate previews what-ifs against the current state with the planner.
func (e *Engine) Simulate(whatifs []dcm.WhatIf) dcm.Simulation {
	return plan.Simulate(e.Snapshot(), whatifs, dcm.HAProxy26MemoryCosts())
}

// Expect records what whatifs are predicted to do from the current state;
// the engine compares it with what it applies (a prediction event, and
// dcm_prediction_mismatch_total when they differ). Call it before making the
// change, so the prediction starts from the state the change starts from;
// cancel drops it if the change could not be made.
func (e *Engine) Expect(whatifs []dcm.WhatIf) (cancel func()) {
	sim := e.Simulate(whatifs)
	x := &expectation{
		check:    dcm.PredictionCheck{WhatIfs: whatifs, Seq: sim.Seq, Predicted: map[string]int{}, Actual: map[string]int{}},
		backends: map[string]bool{},
		deadline: time.Now().Add(expectTimeout),
	}
	for _, b := range sim.Backends {
		x.backends[b] = true
	}
	for _, st := range sim.Steps {
		for _, o := range st.Ops {
			x.check.Predicted[opKey(o)]++
		}
		if st.Reload {
			x.check.Predicted["reload"]++
		}
	}
	e.mu.Lock()
	e.expectations = append(e.expectations, x)
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.expectations = slices.DeleteFunc(e.expectations, func(o *expectation) bool { return o == x })
	}
}

// recordOps counts what was applied against every open expectation.
func (e *Engine) recordOps(ops []dcm.Op, reloaded bool) {
	e.mu.Lock()
	for _, x := range e.expectations {
		for _, o := range ops {
			if x.backends[o.Backend] {
				x.check.Actual[opKey(o)]++
			}
		}
		if reloaded {
			x.check.Actual["reload"]++
		}
	}
	e.mu.Unlock()
	e.settleExpectations(time.Now())
}

// settleExpectations closes the expectations that are met, or overdue.
func (e *Engine) settleExpectations(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	open := e.expectations[:0]
	for _, x := range e.expectations {
		met := maps.Equal(x.check.Predicted, x.check.Actual)
		if !met && now.Before(x.deadline) && !exceeds(x.check.Actual, x.check.Predicted) {
			open = append(open, x)
			continue
		}
		x.check.Match = met
		check := x.check
		msg := "the change did what its preview predicted"
		if !met {
			msg = fmt.Sprintf("the change differs from its preview: predicted %v, applied %v", check.Predicted, check.Actual)
			e.metrics.PredictionMismatch.Inc()
			e.log.Warn("prediction mismatch", "predicted", check.Predicted, "applied", check.Actual)
		}
		e.hub.Publish(dcm.Event{Type: dcm.EventPrediction, Message: msg, Prediction: &check, Backends: sortedKeys(x.backends)})
	}
	e.expectations = open
}

// exceeds reports whether more of some command was applied than predicted:
// waiting longer cannot make them match.
func exceeds(actual, predicted map[string]int) bool {
	for k, n := range actual {
		if n > predicted[k] {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return sortStrings(out)
}
