package dcm

import (
	"slices"
	"sort"
	"strings"
)

// AdminState is the administrative state of an HAProxy server.
type AdminState string

const (
	// StateReady takes new traffic.
	StateReady AdminState = "ready"
	// StateDrain takes no new traffic but keeps its sessions (and sticky clients).
	StateDrain AdminState = "drain"
	// StateMaint takes no traffic at all; existing sessions still finish.
	StateMaint AdminState = "maint"
)

// Origin says where a server was created: rendered in haproxy.cfg, or added
// through the runtime API since the last reload.
type Origin string

const (
	OriginCfg     Origin = "cfg"
	OriginRuntime Origin = "runtime"
)

// Endpoint is one desired server of a backend, derived from an EndpointSlice
// endpoint: Ready endpoints get StateReady, terminating but still serving ones
// StateDrain (StateReady while their service has no ready endpoint:
// ServeTerminating), endpoints that are not ready StateMaint.
type Endpoint struct {
	// Name is the server name: deterministic, HAProxy-safe, identical on every
	// dcm replica (pod name and port name, else address and port).
	Name   string     `json:"name"`
	Addr   string     `json:"addr"`
	Port   int        `json:"port"`
	Weight int        `json:"weight"`
	State  AdminState `json:"state"`
	Pod    string     `json:"pod,omitempty"`
	// Service is the route's service the endpoint belongs to, when the
	// route has several (Route.Services): weights are shares per service.
	Service string `json:"service,omitempty"`
	// Terminating is set on an endpoint that still serves while its pod
	// terminates (EndpointSlice serving and terminating, not ready): its
	// State is ServeTerminating's to decide.
	Terminating bool `json:"terminating,omitempty"`
	// Proto is the protocol HAProxy speaks to the pod when it is not the
	// route's default: ProtoH2 for a Service port whose appProtocol is h2c.
	Proto Proto `json:"proto,omitempty"`
}

// Reweigh recomputes the weights of a route with several services from its
// endpoints' states (ServerWeights), as the kube layer computes them, so a
// what-if that adds or removes pods predicts the weights that follow.
func (b DesiredBackend) Reweigh() DesiredBackend {
	svcs := b.Route.Services
	if len(svcs) < 2 {
		return b
	}
	shares, ready := make([]int, len(svcs)), make([]int, len(svcs))
	index := make(map[string]int, len(svcs))
	for i, s := range svcs {
		shares[i], index[s.Name] = s.Weight, i
	}
	for _, e := range b.Endpoints {
		if i, ok := index[e.Service]; ok && e.State == StateReady {
			ready[i]++
		}
	}
	weights := ServerWeights(shares, ready)
	eps := slices.Clone(b.Endpoints)
	for k, e := range eps {
		if i, ok := index[e.Service]; ok {
			eps[k].Weight = weights[i]
		}
	}
	b.Endpoints = eps
	return b
}

// DesiredBackend is what Kubernetes asks of one backend.
type DesiredBackend struct {
	Name      string     `json:"name"`
	Route     Route      `json:"route"`
	Endpoints []Endpoint `json:"endpoints"` // sorted by Name, names unique
}

// Desired is the whole desired state, backends sorted by Name. A
// DesiredBackend is shared between the Desired values made from one
// another and must not be modified once in one: a change makes a new one.
type Desired struct {
	Backends []*DesiredBackend `json:"backends"`
	// DefaultCert is served to hosts without a certificate of their own
	// (dcm.DefaultCertificate); zero: dcm's self-signed one.
	DefaultCert Cert `json:"defaultCert,omitzero"`
}

// Backend finds a desired backend by name.
func (d Desired) Backend(name string) (*DesiredBackend, bool) {
	i, ok := slices.BinarySearchFunc(d.Backends, name, func(b *DesiredBackend, n string) int { return strings.Compare(b.Name, n) })
	if !ok {
		return nil, false
	}
	return d.Backends[i], true
}

// Server is one server of an HAProxy backend as dcm knows it: what it applied,
// refreshed by what HAProxy reports.
type Server struct {
	Name   string     `json:"name"`
	Addr   string     `json:"addr"`
	Port   int        `json:"port"`
	Weight int        `json:"weight"`
	State  AdminState `json:"state"`
	Origin Origin     `json:"origin"`
	// Endpoint is the name of the endpoint this server carries. It equals Name
	// in dynamic and reload modes; in slots mode the server is a slot (slotN)
	// and Endpoint is empty while the slot is free.
	Endpoint string `json:"endpoint,omitempty"`
	Pod      string `json:"pod,omitempty"`
	// Service is its endpoint's (Endpoint.Service): set for routes with
	// several services only, so a what-if can recompute their weights.
	Service string `json:"service,omitempty"`
	// Terminating is its endpoint's (Endpoint.Terminating), so a what-if
	// started from a snapshot knows which ready servers are terminating.
	Terminating bool `json:"terminating,omitempty"`
	Check       bool `json:"check"`
	// MaxConn is its connection limit (its route's MaxConn), 0 for none.
	MaxConn int `json:"maxConn,omitempty"`
	// CheckInterMillis is its check interval (CheckInterOf its route when
	// added, fixed for its life), 0 for the default.
	CheckInterMillis int64 `json:"checkInterMs,omitempty"`
	// Proto is its endpoint's (Endpoint.Proto), fixed when the server is
	// added: sources name endpoints after it (WithProtoNames).
	Proto Proto `json:"proto,omitempty"`
	// Upstream is the TLS the server connects to its pod with (reencrypt
	// routes): the route's when the server was added, fixed for its life.
	Upstream *UpstreamTLS `json:"upstream,omitempty"`
	// Observed figures, as HAProxy last reported them.
	Health   string `json:"health,omitempty"` // HAProxy's status column: UP, DOWN, MAINT, DRAIN, no check…
	Sessions int    `json:"sessions"`         // current sessions
	Queued   int    `json:"queued"`           // requests waiting in the server's queue
	UsedConn int    `json:"usedConn"`         // connections in use to the server
	// IdleConn counts the server's idle connections HAProxy keeps for
	// reuse (idle_conn_cur + safe_conn_cur): HAProxy 2.6 refuses del server
	// while there is one, even with no session left.
	IdleConn int `json:"idleConn,omitempty"`
	// Unobserved is set when dcm changed the server after HAProxy last
	// reported on it, so its figures cannot prove it idle yet.
	Unobserved bool `json:"unobserved,omitempty"`
	// Retired is set (in snapshots and events) when Kubernetes no longer has
	// the server's endpoint: it waits to be deleted, or is a free slot.
	Retired bool `json:"retired,omitempty"`
}

// Idle reports whether HAProxy has nothing in flight on the server, so it
// can be deleted or, in slots mode, given another endpoint without cutting
// a request.
func (s Server) Idle() bool {
	return !s.Unobserved && s.Sessions == 0 && s.Queued == 0 && s.UsedConn == 0
}

// Deletable reports whether del server would succeed: idle, and no
// connection kept in HAProxy's pool for reuse either (2.6 refuses the
// delete while one is, and purges them over pool-purge-delay).
func (s Server) Deletable() bool {
	return s.Idle() && s.IdleConn == 0
}

// Backend is an HAProxy backend dcm manages. It is known everywhere (pages,
// API, events, metrics) by its route's name; HAProxy may know it as a spare
// backend from the pool (Slot).
type Backend struct {
	Name  string    `json:"name"`
	Kind  RouteKind `json:"kind"`
	Route Route     `json:"route"`
	// Slot is the spare backend (be_<kind>:_pool:<n>) that carries the route
	// in HAProxy, when the route was added at runtime; empty when HAProxy
	// knows the backend by Name (it was rendered for its route).
	Slot string `json:"slot,omitempty"`
	// Retiring is set once the route is gone: the backend has no map entries
	// any more, and its servers are retired; when the last one is deleted a
	// spare goes back to the pool.
	Retiring bool `json:"retiring,omitempty"`
	// Slots is the number of server-template slots (slots mode only).
	Slots   int      `json:"slots,omitempty"`
	Servers []Server `json:"servers"` // sorted by Name
}

// MovedName is what dcm calls the HAProxy backend proxy once its route
// has moved to another (a change the backend cannot take at runtime, such
// as stickiness) while it drains beside it: proxy and ":moved", which no
// route's backend (be_<kind>:<namespace>:<route>) and no spare can be
// named. It is retiring, with proxy as its Slot.
func MovedName(proxy string) string { return proxy + ":moved" }

// ProxyName is the name HAProxy knows the backend by: its spare's when it
// has one, else its own. Commands, the cfg and the maps use it.
func (b Backend) ProxyName() string {
	if b.Slot != "" {
		return b.Slot
	}
	return b.Name
}

// Server finds a server by name.
func (b Backend) Server(name string) (Server, bool) {
	i, ok := slices.BinarySearchFunc(b.Servers, name, func(s Server, n string) int { return strings.Compare(s.Name, n) })
	if !ok {
		return Server{}, false
	}
	return b.Servers[i], true
}

// State is the state of the HAProxy data plane, backends sorted by Name.
// The planner treats it as a value: every function returns a new State,
// which shares the Backends it did not change with its input. So a
// Backend, once in a State, is never modified: a change makes a new one.
// Sharing keeps a change to one backend among thousands from copying the
// others, and lets whoever kept an older State tell the changed backends
// by their pointers. No element is nil.
type State struct {
	Backends []*Backend `json:"backends"`
	// Pool lists the free spare backends (empty, in no map) in the order
	// they are taken (routing.SortPool); dynamic mode with --pool-size only.
	Pool []string `json:"pool,omitempty"`
	// DefaultCert is the default certificate served (Desired.DefaultCert).
	DefaultCert Cert `json:"defaultCert,omitzero"`
	// GatewayBinds are the Gateway binds HAProxy binds beyond the
	// pre-bound ones (Caps.Gateway), sorted (CompareGatewayBinds): those
	// of listeners on other ports, bound by a reload
	// (ReasonGatewayListenerPort) and kept until the next reload renders
	// the ones routes still use.
	GatewayBinds []GatewayBind `json:"gatewayBinds,omitempty"`
}

// Backend finds a backend by name.
func (s State) Backend(name string) (*Backend, bool) {
	i, ok := slices.BinarySearchFunc(s.Backends, name, func(b *Backend, n string) int { return strings.Compare(b.Name, n) })
	if !ok {
		return nil, false
	}
	return s.Backends[i], true
}

// Routes lists the routes of all routed backends in HAProxy's matching order.
func (s State) Routes() []Route {
	routes := make([]Route, 0, len(s.Backends))
	for _, b := range s.Backends {
		if b.Routed() {
			routes = append(routes, b.Route)
		}
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].Less(routes[j]) })
	return routes
}

// ServerCounts counts servers by admin state.
func (s State) ServerCounts() map[AdminState]int {
	counts := map[AdminState]int{StateReady: 0, StateDrain: 0, StateMaint: 0}
	for _, b := range s.Backends {
		for _, srv := range b.Servers {
			counts[srv.State]++
		}
	}
	return counts
}

// SortServers sorts servers by name, the order every State keeps.
func SortServers(servers []Server) {
	sort.Slice(servers, func(i, j int) bool { return servers[i].Name < servers[j].Name })
}

// SortDesired sorts desired backends by name, the order every Desired keeps.
func SortDesired(backends []*DesiredBackend) {
	sort.Slice(backends, func(i, j int) bool { return backends[i].Name < backends[j].Name })
}

// SortBackends sorts backends by name, the order every State keeps.
func SortBackends(backends []*Backend) {
	sort.Slice(backends, func(i, j int) bool { return backends[i].Name < backends[j].Name })
}

// BackendList is backends as a State holds them, each a copy of its own.
func BackendList(backends ...Backend) []*Backend {
	out := make([]*Backend, len(backends))
	for i := range backends {
		b := backends[i]
		out[i] = &b
	}
	return out
}

// DesiredList is backends as a Desired holds them, each a copy of its own.
func DesiredList(backends ...DesiredBackend) []*DesiredBackend {
	out := make([]*DesiredBackend, len(backends))
	for i := range backends {
		b := backends[i]
		out[i] = &b
	}
	return out
}
