// Package feedtest serves dcm's real HTTP handler (server.New) with the
// engine's real event hub behind it, for tests of feed clients outside the
// server package: the feed, its auth and its order are the real ones; only
// HAProxy and Kubernetes are missing, so the snapshot is whatever the test
// sets and events are whatever it publishes.
package feedtest

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/engine"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/server"
)

// Token is the admin token the test server accepts.
const Token = "feedtest-0123456789abcdef01234567"

// Engine is the part of server.Engine a feed needs, on the engine's real hub.
type Engine struct {
	Hub  *engine.Hub
	mu   sync.Mutex
	snap dcm.Snapshot
}

// NewEngine keeps the last capacity events for resuming clients and serves
// snap (its Seq is replaced by the hub's) as the snapshot.
func NewEngine(capacity int, snap dcm.Snapshot) *Engine {
	return &Engine{Hub: engine.NewHub(capacity), snap: snap}
}

// Publish hands ev to the hub, which numbers it.
func (e *Engine) Publish(ev dcm.Event) dcm.Event { return e.Hub.Publish(ev) }

// SetSnapshot replaces the picture later snapshots show.
func (e *Engine) SetSnapshot(s dcm.Snapshot) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.snap = s
}

func (e *Engine) Snapshot() dcm.Snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.snap
	s.Seq = e.Hub.Seq()
	return s
}

func (e *Engine) Ready() bool { return true }

// Status is the feed's seq; the test engine applies nothing.
func (e *Engine) Status() dcm.ReplicaStatus { return dcm.ReplicaStatus{Seq: e.Hub.Seq(), Ready: true} }

// TrafficRates has no traffic: feed tests send no requests through HAProxy.
func (e *Engine) TrafficRates() dcm.TrafficRates {
	return dcm.TrafficRates{Every: 1, Backends: map[string]dcm.TrafficSeries{}}
}

func (e *Engine) Subscribe(since uint64, queue int) ([]dcm.Event, bool, server.Subscription) {
	backlog, ok, sub := e.Hub.Subscribe(since, queue)
	return backlog, ok, sub
}

func (e *Engine) Events(since uint64) ([]dcm.Event, bool) { return e.Hub.Since(since) }

func (e *Engine) Action(actor, message string, obj dcm.ObjectRef) {
	e.Hub.Publish(dcm.Event{Type: dcm.EventAction, Actor: actor, Message: message, Object: &obj})
}

// SetServerState and SetServerWeight know no servers: there is no HAProxy.
func (e *Engine) SetServerState(_, backend, srv string, _ dcm.AdminState) error {
	return fmt.Errorf("%s/%s: %w", backend, srv, dcm.ErrNotFound)
}

func (e *Engine) SetServerWeight(_, backend, srv string, _ int) error {
	return fmt.Errorf("%s/%s: %w", backend, srv, dcm.ErrNotFound)
}

func (e *Engine) Reload(actor string) { e.Action(actor, "reload", dcm.ObjectRef{}) }

// SetMaxConn records the action: the feed's tests reach no HAProxy.
func (e *Engine) SetMaxConn(_ context.Context, actor string, n int) error {
	e.Action(actor, fmt.Sprintf("maxconn %d", n), dcm.ObjectRef{})
	return nil
}

// Simulate previews nothing: the feed's tests need no planner.
func (e *Engine) Simulate([]dcm.WhatIf) dcm.Simulation { return dcm.Simulation{Seq: e.Hub.Seq()} }

// Expect records nothing.
func (e *Engine) Expect([]dcm.WhatIf) func() { return func() {} }

func (e *Engine) Config(context.Context) (dcm.ConfigView, error) { return dcm.ConfigView{}, nil }

// Options shape the test server.
type Options struct {
	// EventBuffer is the hub's ring (default 1000).
	EventBuffer int
	// FeedQueue and PingEvery go to server.Deps (defaults: the server's).
	FeedQueue int
	PingEvery time.Duration
	// Snapshot is the picture the engine serves.
	Snapshot dcm.Snapshot
}

// Server is server.New on a loopback port.
type Server struct {
	// URL is the portal's base URL (http://127.0.0.1:port).
	URL    string
	Engine *Engine
	// Dropped and Clients are the feed's metrics (dcm_feed_dropped_total, dcm_feed_clients).
	Dropped prometheus.Counter
	Clients prometheus.Gauge

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	// gen is canceled by Bye: the feeds open at that moment say bye.
	gen    context.Context
	cancel context.CancelFunc
}

// Start serves until the test ends.
func Start(tb testing.TB, o Options) *Server {
	tb.Helper()
	if o.EventBuffer <= 0 {
		o.EventBuffer = 1000
	}
	s := &Server{
		Engine:  NewEngine(o.EventBuffer, o.Snapshot),
		Dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "dcm_feed_dropped_total"}),
		Clients: prometheus.NewGauge(prometheus.GaugeOpts{Name: "dcm_feed_clients"}),
		conns:   map[net.Conn]struct{}{},
	}
	s.gen, s.cancel = context.WithCancel(context.Background())
	h := server.New(server.Deps{
		Engine: s.Engine, Gatherer: prometheus.NewRegistry(),
		Authenticator: server.SingleToken(Token, "feedtest"), Authorizer: server.RoleAuthorizer{},
		FeedClients: s.Clients, FeedDropped: s.Dropped,
		FeedQueue: o.FeedQueue, PingEvery: o.PingEvery,
		Log: slog.New(slog.DiscardHandler),
	})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		down := s.down
		s.mu.Unlock()
		if down {
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	ts.Config.ConnContext = func(_ context.Context, c net.Conn) context.Context {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.conns[c] = struct{}{}
		return s.gen
	}
	ts.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.conns, c)
		}
	}
	ts.Start()
	s.URL = ts.URL
	tb.Cleanup(func() {
		// httptest waits for handlers, and a feed's handler runs until its
		// client leaves: end the feeds first.
		s.mu.Lock()
		s.cancel()
		s.mu.Unlock()
		s.Cut()
		ts.Close()
	})
	return s
}

// SetDown makes the server answer every request with 503 (true) or serve
// again (false), as a restarting dcm would.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// Bye makes every open feed say bye with close code 4001, as at shutdown;
// later connections are served as usual.
func (s *Server) Bye() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancel()
	s.gen, s.cancel = context.WithCancel(context.Background())
}

// Cut closes every connection's socket without a word, as a network
// failure would.
func (s *Server) Cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
		delete(s.conns, c)
	}
}

// WaitSubscribers waits until the hub has n subscribers (the feeds
// connected, or gone).
func (s *Server) WaitSubscribers(tb testing.TB, n int) {
	tb.Helper()
	testkit.Eventually(tb, fmt.Sprintf("%d subscribers", n), 10*time.Second, func() error {
		if got := s.Engine.Hub.Subscribers(); got != n {
			return fmt.Errorf("the hub has %d", got)
		}
		return nil
	})
}

// DroppedCount reads dcm_feed_dropped_total.
func (s *Server) DroppedCount() float64 {
	var m dto.Metric
	_ = s.Dropped.Write(&m)
	return m.GetCounter().GetValue()
}
