package engine

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// Metrics are dcm's own Prometheus collectors (DESIGN §8). Per-server traffic
// stays with HAProxy's exporter, so no series here grows with the number of
// servers.
type Metrics struct {
	Updates            *prometheus.CounterVec
	Reloads            *prometheus.CounterVec
	ReloadFailures     *prometheus.CounterVec
	ReloadDuration     prometheus.Histogram
	ConfigWrite        prometheus.Histogram
	RuntimeCommand     *prometheus.HistogramVec
	RuntimeErrors      *prometheus.CounterVec
	EventToApplied     prometheus.Histogram
	Servers            *prometheus.GaugeVec
	Backends           *prometheus.GaugeVec
	PoolFree           *prometheus.GaugeVec
	Rejected           *prometheus.CounterVec
	PredictionMismatch prometheus.Counter
	ObservationPasses  prometheus.Counter
	FeedClients        prometheus.Gauge
	FeedDropped        prometheus.Counter
	// Traffic is the per-route traffic (traffic.go); TrafficRead times
	// each read of HAProxy's counters behind it, TrafficErrors counts the
	// reads that failed.
	Traffic       *TrafficCollector
	TrafficRead   prometheus.Histogram
	TrafficErrors prometheus.Counter

	// counts are the servers by admin state and the backends by kind
	// behind the Servers and Backends gauges, kept as backends change
	// (follow) rather than recounted over the whole state.
	counts struct {
		sync.Mutex
		servers  map[dcm.AdminState]int
		backends map[dcm.RouteKind]int
	}
}

// NewMetrics creates the collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	fast := []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	m := &Metrics{
		Updates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dcm_updates_total", Help: "Syncs by what they needed: nothing, runtime commands only, or a reload.",
		}, []string{"result"}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dcm_reloads_total", Help: "HAProxy reloads by reason.",
		}, []string{"reason"}),
		ReloadFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dcm_reload_failures_total", Help: "Reloads that failed (the old worker kept serving), by reason of the reload.",
		}, []string{"reason"}),
		ReloadDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "dcm_reload_duration_seconds", Help: "From validating the new configuration to the new worker answering.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		ConfigWrite: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "dcm_config_write_duration_seconds", Help: "Rendering and atomically writing haproxy.cfg and map files.",
			Buckets: fast,
		}),
		RuntimeCommand: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "dcm_runtime_command_duration_seconds", Help: "Admin socket commands, by command verb.",
			Buckets: fast,
		}, []string{"command"}),
		RuntimeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dcm_runtime_errors_total", Help: "Admin socket commands that failed, by command verb.",
		}, []string{"command"}),
		EventToApplied: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "dcm_event_to_applied_seconds", Help: "From a Kubernetes event seen by an informer to HAProxy acknowledging the change.",
			Buckets: fast,
		}),
		Servers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dcm_servers", Help: "HAProxy servers managed by dcm, by admin state.",
		}, []string{"state"}),
		Backends: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dcm_backends", Help: "HAProxy backends managed by dcm, by route kind.",
		}, []string{"kind"}),
		PoolFree: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dcm_pool_free", Help: "Free spare backends, by route kind: new routes of that kind without a reload.",
		}, []string{"kind"}),
		Rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dcm_rejected_objects_total", Help: "Kubernetes objects refused because a field cannot safely reach HAProxy, by reason.",
		}, []string{"reason"}),
		PredictionMismatch: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dcm_prediction_mismatch_total", Help: "Observations of HAProxy that differ from the state the planner predicted.",
		}),
		// An operator sees the read-back alive, and a change that must
		// survive it (an admin's override) has once this moves.
		ObservationPasses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dcm_observation_passes_total", Help: "Passes that read every backend's state back from HAProxy and merged it into dcm's (the periodic pass, in chunks, or one read of all).",
		}),
		FeedClients: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dcm_feed_clients", Help: "Websocket feed clients connected.",
		}),
		FeedDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dcm_feed_dropped_total", Help: "Feed clients closed because they fell behind (they can resume).",
		}),
		Traffic: newTrafficCollector(),
		TrafficRead: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "dcm_traffic_read_duration_seconds", Help: "Reading and folding HAProxy's show stat into the per-route traffic series (one read per --traffic-interval).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		TrafficErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dcm_traffic_read_errors_total", Help: "Reads of HAProxy's traffic counters that failed (the series keep their last values).",
		}),
	}
	reg.MustRegister(m.Traffic, m.TrafficRead, m.TrafficErrors, m.Updates, m.Reloads, m.ReloadFailures, m.ReloadDuration, m.ConfigWrite, m.RuntimeCommand,
		m.RuntimeErrors, m.EventToApplied, m.Servers, m.Backends, m.PoolFree, m.Rejected, m.PredictionMismatch, m.ObservationPasses, m.FeedClients, m.FeedDropped)
	for _, r := range []string{"noop", "dynamic", "reload"} {
		m.Updates.WithLabelValues(r)
	}
	return m
}

// ObserveCommand records one admin socket command; it is the hook the
// haproxy client calls.
func (m *Metrics) ObserveCommand(command string, d time.Duration, err error) {
	verb := CommandVerb(command)
	m.RuntimeCommand.WithLabelValues(verb).Observe(d.Seconds())
	if err != nil {
		m.RuntimeErrors.WithLabelValues(verb).Inc()
	}
}

// CommandVerb keeps the words of a command that name it ("set server",
// "show stat"), so the label never carries backend or server names.
func CommandVerb(command string) string {
	f := strings.Fields(command)
	switch {
	case len(f) == 0:
		return "unknown"
	case len(f) == 1:
		return f[0]
	}
	return f[0] + " " + f[1]
}

// follow moves the state gauges from before to after, where only the
// named backends differ (the engine names those whose pointer moved).
func (m *Metrics) follow(before, after dcm.State, names []string) {
	m.counts.Lock()
	defer m.counts.Unlock()
	if m.counts.servers == nil {
		m.counts.servers = map[dcm.AdminState]int{dcm.StateReady: 0, dcm.StateDrain: 0, dcm.StateMaint: 0}
		m.counts.backends = map[dcm.RouteKind]int{dcm.KindHTTP: 0}
	}
	add := func(b *dcm.Backend, n int) {
		m.counts.backends[b.Kind] += n
		for _, s := range b.Servers {
			m.counts.servers[s.State] += n
		}
	}
	for _, name := range names {
		if b, ok := before.Backend(name); ok {
			add(b, -1)
		}
		if b, ok := after.Backend(name); ok {
			add(b, 1)
		}
	}
	for state, n := range m.counts.servers {
		m.Servers.WithLabelValues(string(state)).Set(float64(n))
	}
	for k, n := range m.counts.backends {
		m.Backends.WithLabelValues(string(k)).Set(float64(n))
	}
	free := map[dcm.RouteKind]int{}
	for _, k := range routing.PoolKinds {
		free[k] = 0
	}
	// Sticky spares too: a gauge not set when the last one is taken would
	// keep saying one is free.
	free[routing.PoolSticky] = 0
	for _, name := range after.Pool {
		if k, ok := routing.SpareKind(name); ok {
			free[k]++
		}
	}
	for k, n := range free {
		m.PoolFree.WithLabelValues(string(k)).Set(float64(n))
	}
}
