package server

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// actorKey is where bearer stores who made the request, for the audit log.
const actorKey = "dcm.actor"

// bearer admits requests that carry the API token. Kubernetes TokenReview and
// per-action SubjectAccessReview come with the portal; until then the one
// token is the admin.
func bearer(token string) echo.MiddlewareFunc {
	want := []byte(token)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			got, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
			if !ok || len(want) == 0 || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="dcm"`)
				return echo.NewHTTPError(http.StatusUnauthorized, "a valid bearer token is required")
			}
			c.Set(actorKey, "admin-token")
			return next(c)
		}
	}
}

func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'self'")
		return next(c)
	}
}
