package dcm

// ReplicaStatus is one dcm replica's account of itself (GET
// /api/v1/status): what the fleet view lists for it.
type ReplicaStatus struct {
	// Seq is the replica's own event seq: every replica counts its own.
	Seq     uint64      `json:"seq"`
	Ready   bool        `json:"ready"`
	HAProxy HAProxyInfo `json:"haproxy"`
	Updates Updates     `json:"updates"`
	// Applied is the digest of the desired state from Kubernetes that this
	// replica's HAProxy serves: set when a sync found HAProxy in step with
	// it (applied at runtime, reloaded, or nothing to do). It digests
	// content (routes, endpoints, certificates' versions), not HAProxy's
	// own names, so replicas watching the same objects with the same flags
	// have equal digests once each applied the same change, whatever their
	// pools or reload history. Admins' overrides on one replica (a server
	// drained by hand) do not count. Empty before the first sync.
	Applied string `json:"applied"`
	// Pending: the replica's informers hold a change it has not applied
	// yet (the digest of what they hold differs from Applied).
	Pending bool `json:"pending"`
}

// Replica is one dcm replica as the fleet view sees it from the replica
// serving the page.
type Replica struct {
	// Name is the peer's name: its pod's, or its portal's host:port.
	Name string `json:"name"`
	// URL is its portal; Self marks the replica that answers.
	URL  string `json:"url"`
	Self bool   `json:"self"`
	// Status is what the replica said, nil when it could not be read;
	// Error then says why (unreachable, or it refused the token).
	Status *ReplicaStatus `json:"status,omitempty"`
	Error  string         `json:"error,omitempty"`
	// Latest: the replica has applied the latest change. Replicas have no
	// common clock or order of changes, so this is decided by agreement:
	// it has nothing pending, and every other replica that answered
	// serves the same digest with nothing pending. A replica with a change
	// pending is behind; two that serve different digests with nothing
	// pending differ until the slower watch delivers the change (the view
	// says "differs" for both rather than guess which one is behind).
	Latest bool `json:"latest"`
}

// Fleet is every replica the serving one knows of (GET /api/v1/fleet).
type Fleet struct {
	Replicas []Replica `json:"replicas"`
	// InStep: every replica answered and each has applied the latest change.
	InStep bool `json:"inStep"`
}

// Decide sets Latest on every replica and InStep on the fleet, by the
// rule of Replica.Latest.
func (f *Fleet) Decide() {
	digest, agree, answered := "", true, 0
	for _, r := range f.Replicas {
		if r.Status == nil {
			continue
		}
		answered++
		if r.Status.Pending || r.Status.Applied == "" || (digest != "" && r.Status.Applied != digest) {
			agree = false
		}
		digest = r.Status.Applied
	}
	for i := range f.Replicas {
		f.Replicas[i].Latest = agree && f.Replicas[i].Status != nil
	}
	f.InStep = agree && answered == len(f.Replicas) && answered > 0
}

// EventsPage is the body of GET /api/v1/events (and of a replica's events
// through GET /api/v1/fleet/events).
type EventsPage struct {
	Events []Event `json:"events"`
	// Complete is false when events after since are no longer kept; take a
	// snapshot instead.
	Complete bool   `json:"complete"`
	Seq      uint64 `json:"seq"`
}
