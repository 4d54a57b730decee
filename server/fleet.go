package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/server/fleet"
)

// Fleet is what the server needs of the fleet collector (server/fleet).
type Fleet interface {
	Fleet(ctx context.Context, token string) dcm.Fleet
	Expect(ctx context.Context, token string, body any) []fleet.Expected
	// Unexpect takes back the expectations of a scale that failed.
	Unexpect(ctx context.Context, token string, expected []fleet.Expected)
	Find(name string) (fleet.Peer, bool)
	Events(ctx context.Context, token string, p fleet.Peer, since uint64) (dcm.EventsPage, error)
}

// tokenOf is the token the request proved its identity with: its bearer
// token, or the one its session was signed in with.
func tokenOf(c echo.Context) string {
	if token, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(token)
	}
	if s, ok := c.Get(sessionKey).(*session); ok {
		return s.token
	}
	return ""
}

// status is this replica's account of itself (GET /api/v1/status), what
// the other replicas' fleet views read.
func status(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error { return c.JSON(http.StatusOK, eng.Status()) }
}

// fleetStatus is GET /api/v1/fleet: every replica, asked with the
// caller's token; without --peers or --peer-service, this one alone.
func fleetStatus(d Deps) echo.HandlerFunc {
	return func(c echo.Context) error { return c.JSON(http.StatusOK, fleetOf(c, d)) }
}

func fleetOf(c echo.Context, d Deps) dcm.Fleet {
	return fleetWithin(c, d, 0)
}

// pageFleetWait bounds how long the overview's rendering waits for the
// other replicas: a peer that does not answer shows as unreachable, and
// the script reads the fleet again a second later.
const pageFleetWait = time.Second

// fleetWithin is fleetOf, waiting at most wait for the peers (0: the
// collector's own bound per request).
func fleetWithin(c echo.Context, d Deps, wait time.Duration) dcm.Fleet {
	if d.Fleet == nil {
		st := d.Engine.Status()
		f := dcm.Fleet{Replicas: []dcm.Replica{{Name: c.Request().Host, Self: true, Status: &st}}}
		f.Decide()
		return f
	}
	ctx := c.Request().Context()
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	return d.Fleet.Fleet(ctx, tokenOf(c))
}

// fleetEvents is GET /api/v1/fleet/events?replica=&since=: a replica's
// events after since, read with the caller's token (this replica's own
// without a name), so the what-if page follows every replica's commands
// and verdict after an Apply.
func fleetEvents(d Deps) echo.HandlerFunc {
	return func(c echo.Context) error {
		since, err := strconv.ParseUint(c.QueryParam("since"), 10, 64)
		if err != nil && c.QueryParam("since") != "" {
			return echo.NewHTTPError(http.StatusBadRequest, "since must be a seq")
		}
		name := c.QueryParam("replica")
		var p fleet.Peer
		if name != "" && d.Fleet != nil {
			var ok bool
			if p, ok = d.Fleet.Find(name); !ok {
				return echo.NewHTTPError(http.StatusNotFound, "no replica "+strconv.Quote(name))
			}
		}
		if name == "" || p.Self {
			evs, ok := d.Engine.Events(since)
			return c.JSON(http.StatusOK, eventsOf(evs, ok, since))
		}
		page, err := d.Fleet.Events(c.Request().Context(), tokenOf(c), p, since)
		if err != nil {
			return echo.NewHTTPError(http.StatusBadGateway, name+": "+err.Error())
		}
		return c.JSON(http.StatusOK, page)
	}
}

// expectRequest is the body of POST /api/v1/expect: a scale another
// replica is about to make.
type expectRequest struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Replicas  *int32 `json:"replicas"`
}

// expect is POST /api/v1/expect: another replica is about to scale from
// a what-if; this one records what it predicts the scale does to its own
// HAProxy, and later publishes its prediction event like the replica that
// scales. It answers the seq the prediction starts after.
func expect(eng Engine, kept *expects) echo.HandlerFunc {
	return func(c echo.Context) error {
		var req expectRequest
		if err := c.Bind(&req); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "body must be JSON: "+err.Error())
		}
		sr := scaleRequest{Namespace: req.Namespace, Kind: req.Kind, Name: req.Name, Replicas: req.Replicas}
		if err := sr.validate(); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, err.Error())
		}
		seq := eng.Status().Seq
		id := kept.add(eng.Expect(sr.whatifs()))
		return c.JSON(http.StatusOK, expected{Seq: seq, ID: id})
	}
}

// expected answers POST /api/v1/expect: the seq the prediction starts
// after, and the id that DELETE /api/v1/expect/{id} cancels it by.
type expected struct {
	Seq uint64 `json:"seq"`
	ID  string `json:"id"`
}

// unexpect is DELETE /api/v1/expect/{id}: the scale the expectation was
// for failed on the replica that asked for it.
func unexpect(kept *expects) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !kept.take(c.Param("id")) {
			return echo.NewHTTPError(http.StatusNotFound, "no such expectation (it expired, or was cancelled)")
		}
		return c.NoContent(http.StatusNoContent)
	}
}
