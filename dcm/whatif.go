package dcm

// WhatIfKind is one kind of change an admin can preview.
type WhatIfKind string

const (
	// WhatIfScale: a workload is scaled to Replicas.
	WhatIfScale WhatIfKind = "scale"
	// WhatIfDeletePod: a pod is deleted (and replaced by its workload).
	WhatIfDeletePod WhatIfKind = "delete-pod"
	// WhatIfAddRoute: a route is created.
	WhatIfAddRoute WhatIfKind = "add-route"
	// WhatIfDeleteRoute: a route (by its backend name) is deleted.
	WhatIfDeleteRoute WhatIfKind = "delete-route"
	// WhatIfUpdateRoute: a route is served as Route says from now on: an
	// annotation or field of its object changed. Same namespace, name and
	// kind (a new kind is a new backend: delete-route, then add-route).
	WhatIfUpdateRoute WhatIfKind = "update-route"
	// WhatIfRotateCert: the certificate of a Secret (namespace/name) is
	// replaced; the edge routes that use it get a new version.
	WhatIfRotateCert WhatIfKind = "rotate-cert"
)

// WhatIf is one event of a preview.
type WhatIf struct {
	Kind      WhatIfKind   `json:"kind"`
	Namespace string       `json:"namespace,omitempty"`
	Workload  *WorkloadRef `json:"workload,omitempty"`
	Replicas  int          `json:"replicas,omitempty"`
	Pod       string       `json:"pod,omitempty"`
	Route     *Route       `json:"route,omitempty"`
	Backend   string       `json:"backend,omitempty"`
	// Secret is namespace/name of a kubernetes.io/tls Secret (rotate-cert).
	Secret string `json:"secret,omitempty"`
}

// SimStep is one thing HAProxy would be asked to do, in order: a scale-out
// first adds the new pods' servers (in maint: they are not ready), then makes
// them ready; a scale-in drains, then retires, then deletes.
type SimStep struct {
	Phase   string         `json:"phase"`
	Ops     []Op           `json:"ops"`
	Reload  bool           `json:"reload"`
	Reasons []ReloadReason `json:"reasons,omitempty"`
}

// SimTotals sums up a state.
type SimTotals struct {
	Backends int `json:"backends"`
	Ready    int `json:"ready"`
	Drain    int `json:"drain"`
	Maint    int `json:"maint"`
	// CfgServers are rendered in haproxy.cfg (after a reload every server
	// is); RuntimeServers were added with add server since.
	CfgServers     int `json:"cfgServers"`
	RuntimeServers int `json:"runtimeServers"`
	// SlotsFree counts free slots (slots mode).
	SlotsFree int `json:"slotsFree"`
	// SpareBackends counts the free spare backends of the pool (dynamic
	// mode): they exist in HAProxy, and cost memory, until a route takes one.
	SpareBackends int `json:"spareBackends"`
	// TCPBackends counts the passthrough routes' backends among Backends
	// (not the spares): each costs HAProxy about twice an HTTP one
	// (MemoryCosts).
	TCPBackends int `json:"tcpBackends"`
	// MemoryBytes estimates the HAProxy worker's memory for backends and
	// servers, from MemoryCosts.
	MemoryBytes int64 `json:"memoryBytes"`
}

// Share is a server's part of its backend's new requests.
type Share struct {
	Backend string  `json:"backend"`
	Server  string  `json:"server"`
	Pod     string  `json:"pod,omitempty"`
	Weight  int     `json:"weight"`
	Share   float64 `json:"share"`
}

// Draining is a server that stops taking new requests while its current
// sessions finish.
type Draining struct {
	Backend  string `json:"backend"`
	Server   string `json:"server"`
	Pod      string `json:"pod,omitempty"`
	Sessions int    `json:"sessions"`
}

// Simulation is the outcome of a preview: every step, and the totals before
// and after. Seq is the snapshot's, to send back with the change so the
// server can refuse it if the state moved.
type Simulation struct {
	Seq      uint64         `json:"seq"`
	Mode     Mode           `json:"mode"`
	Steps    []SimStep      `json:"steps"`
	Ops      int            `json:"ops"`
	Reloads  int            `json:"reloads"`
	Reasons  []ReloadReason `json:"reasons,omitempty"`
	Before   SimTotals      `json:"before"`
	After    SimTotals      `json:"after"`
	Traffic  []Share        `json:"traffic"`
	Draining []Draining     `json:"draining"`
	Backends []string       `json:"backends"` // those the preview touches
	Errors   []string       `json:"errors,omitempty"`
}

// MemoryCosts are what HAProxy 2.6's worker needs per object, measured with
// the real binary by dcm/haproxy's BenchmarkMemoryCosts (see its comment for
// the run); the what-if estimate multiplies them.
type MemoryCosts struct {
	// PerBackend is an empty HTTP backend's (plain, edge and reencrypt
	// routes', and their spares').
	PerBackend int64 `json:"perBackend"`
	// PerTCPBackend is an empty passthrough backend's (a route's or a
	// spare's): it keeps its route's allowlist and rate-limit rules and
	// stick table, which an HTTP backend leaves to the HTTP frontends, so
	// it costs about twice as much.
	PerTCPBackend    int64 `json:"perTCPBackend"`
	PerCfgServer     int64 `json:"perCfgServer"`
	PerRuntimeServer int64 `json:"perRuntimeServer"`
}

// HAProxy26MemoryCosts are the costs measured on Debian's HAProxy 2.6.12 on
// 2026-12-02 (go test -run '^$' -bench MemoryCosts -count 3 ./dcm/haproxy/:
// 11,239-11,252 bytes per backend, 5,849-5,873 per cfg server, 4,329-4,370
// per runtime server), and per backend again on 2026-12-04 (the same
// command: 12,071-12,157 bytes), once an HTTP backend held only its
// balance and two set-timeout rules, its route's other rules running in
// the HTTP frontends (31,281-31,367 bytes the same day with every rule in
// every backend). Per passthrough backend, which keeps its allowlist and
// rate-limit rules, on 2026-12-04 too (the same command: 23,351-23,499
// bytes, 12,087-12,247 per HTTP backend in the same runs).
func HAProxy26MemoryCosts() MemoryCosts {
	return MemoryCosts{PerBackend: 12120, PerTCPBackend: 23400, PerCfgServer: 5860, PerRuntimeServer: 4340}
}
