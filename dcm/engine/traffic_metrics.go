package engine

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// TrafficCollector exposes the per-route totals the traffic reader keeps.
// A scrape only sends what the last read built (it never asks HAProxy), so
// /metrics costs the same however slow show stat is on 10,000 backends,
// and scrapes cannot pile commands onto the admin socket. The reader also
// builds the samples in the order the registry sorts them into: at 10,000
// routes (170,000 series) that sort was a third of a scrape, and on sorted
// input it is linear.
type TrafficCollector struct {
	mu      sync.Mutex
	routes  []RouteTraffic
	metrics []prometheus.Metric

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

// set replaces what scrapes report, building the samples.
func (c *TrafficCollector) set(routes []RouteTraffic) {
	by := map[*prometheus.Desc]*[]sample{}
	for _, f := range c.families() {
		by[f.desc] = &[]sample{}
	}
	add := func(f family, v float64, values ...string) { f.add(by[f.desc], v, values...) }
	responseClasses := [6]string{"1xx", "2xx", "3xx", "4xx", "5xx", "other"}
	timePhases := [4]string{"queue", "connect", "response", "total"}
	for _, rt := range routes {
		l := []string{rt.Namespace, rt.Route, string(rt.Kind)}
		add(c.requests, float64(rt.Requests), l...)
		add(c.sessions, float64(rt.Sessions), l...)
		for i, class := range responseClasses {
			add(c.responses, float64(rt.Responses[i]), append(l, class)...)
		}
		add(c.bytesIn, float64(rt.BytesIn), l...)
		add(c.bytesOut, float64(rt.BytesOut), l...)
		add(c.connErrors, float64(rt.ConnErrors), l...)
		add(c.respErrors, float64(rt.RespErrors), l...)
		add(c.queue, float64(rt.Queue), l...)
		for i, phase := range timePhases {
			add(c.times, float64(rt.Times[i])/1000, append(l, phase)...)
		}
		for _, s := range rt.Servers {
			sl := append(l[:3:3], s.Name)
			add(c.srvRequests, float64(s.Requests), sl...)
			for i, class := range responseClasses {
				add(c.srvResponses, float64(s.Responses[i]), append(sl, class)...)
			}
			add(c.srvConnErrors, float64(s.ConnErrors), sl...)
			add(c.srvRespErrors, float64(s.RespErrors), sl...)
			add(c.srvQueue, float64(s.Queue), sl...)
		}
	}
	var metrics []prometheus.Metric
	for _, f := range c.families() {
		ss := *by[f.desc]
		sort.Slice(ss, func(i, j int) bool { return ss[i].key < ss[j].key })
		for _, s := range ss {
			metrics = append(metrics, s.m)
		}
	}
	c.mu.Lock()
	c.routes, c.metrics = routes, metrics
	c.mu.Unlock()
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
	c.mu.Lock()
	metrics := c.metrics // replaced by each read, never modified
	c.mu.Unlock()
	for _, m := range metrics {
		ch <- m
	}
}
