package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dcm-router/dcm/static"
)

// maxBody bounds every request body; the API takes small JSON documents only.
const maxBody = "64K"

func routes(e *echo.Echo, d Deps, sessions *sessions) {
	e.Use(middleware.Recover())
	e.Use(securityHeaders)
	e.Use(middleware.BodyLimit(maxBody))

	// Open: probes, metrics.
	e.GET("/healthz", healthz)
	e.GET("/readyz", readyz(d.Engine))
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(d.Gatherer, promhttp.HandlerOpts{})))
	assets := static.New()
	e.Match([]string{http.MethodGet, http.MethodHead}, static.Prefix+"*", echo.WrapHandler(assets))

	auth := e.Group("", authenticate(d, sessions))
	auth.GET("/login", loginPage(d))
	auth.POST("/login", login(d, sessions))
	auth.POST("/logout", logout(d, sessions), require(d, VerbRead, true))

	page := require(d, VerbRead, true)
	auth.GET("/", overviewPage(d, assets), page)
	auth.GET("/backends", backendsPage(d, assets), page)
	auth.GET("/backends/:name", backendPage(d, assets), page)
	auth.GET("/events", auditPage(d, assets), page)
	auth.GET("/config", configPage(d, assets), page)
	auth.GET("/whatif", whatifPage(d, assets), page)

	read := require(d, VerbRead, false)
	act := require(d, VerbAct, false)
	api := auth.Group("/api/v1")
	api.GET("/snapshot", snapshot(d.Engine), read)
	api.GET("/backends", backends(d.Engine), read)
	api.GET("/backends/:name", backend(d.Engine), read)
	api.GET("/events", events(d.Engine), read)
	api.GET("/traffic", traffic(d.Engine), read)
	api.GET("/config", config(d.Engine), read)
	api.GET("/whoami", whoami(d), read)
	api.GET("/feed", feed(d), read)
	api.POST("/plan", simulate(d.Engine), read)
	api.POST("/scale", scale(d), act)
	api.GET("/status", status(d.Engine), read)
	api.GET("/fleet", fleetStatus(d), read)
	api.GET("/fleet/events", fleetEvents(d), read)
	// Another replica's Apply: as much a change as the scale it precedes.
	kept := newExpects()
	api.POST("/expect", expect(d.Engine, kept), act)
	api.DELETE("/expect/:id", unexpect(kept), act)
	api.POST("/backends/:backend/servers/:server/state", serverState(d.Engine), act)
	api.POST("/backends/:backend/servers/:server/weight", serverWeight(d.Engine), act)
	api.POST("/reload", reload(d.Engine), act)
	api.POST("/maxconn", setMaxConn(d.Engine), act)
}
