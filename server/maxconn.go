package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/dcm-router/dcm/dcm/haproxy"
)

type maxConnRequest struct {
	MaxConn *int `json:"maxconn" form:"maxconn"`
}

// setMaxConn is POST /api/v1/maxconn: HAProxy's global maxconn, changed at
// runtime (the engine reloads when the value is above the worker's start
// value, and says so in the event log).
func setMaxConn(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error {
		var req maxConnRequest
		if err := c.Bind(&req); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "body: "+err.Error())
		}
		if req.MaxConn == nil || *req.MaxConn < 1 || *req.MaxConn > haproxy.MaxConnLimit {
			return echo.NewHTTPError(http.StatusBadRequest, "maxconn must be 1..10000000")
		}
		if err := eng.SetMaxConn(c.Request().Context(), identityOf(c).Name, *req.MaxConn); err != nil {
			return echo.NewHTTPError(http.StatusConflict, err.Error())
		}
		return c.JSON(http.StatusAccepted, map[string]any{"maxconn": *req.MaxConn})
	}
}
