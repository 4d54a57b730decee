package plan

import (
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// totals counts a state as a preview shows it: backends, servers by state
// and by origin, free slots, spares, and the memory HAProxy takes for them.
func totals(st dcm.State, d dcm.Desired, costs dcm.MemoryCosts) dcm.SimTotals {
	var t dcm.SimTotals
	for _, b := range st.Backends {
		t = addTotals(t, backendTotals(b, d), 1)
	}
	return withSpares(t, st, costs)
}

// withSpares completes the counts of st's servers: its backends and
// spares, and the memory of all of them. A passthrough backend or spare
// costs PerTCPBackend, every other PerBackend: t counts the routes' TCP
// backends, the spares' kinds are read from their names here (a pool
// holds a few dozen, and they change with every route added or deleted).
func withSpares(t dcm.SimTotals, st dcm.State, costs dcm.MemoryCosts) dcm.SimTotals {
	t.Backends = len(st.Backends)
	t.SpareBackends = len(st.Pool)
	tcp := t.TCPBackends
	for _, name := range st.Pool {
		if routing.TCPSpare(name) {
			tcp++
		}
	}
	t.MemoryBytes = int64(t.Backends+t.SpareBackends-tcp)*costs.PerBackend + int64(tcp)*costs.PerTCPBackend +
		int64(t.CfgServers)*costs.PerCfgServer + int64(t.RuntimeServers)*costs.PerRuntimeServer
	return t
}

// backendTotals counts one backend's servers, and the backend if it is a
// TCP one. Only a free slot depends on d: whether its desired backend
// carries the slot's endpoint.
func backendTotals(b *dcm.Backend, d dcm.Desired) dcm.SimTotals {
	var t dcm.SimTotals
	if routing.TCPBackend(b) {
		t.TCPBackends = 1
	}
	var db *dcm.DesiredBackend // looked up for slots only
	for _, s := range b.Servers {
		switch s.State {
		case dcm.StateReady:
			t.Ready++
		case dcm.StateDrain:
			t.Drain++
		default:
			t.Maint++
		}
		if s.Origin == dcm.OriginRuntime {
			t.RuntimeServers++
		} else {
			t.CfgServers++
		}
		if strings.HasPrefix(s.Name, slotPrefix) && s.State == dcm.StateMaint {
			if db == nil {
				found, ok := d.Backend(b.Name)
				if !ok {
					found = &dcm.DesiredBackend{}
				}
				db = found
			}
			if !carries(*db, s.Endpoint) {
				t.SlotsFree++
			}
		}
	}
	return t
}

// addTotals adds (sign 1) or takes away (sign -1) u's server counts and
// TCP backends.
func addTotals(t, u dcm.SimTotals, sign int) dcm.SimTotals {
	t.TCPBackends += sign * u.TCPBackends
	t.Ready += sign * u.Ready
	t.Drain += sign * u.Drain
	t.Maint += sign * u.Maint
	t.CfgServers += sign * u.CfgServers
	t.RuntimeServers += sign * u.RuntimeServers
	t.SlotsFree += sign * u.SlotsFree
	return t
}

// totalsSince is totals(after, dAfter) from before, the totals of the
// state and desired state it comes from: only the backends that are
// another backend or have another desired backend are counted again.
// States and desired states share what they did not change by pointer, so
// those are found without looking at a server, and a what-if changes a
// few backends of thousands: counting every server before and after was
// half of a preview's time at 10,000 backends. ordered says that the four
// lists of backends are in order of name, each name once (see ordered);
// else they are counted whole.
func totalsSince(before dcm.SimTotals, from dcm.State, dFrom dcm.Desired, after dcm.State, dAfter dcm.Desired, costs dcm.MemoryCosts, ordered bool) dcm.SimTotals {
	if !ordered {
		return totals(after, dAfter, costs)
	}
	var names []string
	changed := func(name string) {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	differing(from.Backends, after.Backends, backendName, changed)
	differing(dFrom.Backends, dAfter.Backends, desiredName, changed)
	t := before
	for _, n := range names {
		if b, ok := from.Backend(n); ok {
			t = addTotals(t, backendTotals(b, dFrom), -1)
		}
		if b, ok := after.Backend(n); ok {
			t = addTotals(t, backendTotals(b, dAfter), 1)
		}
	}
	return withSpares(t, after, costs)
}

func backendName(b *dcm.Backend) string { return b.Name }

func desiredName(b *dcm.DesiredBackend) string { return b.Name }

// ordered says a snapshot's backends and the desired state read back from
// them are in order of name, each name once, as the engine's states are.
// The planner keeps such lists in order (Compute merges them, a moved
// backend sorts them again, replaced inserts by name), so a preview's
// states are, and a snapshot is checked once, not at every step: the
// checks were most of a preview's time once the servers were no longer
// counted at each.
func ordered(st dcm.State, d dcm.Desired) bool {
	return ascending(st.Backends, backendName) && ascending(d.Backends, desiredName)
}

// ascending says the names strictly increase.
func ascending[T any](list []*T, name func(*T) string) bool {
	for i := 1; i < len(list); i++ {
		if name(list[i-1]) >= name(list[i]) {
			return false
		}
	}
	return true
}

// differing calls changed with every name that is in one of two lists
// ordered by name and not the same pointer in the other.
func differing[T any](a, b []*T, name func(*T) string, changed func(string)) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case j == len(b) || i < len(a) && name(a[i]) < name(b[j]):
			changed(name(a[i]))
			i++
		case i == len(a) || name(b[j]) < name(a[i]):
			changed(name(b[j]))
			j++
		default: // the same name, another backend
			changed(name(a[i]))
			i, j = i+1, j+1
		}
	}
}

func carries(b dcm.DesiredBackend, endpoint string) bool {
	return endpoint != "" && slices.ContainsFunc(b.Endpoints, func(e dcm.Endpoint) bool { return e.Name == endpoint })
}
