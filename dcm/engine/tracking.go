package engine

import (
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
)

// A change to one backend among thousands must cost the same as in a
// small cluster. States share their unchanged backends (dcm.State), so the
// engine tells what changed by comparing pointers: a sync plans the
// backends whose desired or actual pointer moved since the last plan
// (plan.ComputeChanged), and the gauges and the backends waiting for idle
// servers follow the backends whose pointer moved when actual is replaced.

// tracking is what the engine keeps to that end; guarded by Engine.mu.
type tracking struct {
	// planned is the state the last plan led to, plannedFor the desired
	// state it was planned for; valid once a plan was committed.
	planned    dcm.State
	plannedFor dcm.Desired
	valid      bool
	// waiting holds the HAProxy names of the backends with a retired
	// server HAProxy has not reported idle (plan.WaitingBackends).
	waiting map[string]bool
}

// changedSince names the backends of actual and desired whose pointers
// differ from those of the last plan; false when there was none to
// compare with.
func (e *Engine) changedSince(actual dcm.State, desired dcm.Desired) ([]string, bool) {
	e.mu.Lock()
	t := e.track
	e.mu.Unlock()
	if !t.valid {
		return nil, false
	}
	changed := append(movedBackends(t.planned.Backends, actual.Backends), movedDesired(t.plannedFor.Backends, desired.Backends)...)
	slices.Sort(changed)
	return slices.Compact(changed), true
}

// planned records the state a plan led to and the desired state it was
// planned for.
func (e *Engine) planned(st dcm.State, d dcm.Desired) {
	e.mu.Lock()
	e.track.planned, e.track.plannedFor, e.track.valid = st, d, true
	e.markApplied()
	e.mu.Unlock()
}

// setActual replaces the state dcm holds of HAProxy, and follows its
// changed backends with the waiting set and the gauges; mu held.
func (e *Engine) setActual(st dcm.State) {
	old := e.actual
	e.actual = st
	e.generation++
	names := movedBackends(old.Backends, st.Backends)
	if e.track.waiting == nil {
		e.track.waiting = map[string]bool{}
	}
	for _, n := range names {
		if b, ok := old.Backend(n); ok {
			delete(e.track.waiting, b.ProxyName())
		}
		if b, ok := st.Backend(n); ok && plan.Waiting(b, e.desired) {
			e.track.waiting[b.ProxyName()] = true
		}
	}
	e.metrics.follow(old, st, names)
}

// setDesired records desired, and refreshes whether the backends it
// changed wait for idle servers (a server retires when its endpoint goes);
// mu held.
func (e *Engine) setDesired(d dcm.Desired) {
	old := e.desired
	e.desired = d
	if e.track.waiting == nil {
		return
	}
	for _, n := range movedDesired(old.Backends, d.Backends) {
		if b, ok := e.actual.Backend(n); ok {
			delete(e.track.waiting, b.ProxyName())
			if plan.Waiting(b, d) {
				e.track.waiting[b.ProxyName()] = true
			}
		}
	}
}

// movedBackends names the backends in a or b, by name, whose pointers
// differ: gone, new or replaced.
func movedBackends(a, b []*dcm.Backend) []string {
	var out []string
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			// One backend, shared: most of them, told apart without
			// comparing their names.
			i++
			j++
		case j >= len(b) || i < len(a) && a[i].Name < b[j].Name:
			out = append(out, a[i].Name)
			i++
		case i >= len(a) || b[j].Name < a[i].Name:
			out = append(out, b[j].Name)
			j++
		default:
			if a[i] != b[j] {
				out = append(out, a[i].Name)
			}
			i++
			j++
		}
	}
	return out
}

// movedDesired is movedBackends for desired backends.
func movedDesired(a, b []*dcm.DesiredBackend) []string {
	var out []string
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i++
			j++
		case j >= len(b) || i < len(a) && strings.Compare(a[i].Name, b[j].Name) < 0:
			out = append(out, a[i].Name)
			i++
		case i >= len(a) || strings.Compare(b[j].Name, a[i].Name) < 0:
			out = append(out, b[j].Name)
			j++
		default:
			if a[i] != b[j] {
				out = append(out, a[i].Name)
			}
			i++
			j++
		}
	}
	return out
}
