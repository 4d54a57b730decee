package views

import (
	"strconv"

	"github.com/dcm-router/dcm/dcm"
)

// ReplicaRow is one line of the fleet panel, as text; web/fleet.js
// computes the same from GET /api/v1/fleet.
type ReplicaRow struct {
	Name, Version, PID, Seq, Reloads, Applied, State, Detail string
	Self                                                     bool
}

// FleetRows are the fleet's lines.
func FleetRows(f dcm.Fleet) []ReplicaRow {
	out := make([]ReplicaRow, 0, len(f.Replicas))
	for _, r := range f.Replicas {
		row := ReplicaRow{Name: r.Name, Self: r.Self, Version: "–", PID: "–", Seq: "–", Reloads: "–", Applied: "–"}
		row.State, row.Detail = ReplicaState(r)
		if s := r.Status; s != nil {
			row.Version, row.PID, row.Seq = s.HAProxy.Version, strconv.Itoa(s.HAProxy.PID), strconv.FormatUint(s.Seq, 10)
			row.Reloads = strconv.Itoa(s.HAProxy.Reloads)
			if s.Applied != "" {
				row.Applied = s.Applied
			}
		}
		out = append(out, row)
	}
	return out
}

// ReplicaState is whether a replica has applied the latest change (the
// rule of dcm.Replica.Latest), as a word and a sentence.
func ReplicaState(r dcm.Replica) (state, detail string) {
	switch {
	case r.Status == nil:
		return "unreachable", r.Error
	case r.Latest:
		return "latest", "has applied the latest change"
	case r.Status.Applied == "":
		return "starting", "has not applied a first state yet"
	case r.Status.Pending:
		return "pending", "has a change from Kubernetes not applied yet"
	}
	return "differs", "serves another state than a replica: one of them has not seen the latest change yet"
}
