// Package server is dcm's HTTP surface on echo: the portal's pages, the JSON
// API, the websocket feed, health and metrics. Handlers are closures over the
// dependencies passed to New; there is no global state.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcm-router/dcm/dcm"
)

// Engine is what the server needs of the engine.
type Engine interface {
	Snapshot() dcm.Snapshot
	Ready() bool
	// Subscribe returns the events after since (resumed false when they are
	// no longer kept) and a subscription to every later one, without a gap.
	Subscribe(since uint64, queue int) (backlog []dcm.Event, resumed bool, sub Subscription)
	// Events returns the events after since still kept (false: some are gone).
	Events(since uint64) ([]dcm.Event, bool)
	Action(actor, message string, obj dcm.ObjectRef)
	// SetServerState overrides Kubernetes for one server: drain or maint
	// hold until set back to ready, which returns control to Kubernetes.
	SetServerState(actor, backend, server string, state dcm.AdminState) error
	// SetServerWeight overrides a server's weight; 0 < weight ≤ 256, or -1 to
	// return it to Kubernetes.
	SetServerWeight(actor, backend, server string, weight int) error
	// Reload asks for a reload with reason manual.
	Reload(actor string)
	// SetMaxConn changes HAProxy's global maxconn (a reload when the value
	// is above the one the worker started with).
	SetMaxConn(ctx context.Context, actor string, n int) error
	// Config reads the files HAProxy loads and checks them against its runtime state.
	Config(ctx context.Context) (dcm.ConfigView, error)
	// Simulate previews what-ifs with the planner (POST /api/v1/plan).
	Simulate(whatifs []dcm.WhatIf) dcm.Simulation
	// Expect records a change's prediction before it is made, to compare
	// with what is applied; cancel drops it if the change fails.
	Expect(whatifs []dcm.WhatIf) (cancel func())
	// Status is this replica's account of itself for the fleet view.
	Status() dcm.ReplicaStatus
	// TrafficRates are the routes' recent request and error rates, kept by
	// the engine's traffic reader (GET /api/v1/traffic).
	TrafficRates() dcm.TrafficRates
}

// Subscription is a live feed of engine events.
type Subscription = dcm.Subscription

// Scaler changes the replicas of a workload through the scale subresource.
type Scaler interface {
	SetScale(ctx context.Context, namespace, kind, name string, replicas int32) error
}

// Deps are the server's dependencies.
type Deps struct {
	Engine Engine
	Scaler Scaler
	// Fleet reads the other dcm replicas (nil: this one alone).
	Fleet    Fleet
	Gatherer prometheus.Gatherer
	// Authenticator turns a bearer token into an identity; Authorizer
	// decides what the identity may do.
	Authenticator Authenticator
	Authorizer    Authorizer
	// Metrics for the feed (nil: not recorded).
	FeedClients prometheus.Gauge
	FeedDropped prometheus.Counter
	// PingEvery is the feed's keep-alive period (default 20s).
	PingEvery time.Duration
	// FeedQueue bounds the events queued for one feed client (default 1024).
	FeedQueue int
	// SecureCookies marks the session cookie Secure (the portal is served over TLS).
	SecureCookies bool
	Log           *slog.Logger

	// guessing limits wrong tokens per client address (login and bearer).
	guessing *failureLimit
}

func (d Deps) withDefaults() Deps {
	if d.PingEvery <= 0 {
		d.PingEvery = 20 * time.Second
	}
	if d.FeedQueue <= 0 {
		d.FeedQueue = 1024
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	d.guessing = newFailureLimit(maxTokenFailures, time.Minute)
	return d
}

// New returns the HTTP handler of the portal and API.
func New(d Deps) http.Handler {
	d = d.withDefaults()
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(d.Log)
	routes(e, d, newSessions())
	return e
}
