// Package server is dcm's HTTP surface on echo: health, metrics and the JSON
// API. Handlers are closures over the dependencies passed to New; there is no
// global state.
package server

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcm-router/dcm/dcm"
)

// Engine is what the server needs of the engine.
type Engine interface {
	Snapshot() dcm.Snapshot
	Ready() bool
	Action(actor, message string, obj dcm.ObjectRef)
}

// Scaler changes the replicas of a workload through the scale subresource.
type Scaler interface {
	SetScale(ctx context.Context, namespace, kind, name string, replicas int32) error
}

// Deps are the server's dependencies.
type Deps struct {
	Engine   Engine
	Scaler   Scaler
	Gatherer prometheus.Gatherer
	// Token is the bearer token that grants the API.
	Token string
	Log   *slog.Logger
}

// New returns the HTTP handler of the portal and API.
func New(d Deps) http.Handler {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(d.Log)
	routes(e, d)
	return e
}
