package engine

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// TrafficCollector exposes the per-route totals the traffic reader keeps.
// A scrape only reports what the last read found (it never asks HAProxy),
// so /metrics costs the same however slow show stat is on 10,000 backends,
// and scrapes cannot pile commands onto the admin socket. The samples are
// built at the scrape, one family at a time, from the reader's compact
// totals: held between scrapes, the 170,000 samples of 10,000 routes took
// about 100 MB of dcm's heap. Each family is sent in the order the
// registry sorts its samples into: that sort was a third of a scrape, and
// on sorted input it is linear.
type TrafficCollector struct {
	mu     sync.Mutex
	routes []RouteTraffic

	requests, sessions, responses, bytesIn, bytesOut, connErrors, respErrors, queue, times family
	// The per-server families, filled only with --metrics-per-server.
	srvRequests, srvResponses, srvConnErrors, srvRespErrors, srvQueue family
}

// family is one metric family: its description, and the order of its
// label values in which the registry sorts its samples (by label name).
type family struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	order []int
}

func newFamily(typ prometheus.ValueType, name, help string, labels ...string) family {
	order := make([]int, len(labels))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return family{desc: prometheus.NewDesc(name, help, labels, nil), typ: typ, order: order}
}

// sample is a built metric with the key it sorts by.
type sample struct {
	key string
	m   prometheus.Metric
}

// add builds one sample; values are in the family's label order.
func (f family) add(out *[]sample, v float64, values ...string) {
	var key strings.Builder
	for _, i := range f.order {
		// NUL sorts below every byte of a name: comparing the joined
		// keys compares the values one by one, as the registry does.
		key.WriteString(values[i])
		key.WriteByte(0)
	}
	*out = append(*out, sample{key.String(), prometheus.MustNewConstMetric(f.desc, f.typ, v, values...)})
}

func newTrafficCollector() *TrafficCollector {
	c, g := prometheus.CounterValue, prometheus.GaugeValue
	r := func(typ prometheus.ValueType, name, help string, extra ...string) family {
		return newFamily(typ, name, help, append([]string{"namespace", "route", "kind"}, extra...)...)
	}
	s := func(typ prometheus.ValueType, name, help string, extra ...string) family {
		return newFamily(typ, name, help, append([]string{"namespace", "route", "kind", "server"}, extra...)...)
	}
	return &TrafficCollector{
		requests:      r(c, "dcm_route_requests_total", "HTTP requests a route's backend received (HAProxy's req_tot), across reloads and pool moves."),
		sessions:      r(c, "dcm_route_connections_total", "Connections (sessions) a route's backend took (HAProxy's stot); a passthrough route's only load figure."),
		responses:     r(c, "dcm_route_responses_total", "HTTP responses of a route by status class (HAProxy's hrsp_*).", "code"),
		bytesIn:       r(c, "dcm_route_bytes_in_total", "Bytes received from clients for a route (HAProxy's bin)."),
		bytesOut:      r(c, "dcm_route_bytes_out_total", "Bytes sent to clients for a route (HAProxy's bout)."),
		connErrors:    r(c, "dcm_route_connection_errors_total", "Failed connections to a route's pods (HAProxy's econ)."),
		respErrors:    r(c, "dcm_route_response_errors_total", "Responses from a route's pods that were aborted or invalid (HAProxy's eresp)."),
		queue:         r(g, "dcm_route_queue", "Requests queued for a route's pods now (HAProxy's qcur)."),
		times:         r(g, "dcm_route_average_time_seconds", "HAProxy's average over the last 1024 requests of a route's backend of the time spent queued, connecting, waiting for the response, and in total (qtime, ctime, rtime, ttime).", "phase"),
		srvRequests:   s(c, "dcm_route_server_requests_total", "HTTP requests a route's server received (--metrics-per-server)."),
		srvResponses:  s(c, "dcm_route_server_responses_total", "HTTP responses of a route's server by status class (--metrics-per-server).", "code"),
		srvConnErrors: s(c, "dcm_route_server_connection_errors_total", "Failed connections to a route's server (--metrics-per-server)."),
		srvRespErrors: s(c, "dcm_route_server_response_errors_total", "Aborted or invalid responses of a route's server (--metrics-per-server)."),
		srvQueue:      s(g, "dcm_route_server_queue", "Requests queued for a route's server now (--metrics-per-server)."),
	}
}

func (c *TrafficCollector) families() []*family {
	return []*family{&c.requests, &c.sessions, &c.responses, &c.bytesIn, &c.bytesOut, &c.connErrors, &c.respErrors,
		&c.queue, &c.times, &c.srvRequests, &c.srvResponses, &c.srvConnErrors, &c.srvRespErrors, &c.srvQueue}
}

// set replaces what scrapes report.
func (c *TrafficCollector) set(routes []RouteTraffic) {
	c.mu.Lock()
	c.routes = routes
	c.mu.Unlock()
}

// responseClasses and timePhases label the responses by class and the
// average times by phase, in the order of TrafficCounts and RouteTraffic.
func responseClasses() [6]string { return [6]string{"1xx", "2xx", "3xx", "4xx", "5xx", "other"} }
func timePhases() [4]string      { return [4]string{"queue", "connect", "response", "total"} }

// each calls add with every sample of the routes, family by family in
// the order families lists them; per-server ones only for routes that
// carry servers.
func (c *TrafficCollector) each(routes []RouteTraffic, f *family, add func(v float64, values ...string)) {
	for _, rt := range routes {
		l := []string{rt.Namespace, rt.Route, string(rt.Kind)}
		switch f {
		case &c.requests:
			add(float64(rt.Requests), l...)
		case &c.sessions:
			add(float64(rt.Sessions), l...)
		case &c.responses:
			for i, class := range responseClasses() {
				add(float64(rt.Responses[i]), append(l, class)...)
			}
		case &c.bytesIn:
			add(float64(rt.BytesIn), l...)
		case &c.bytesOut:
			add(float64(rt.BytesOut), l...)
		case &c.connErrors:
			add(float64(rt.ConnErrors), l...)
		case &c.respErrors:
			add(float64(rt.RespErrors), l...)
		case &c.queue:
			add(float64(rt.Queue), l...)
		case &c.times:
			for i, phase := range timePhases() {
				add(float64(rt.Times[i])/1000, append(l, phase)...)
			}
		default:
			c.eachServer(rt, l, f, add)
		}
	}
}

func (c *TrafficCollector) eachServer(rt RouteTraffic, l []string, f *family, add func(v float64, values ...string)) {
	for _, s := range rt.Servers {
		sl := append(l[:3:3], s.Name)
		switch f {
		case &c.srvRequests:
			add(float64(s.Requests), sl...)
		case &c.srvResponses:
			for i, class := range responseClasses() {
				add(float64(s.Responses[i]), append(sl, class)...)
			}
		case &c.srvConnErrors:
			add(float64(s.ConnErrors), sl...)
		case &c.srvRespErrors:
			add(float64(s.RespErrors), sl...)
		case &c.srvQueue:
			add(float64(s.Queue), sl...)
		}
	}
}

// current is what the last read left; callers must not modify it.
func (c *TrafficCollector) current() []RouteTraffic {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.routes
}

// Describe implements prometheus.Collector.
func (c *TrafficCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range c.families() {
		ch <- f.desc
	}
}

// Collect implements prometheus.Collector.
func (c *TrafficCollector) Collect(ch chan<- prometheus.Metric) {
	routes := c.current()
	for _, f := range c.families() {
		var ss []sample
		c.each(routes, f, func(v float64, values ...string) { f.add(&ss, v, values...) })
		sort.Slice(ss, func(i, j int) bool { return ss[i].key < ss[j].key })
		for _, s := range ss {
			ch <- s.m
		}
	}
}
