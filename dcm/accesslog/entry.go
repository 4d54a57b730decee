package accesslog

import (
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
)

// Entry is one JSON line of the access log: what HAProxy logged, with the
// route and pod dcm finds behind its backend and server names.
type Entry struct {
	Time     string `json:"time"`  // when HAProxy accepted the connection, RFC 3339 in ms
	Proto    string `json:"proto"` // http, or tcp for a passthrough connection
	Frontend string `json:"frontend"`
	// Backend is HAProxy's backend: a route's, a spare's that carries a
	// route, be_default (no route); empty when none was chosen (a bad
	// request, a redirect).
	Backend string `json:"backend,omitempty"`
	// The route behind Backend when the line was written; empty when
	// none (see docs/logs.md on a spare that changed hands meanwhile).
	Namespace string          `json:"namespace,omitempty"`
	Route     string          `json:"route,omitempty"`
	Kind      dcm.RouteKind   `json:"kind,omitempty"`
	Source    dcm.RouteSource `json:"source,omitempty"`
	Object    string          `json:"object,omitempty"`
	// Spare is set when Backend is a spare backend (whether or not a
	// route rides it now).
	Spare bool `json:"spare,omitempty"`
	// Server is HAProxy's server (named after the pod), Pod the pod.
	Server      string `json:"server,omitempty"`
	Pod         string `json:"pod,omitempty"`
	Client      string `json:"client"`
	ClientPort  int    `json:"clientPort"`
	Method      string `json:"method,omitempty"`
	Path        string `json:"path,omitempty"` // without the query; HAProxy writes " # and bytes outside ASCII as #XX
	Host        string `json:"host,omitempty"`
	HTTPVersion string `json:"httpVersion,omitempty"`
	Status      int    `json:"status,omitempty"`
	BytesOut    int64  `json:"bytesOut"` // to the client (%B)
	BytesIn     int64  `json:"bytesIn"`  // from the client (%U)
	// Timings in ms, -1 for a step not reached: HAProxy's %TR (RequestMs),
	// %Tw, %Tc, %Tr (ResponseMs), and %Ta, or %Tt for TCP (TotalMs).
	RequestMs   *int   `json:"requestMs,omitempty"`
	QueueMs     int    `json:"queueMs"`
	ConnectMs   int    `json:"connectMs"`
	ResponseMs  *int   `json:"responseMs,omitempty"`
	TotalMs     int    `json:"totalMs"`
	Termination string `json:"termination"` // HAProxy's termination state
}

// noServer is HAProxy's %s when no server was chosen.
const noServer = "<NOSRV>"

// index finds routes and pods by HAProxy's names in one State of the
// engine's.
type index struct {
	gen     uint64
	built   bool
	byProxy map[string]*dcm.Backend
	pool    map[string]bool
}

// refresh rebuilds the index when the engine's state has changed since.
func (x *index) refresh(st States) {
	state, gen := st.ActualState()
	if x.built && gen == x.gen {
		return
	}
	x.gen, x.built = gen, true
	x.byProxy = make(map[string]*dcm.Backend, len(state.Backends))
	for _, b := range state.Backends {
		// A backend that moved (MovedName) keeps its proxy while it
		// drains; the route's new backend is another proxy, so the two
		// never share a name. A retiring one still names its route.
		x.byProxy[b.ProxyName()] = b
	}
	x.pool = make(map[string]bool, len(state.Pool))
	for _, p := range state.Pool {
		x.pool[p] = true
	}
}

// entry turns a line into its Entry, naming the route and pod the index
// knows behind its backend and server.
func (x *index) entry(a haproxy.AccessLine) Entry {
	e := Entry{
		Time: a.Start.Format("2006-01-02T15:04:05.000Z07:00"), Proto: "http", Frontend: a.Frontend,
		Client: a.ClientIP, ClientPort: a.ClientPort, Method: a.Method, Path: a.Path, Host: a.Host,
		HTTPVersion: a.Version, Status: a.Status, BytesOut: a.BytesOut, BytesIn: a.BytesIn,
		QueueMs: a.Tw, ConnectMs: a.Tc, TotalMs: a.Ta, Termination: a.Termination,
	}
	if a.TCP {
		e.Proto, e.TotalMs = "tcp", a.Tt
	} else {
		tr, trr := a.TR, a.Tr
		e.RequestMs, e.ResponseMs = &tr, &trr
	}
	if a.Backend != a.Frontend {
		e.Backend = a.Backend
	}
	if a.Server != noServer {
		e.Server = a.Server
	}
	b, ok := x.byProxy[a.Backend]
	e.Spare = x.pool[a.Backend] || ok && b.Slot == a.Backend
	if !ok {
		return e
	}
	srv, found := b.Server(a.Server)
	if e.Spare && e.Server != "" && !found {
		// The spare's servers are not the ones this request went to: it
		// carries another route by now. Naming that route would be
		// wrong; the line names the spare only.
		return e
	}
	r := b.Route
	e.Namespace, e.Route, e.Kind, e.Source, e.Object = r.Namespace, r.Name, r.Kind, r.Source, r.Object
	e.Pod = srv.Pod
	return e
}

// rfc3339ms is the syslog header's time.
func rfc3339ms(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
