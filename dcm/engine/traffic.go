package engine

import (
	"slices"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
)

// Per-route traffic metrics re-label HAProxy's show stat counters with the
// route they serve, rather than leaving users to HAProxy's exporter: a
// route is carried by a spare (be_<kind>:_pool:<n>) when it was added at
// runtime and by a backend of its own name after the next reload, and each
// reload starts a worker whose counters begin at zero. Only dcm knows which
// proxy carries which route, so only dcm can give a route one series that
// keeps its labels and only ever grows. It does so as a Prometheus counter
// that survives restarts would: per-route running totals to which each
// read adds the growth of every (worker pid, proxy) counter since the
// previous read; a counter seen for the first time in a worker, or lower
// than before (`clear counters`), adds its whole value.

// RouteKey labels a route's series.
type RouteKey struct {
	Namespace, Route string
	Kind             dcm.RouteKind
}

// TrafficCounts are running totals (or, between two reads, their growth).
type TrafficCounts struct {
	Requests, Sessions     uint64
	Responses              [6]uint64 // 1xx, 2xx, 3xx, 4xx, 5xx, other
	BytesIn, BytesOut      uint64
	ConnErrors, RespErrors uint64
}

func countsOf(r haproxy.TrafficRow) TrafficCounts {
	return TrafficCounts{Requests: r.Requests, Sessions: r.Sessions, Responses: r.Responses, BytesIn: r.BytesIn,
		BytesOut: r.BytesOut, ConnErrors: r.ConnErrors, RespErrors: r.RespErrors}
}

// fields lists the counters, so growth and sums need no field-by-field code.
func (c *TrafficCounts) fields() []*uint64 {
	return []*uint64{&c.Requests, &c.Sessions, &c.Responses[0], &c.Responses[1], &c.Responses[2], &c.Responses[3],
		&c.Responses[4], &c.Responses[5], &c.BytesIn, &c.BytesOut, &c.ConnErrors, &c.RespErrors}
}

// growth is what cur added since prev; a counter below its previous value
// was reset, so all of it is new.
func growth(cur, prev TrafficCounts) TrafficCounts {
	d := cur
	df, pf := d.fields(), prev.fields()
	for i, f := range df {
		if *f >= *pf[i] {
			*f -= *pf[i]
		}
	}
	return d
}

func (c *TrafficCounts) add(d TrafficCounts) {
	cf, df := c.fields(), d.fields()
	for i, f := range cf {
		*f += *df[i]
	}
}

// errors are what the portal's error rate counts.
func (c TrafficCounts) errors() uint64 { return c.Responses[4] + c.ConnErrors + c.RespErrors }

// requests is what the portal's request rate counts: HTTP requests, or the
// connections of a TCP (passthrough) route, which has no requests.
func (c TrafficCounts) requests() uint64 {
	if c.Requests == 0 {
		return c.Sessions
	}
	return c.Requests
}

// RouteTraffic is one route's totals and current figures.
type RouteTraffic struct {
	RouteKey
	Backend string // the route's backend name, be_<kind>:<namespace>:<route>
	TrafficCounts
	Queue int
	// Times are HAProxy's averages (queue, connect, response, total) over
	// the last 1024 requests of the proxy that carries the route, in ms.
	Times   [4]int
	Servers []ServerTraffic // with per-server series only; by name
	// rates are the recent per-second request and error rates, oldest first.
	requests, errs []float64
}

// ServerTraffic is one server's totals within a route.
type ServerTraffic struct {
	Name string
	TrafficCounts
	Queue int
}

// carrier says which route an HAProxy proxy carries.
type carrier struct {
	key      RouteKey
	backend  string
	retiring bool // a backend draining beside the route's current one
}

type counterKey struct{ proxy, server string }

// trafficBook turns reads of show stat into per-route totals.
type trafficBook struct {
	pid    int
	at     time.Time
	last   map[counterKey]TrafficCounts
	routes map[RouteKey]*RouteTraffic
}

func newTrafficBook() *trafficBook {
	return &trafficBook{last: map[counterKey]TrafficCounts{}, routes: map[RouteKey]*RouteTraffic{}}
}

// add folds one read into the totals. carriers maps each proxy carrying a
// route to it (several proxies may carry one route while one drains); a
// route no current backend carries loses its series.
func (t *trafficBook) add(read haproxy.Traffic, carriers map[string]carrier, at time.Time) {
	last := t.last
	if read.Pid != t.pid {
		// A new worker (a reload): its counters began at zero, and the
		// old worker's are no longer readable.
		last = map[counterKey]TrafficCounts{}
	}
	live := map[RouteKey]bool{}
	for _, c := range carriers {
		if !c.retiring {
			live[c.key] = true
		}
	}
	before := map[RouteKey]TrafficCounts{}
	servers := map[RouteKey]map[string]*ServerTraffic{}
	for k, rt := range t.routes {
		if !live[k] {
			delete(t.routes, k)
			continue
		}
		before[k] = rt.TrafficCounts
		rt.Queue, rt.Times = 0, [4]int{}
		servers[k] = map[string]*ServerTraffic{}
		for i := range rt.Servers {
			servers[k][rt.Servers[i].Name] = &rt.Servers[i]
		}
	}
	next := make(map[counterKey]TrafficCounts, len(read.Rows))
	for _, row := range read.Rows {
		ck := counterKey{row.Proxy, row.Server}
		cur := countsOf(row)
		// Every proxy's value is kept, a free spare's too: when a route
		// takes it, only what it serves from then on is the route's.
		next[ck] = cur
		c, ok := carriers[row.Proxy]
		if !ok || !live[c.key] {
			continue
		}
		d := growth(cur, last[ck])
		rt := t.route(c)
		if row.Server != "" {
			st := servers[c.key][row.Server]
			if st == nil {
				if servers[c.key] == nil {
					servers[c.key] = map[string]*ServerTraffic{}
				}
				st = &ServerTraffic{Name: row.Server}
				servers[c.key][row.Server] = st
			}
			st.add(d)
			st.Queue += row.Queue
			continue
		}
		rt.add(d)
		rt.Queue += row.Queue
		if !c.retiring {
			rt.Times = row.Times
		}
	}
	for k, rt := range t.routes {
		rt.Servers = rt.Servers[:0:0]
		for _, st := range servers[k] {
			rt.Servers = append(rt.Servers, *st)
		}
		slices.SortFunc(rt.Servers, func(a, b ServerTraffic) int { return compareStrings(a.Name, b.Name) })
		t.sample(rt, before[k], at)
	}
	t.pid, t.last = read.Pid, next
	t.at = at
}

// route returns the route's entry, made on its first read.
func (t *trafficBook) route(c carrier) *RouteTraffic {
	rt := t.routes[c.key]
	if rt == nil {
		rt = &RouteTraffic{RouteKey: c.key}
		t.routes[c.key] = rt
	}
	if !c.retiring {
		rt.Backend = c.backend
	}
	return rt
}

// sample appends the rates since the previous read (none on the first).
func (t *trafficBook) sample(rt *RouteTraffic, before TrafficCounts, at time.Time) {
	if t.at.IsZero() || !at.After(t.at) {
		return
	}
	secs := at.Sub(t.at).Seconds()
	d := growth(rt.TrafficCounts, before)
	rt.requests = appendSample(rt.requests, float64(d.requests())/secs)
	rt.errs = appendSample(rt.errs, float64(d.errors())/secs)
}

func appendSample(s []float64, v float64) []float64 {
	if len(s) >= dcm.TrafficSamples {
		s = slices.Delete(s, 0, len(s)-dcm.TrafficSamples+1)
	}
	return append(s, v)
}

// view copies the routes for readers (the collector, the portal).
func (t *trafficBook) view() []RouteTraffic {
	out := make([]RouteTraffic, 0, len(t.routes))
	for _, rt := range t.routes {
		c := *rt
		c.Servers = slices.Clone(rt.Servers)
		c.requests, c.errs = slices.Clone(rt.requests), slices.Clone(rt.errs)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b RouteTraffic) int { return compareStrings(a.Backend, b.Backend) })
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// carriers maps every HAProxy proxy that carries a route of st to it.
func carriers(st dcm.State) map[string]carrier {
	out := make(map[string]carrier, len(st.Backends))
	for _, b := range st.Backends {
		r := b.Route
		out[b.ProxyName()] = carrier{key: RouteKey{Namespace: r.Namespace, Route: r.Name, Kind: b.Kind},
			backend: b.Name, retiring: b.Retiring}
	}
	return out
}
