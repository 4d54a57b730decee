package server

import (
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// maxBody bounds every request body; the API takes small JSON documents only.
const maxBody = "64K"

func routes(e *echo.Echo, d Deps) {
	e.Use(middleware.Recover())
	e.Use(securityHeaders)
	e.Use(middleware.BodyLimit(maxBody))

	e.GET("/healthz", healthz)
	e.GET("/readyz", readyz(d.Engine))
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(d.Gatherer, promhttp.HandlerOpts{})))

	api := e.Group("/api/v1", bearer(d.Token))
	api.GET("/snapshot", snapshot(d.Engine))
	api.POST("/scale", scale(d.Engine, d.Scaler, d.Log))
}
