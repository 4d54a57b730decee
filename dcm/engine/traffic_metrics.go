package engine

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// TrafficCollector exposes the per-route totals the traffic reader keeps.
// A scrape only copies what the last read left (it never asks HAProxy), so
// /metrics costs the same however slow show stat is on 10,000 backends,
// and scrapes cannot pile commands onto the admin socket.
type TrafficCollector struct {
	mu     sync.Mutex
	routes []RouteTraffic

	requests, sessions, responses, bytesIn, bytesOut, connErrors, respErrors, queue, times *prometheus.Desc
	// The per-server families, filled only with --metrics-per-server.
	srvRequests, srvResponses, srvConnErrors, srvRespErrors, srvQueue *prometheus.Desc
}

func newTrafficCollector() *TrafficCollector {
	route := []string{"namespace", "route", "kind"}
	server := append(route[:3:3], "server")
	d := func(name, help string, labels []string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(labels[:len(labels):len(labels)], extra...), nil)
	}
	return &TrafficCollector{
		requests:      d("dcm_route_requests_total", "HTTP requests a route's backend received (HAProxy's req_tot), across reloads and pool moves.", route),
		sessions:      d("dcm_route_connections_total", "Connections (sessions) a route's backend took (HAProxy's stot); a passthrough route's only load figure.", route),
		responses:     d("dcm_route_responses_total", "HTTP responses of a route by status class (HAProxy's hrsp_*).", route, "code"),
		bytesIn:       d("dcm_route_bytes_in_total", "Bytes received from clients for a route (HAProxy's bin).", route),
		bytesOut:      d("dcm_route_bytes_out_total", "Bytes sent to clients for a route (HAProxy's bout).", route),
		connErrors:    d("dcm_route_connection_errors_total", "Failed connections to a route's pods (HAProxy's econ).", route),
		respErrors:    d("dcm_route_response_errors_total", "Responses from a route's pods that were aborted or invalid (HAProxy's eresp).", route),
		queue:         d("dcm_route_queue", "Requests queued for a route's pods now (HAProxy's qcur).", route),
		times:         d("dcm_route_average_time_seconds", "HAProxy's average over the last 1024 requests of a route's backend of the time spent queued, connecting, waiting for the response, and in total (qtime, ctime, rtime, ttime).", route, "phase"),
		srvRequests:   d("dcm_route_server_requests_total", "HTTP requests a route's server received (--metrics-per-server).", server),
		srvResponses:  d("dcm_route_server_responses_total", "HTTP responses of a route's server by status class (--metrics-per-server).", server, "code"),
		srvConnErrors: d("dcm_route_server_connection_errors_total", "Failed connections to a route's server (--metrics-per-server).", server),
		srvRespErrors: d("dcm_route_server_response_errors_total", "Aborted or invalid responses of a route's server (--metrics-per-server).", server),
		srvQueue:      d("dcm_route_server_queue", "Requests queued for a route's server now (--metrics-per-server).", server),
	}
}

// set replaces what scrapes report.
func (c *TrafficCollector) set(routes []RouteTraffic) {
	c.mu.Lock()
	c.routes = routes
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
	for _, d := range []*prometheus.Desc{c.requests, c.sessions, c.responses, c.bytesIn, c.bytesOut, c.connErrors, c.respErrors,
		c.queue, c.times, c.srvRequests, c.srvResponses, c.srvConnErrors, c.srvRespErrors, c.srvQueue} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *TrafficCollector) Collect(ch chan<- prometheus.Metric) {
	routes := c.current() // replaced by each read, never modified
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	responseClasses := [6]string{"1xx", "2xx", "3xx", "4xx", "5xx", "other"}
	timePhases := [4]string{"queue", "connect", "response", "total"}
	for _, rt := range routes {
		l := []string{rt.Namespace, rt.Route, string(rt.Kind)}
		counter(c.requests, rt.Requests, l...)
		counter(c.sessions, rt.Sessions, l...)
		for i, class := range responseClasses {
			counter(c.responses, rt.Responses[i], append(l, class)...)
		}
		counter(c.bytesIn, rt.BytesIn, l...)
		counter(c.bytesOut, rt.BytesOut, l...)
		counter(c.connErrors, rt.ConnErrors, l...)
		counter(c.respErrors, rt.RespErrors, l...)
		gauge(c.queue, float64(rt.Queue), l...)
		for i, phase := range timePhases {
			gauge(c.times, float64(rt.Times[i])/1000, append(l, phase)...)
		}
		for _, s := range rt.Servers {
			sl := append(l[:3:3], s.Name)
			counter(c.srvRequests, s.Requests, sl...)
			for i, class := range responseClasses {
				counter(c.srvResponses, s.Responses[i], append(sl, class)...)
			}
			counter(c.srvConnErrors, s.ConnErrors, sl...)
			counter(c.srvRespErrors, s.RespErrors, sl...)
			gauge(c.srvQueue, float64(s.Queue), sl...)
		}
	}
}
