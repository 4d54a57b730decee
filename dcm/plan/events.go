package plan

import (
	"slices"

	"github.com/dcm-router/dcm/dcm"
)

// What an event names and carries is what Follow reads back: the browser's
// planner keeps its snapshot current with them, so they are made here, by
// the rules Follow expects.

// BackendsOf lists the backends ops touch: a server op's, and those whose
// entries a map replace changes.
func BackendsOf(ops []dcm.Op) []string {
	var out []string
	for _, o := range ops {
		if o.Kind != dcm.OpMapReplace {
			out = append(out, o.Backend)
			continue
		}
		for _, e := range o.Set {
			out = append(out, e.Backend)
		}
		for _, e := range o.Del {
			out = append(out, e.Backend)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// BackendsNamed picks backends of st by name (names sorted, as BackendsOf
// gives them), marked for clients as MarkRetired does.
func BackendsNamed(st dcm.State, d dcm.Desired, names []string) []*dcm.Backend {
	out := make([]*dcm.Backend, 0, len(names))
	for _, n := range names {
		if b, ok := st.Backend(n); ok {
			out = append(out, b)
		}
	}
	return MarkRetired(out, d)
}
