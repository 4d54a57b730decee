package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/server/fleet"
)

type apiError struct {
	Error string `json:"error"`
	Seq   uint64 `json:"seq,omitempty"`
}

func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		code, msg := http.StatusInternalServerError, "internal error"
		var he *echo.HTTPError
		if errors.As(err, &he) {
			code = he.Code
			msg = fmt.Sprint(he.Message)
		} else {
			log.Error("request failed", "path", c.Path(), "err", err)
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(code)
			return
		}
		_ = c.JSON(code, apiError{Error: msg})
	}
}

func healthz(c echo.Context) error { return c.String(http.StatusOK, "ok\n") }

func readyz(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !eng.Ready() {
			return c.String(http.StatusServiceUnavailable, "haproxy not in step yet\n")
		}
		return c.String(http.StatusOK, "ok\n")
	}
}

func snapshot(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error { return c.JSON(http.StatusOK, eng.Snapshot()) }
}

// traffic answers from what the engine's last read of HAProxy's counters
// left: polling it costs no HAProxy command.
func traffic(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error {
		rates := eng.TrafficRates()
		// ?backend= keeps one: a page about one backend need not
		// download the rates of 10,000.
		if name := c.QueryParam("backend"); name != "" {
			one := map[string]dcm.TrafficSeries{}
			if s, ok := rates.Backends[name]; ok {
				one[name] = s
			}
			rates.Backends = one
		}
		return c.JSON(http.StatusOK, rates)
	}
}

func backends(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error {
		ns := c.QueryParam("namespace")
		out := []*dcm.Backend{}
		for _, b := range eng.Snapshot().Backends {
			if ns == "" || b.Route.Namespace == ns {
				out = append(out, b)
			}
		}
		return c.JSON(http.StatusOK, out)
	}
}

func findBackend(eng Engine, name string) (*dcm.Backend, bool) {
	bs := eng.Snapshot().Backends
	i := slices.IndexFunc(bs, func(b *dcm.Backend) bool { return b.Name == name })
	if i < 0 {
		return nil, false
	}
	return bs[i], true
}

func backend(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error {
		b, ok := findBackend(eng, pathParam(c, "name"))
		if !ok {
			return echo.NewHTTPError(http.StatusNotFound, "no such backend")
		}
		return c.JSON(http.StatusOK, b)
	}
}

// pathParam is echo's path parameter, unescaped (backend names hold ':').
func pathParam(c echo.Context, name string) string {
	v := c.Param(name)
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

func events(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error {
		since, err := strconv.ParseUint(c.QueryParam("since"), 10, 64)
		if err != nil && c.QueryParam("since") != "" {
			return echo.NewHTTPError(http.StatusBadRequest, "since must be a seq")
		}
		evs, ok := eng.Events(since)
		return c.JSON(http.StatusOK, eventsOf(evs, ok, since))
	}
}

func eventsOf(evs []dcm.Event, complete bool, since uint64) dcm.EventsPage {
	if evs == nil {
		evs = []dcm.Event{}
	}
	page := dcm.EventsPage{Events: evs, Complete: complete, Seq: since}
	if len(evs) > 0 {
		page.Seq = evs[len(evs)-1].Seq
	}
	return page
}

// stateRequest is the body of POST …/servers/{s}/state.
type stateRequest struct {
	State dcm.AdminState `json:"state" form:"state"`
}

// weightRequest is the body of POST …/servers/{s}/weight.
type weightRequest struct {
	Weight *int `json:"weight" form:"weight"`
}

func serverState(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error {
		var req stateRequest
		if err := c.Bind(&req); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "body: "+err.Error())
		}
		switch req.State {
		case dcm.StateReady, dcm.StateDrain, dcm.StateMaint:
		default:
			return echo.NewHTTPError(http.StatusBadRequest, "state must be ready, drain or maint")
		}
		b, s := pathParam(c, "backend"), pathParam(c, "server")
		if err := eng.SetServerState(identityOf(c).Name, b, s, req.State); err != nil {
			return actionError(err)
		}
		return done(c, b, map[string]any{"backend": b, "server": s, "state": req.State})
	}
}

func serverWeight(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error {
		var req weightRequest
		if err := c.Bind(&req); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "body: "+err.Error())
		}
		if req.Weight == nil || *req.Weight != -1 && (*req.Weight < 0 || *req.Weight > 256) {
			return echo.NewHTTPError(http.StatusBadRequest, "weight must be 0..256, or -1 to return it to Kubernetes")
		}
		b, s := pathParam(c, "backend"), pathParam(c, "server")
		if err := eng.SetServerWeight(identityOf(c).Name, b, s, *req.Weight); err != nil {
			return actionError(err)
		}
		return done(c, b, map[string]any{"backend": b, "server": s, "weight": *req.Weight})
	}
}

func actionError(err error) error {
	if errors.Is(err, dcm.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, err.Error())
	}
	return echo.NewHTTPError(http.StatusConflict, err.Error())
}

// done answers an action: JSON for scripts and tools, back to the backend's
// page for a plain form (the portal without JavaScript).
func done(c echo.Context, backend string, body any) error {
	if strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEApplicationForm) {
		return c.Redirect(http.StatusSeeOther, "/backends/"+url.PathEscape(backend))
	}
	return c.JSON(http.StatusAccepted, body)
}

// reloadRequest is the body of POST /api/v1/reload.
type reloadRequest struct {
	Reason string `json:"reason" form:"reason"`
}

func reload(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error {
		var req reloadRequest
		if err := c.Bind(&req); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "body: "+err.Error())
		}
		actor := identityOf(c).Name
		msg := "asked for a reload"
		if r := strings.TrimSpace(req.Reason); r != "" {
			if len(r) > 200 {
				r = r[:200]
			}
			msg += ": " + r
		}
		eng.Action(actor, msg, dcm.ObjectRef{Kind: "HAProxy"})
		eng.Reload(actor)
		if strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEApplicationForm) {
			return c.Redirect(http.StatusSeeOther, "/config")
		}
		return c.JSON(http.StatusAccepted, map[string]string{"reload": "requested"})
	}
}

// planRequest is the body of POST /api/v1/plan.
type planRequest struct {
	WhatIfs []dcm.WhatIf `json:"whatifs"`
}

// maxWhatIfs bounds a preview's length.
const maxWhatIfs = 50

// simulate is POST /api/v1/plan: the browser's what-if preview, on the
// server, with the same planner (for tools, and to check the two agree).
func simulate(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error {
		var req planRequest
		if err := c.Bind(&req); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "body must be JSON: "+err.Error())
		}
		if len(req.WhatIfs) == 0 || len(req.WhatIfs) > maxWhatIfs {
			return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("want 1 to %d what-ifs", maxWhatIfs))
		}
		return c.JSON(http.StatusOK, eng.Simulate(req.WhatIfs))
	}
}

func config(eng Engine) echo.HandlerFunc {
	return func(c echo.Context) error {
		view, err := eng.Config(c.Request().Context())
		if err != nil {
			return echo.NewHTTPError(http.StatusServiceUnavailable, err.Error())
		}
		return c.JSON(http.StatusOK, view)
	}
}

// whoami tells scripts who is logged in and what they may do, so pages only
// offer actions that will be allowed.
func whoami(d Deps) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := identityOf(c)
		canAct, _ := d.Authorizer.Authorize(c.Request().Context(), id, VerbAct)
		body := map[string]any{"name": id.Name, "act": canAct}
		if s, ok := c.Get(sessionKey).(*session); ok {
			body["csrf"] = s.csrf
		}
		return c.JSON(http.StatusOK, body)
	}
}

// scaleRequest is the body of POST /api/v1/scale.
type scaleRequest struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Replicas  *int32 `json:"replicas"`
	// ExpectSeq is the snapshot seq a preview was computed at; 0 skips the check.
	ExpectSeq uint64 `json:"expectSeq"`
}

// movedSince reports whether what a preview made at seq depends on changed
// since: an event touching one of its backends, a reload, or events no
// longer kept. Events elsewhere (another namespace scaling, health checks of
// other backends) do not make the preview stale.
func movedSince(eng Engine, seq uint64, whatifs []dcm.WhatIf) (bool, uint64) {
	events, kept := eng.Events(seq)
	now := seq
	if len(events) > 0 {
		now = events[len(events)-1].Seq
	}
	if !kept {
		return true, eng.Snapshot().Seq
	}
	touched := eng.Simulate(whatifs).Backends
	for _, ev := range events {
		if ev.Type == dcm.EventReload || slices.ContainsFunc(ev.Backends, func(b string) bool { return slices.Contains(touched, b) }) {
			return true, now
		}
	}
	return false, now
}

// maxReplicas keeps a typo from asking for a million pods.
const maxReplicas = 1000

func (r scaleRequest) validate() error {
	if err := dcm.ValidateDNSLabel("namespace", r.Namespace); err != nil {
		return err
	}
	if err := dcm.ValidateDNSSubdomain("name", r.Name); err != nil {
		return err
	}
	switch strings.ToLower(r.Kind) {
	case "deployment", "statefulset":
	default:
		return fmt.Errorf("kind %q: want Deployment or StatefulSet", r.Kind)
	}
	if r.Replicas == nil || *r.Replicas < 0 || *r.Replicas > maxReplicas {
		return fmt.Errorf("replicas must be between 0 and %d", maxReplicas)
	}
	return nil
}

// whatifs is the scale as a what-if.
func (r scaleRequest) whatifs() []dcm.WhatIf {
	kind := "Deployment"
	if strings.EqualFold(r.Kind, "statefulset") {
		kind = "StatefulSet"
	}
	return []dcm.WhatIf{{Kind: dcm.WhatIfScale, Namespace: r.Namespace,
		Workload: &dcm.WorkloadRef{Kind: kind, Name: r.Name}, Replicas: int(*r.Replicas)}}
}

// scaled is the answer to POST /api/v1/scale. Replicas are the dcm
// replicas that follow the scale: this one, with the seq its prediction
// starts after, then the others (with --peers or --peer-service), each
// asked to predict the scale from its own state before it is made.
type scaled struct {
	Namespace string           `json:"namespace"`
	Kind      string           `json:"kind"`
	Name      string           `json:"name"`
	Replicas  int32            `json:"replicas"`
	Fleet     []fleet.Expected `json:"fleet"`
}

func scale(d Deps) echo.HandlerFunc {
	eng, scaler, log := d.Engine, d.Scaler, d.Log
	return func(c echo.Context) error {
		var req scaleRequest
		if err := c.Bind(&req); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "body must be JSON: "+err.Error())
		}
		if err := req.validate(); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, err.Error())
		}
		whatifs := req.whatifs()
		if req.ExpectSeq != 0 {
			if moved, seq := movedSince(eng, req.ExpectSeq, whatifs); moved {
				return c.JSON(http.StatusConflict, apiError{Error: "the state moved since the preview; preview again", Seq: seq})
			}
		}
		self := fleet.Expected{Name: c.Request().Host, Self: true, Seq: eng.Status().Seq}
		cancel := eng.Expect(whatifs)
		var peers []fleet.Expected
		if d.Fleet != nil {
			peers = d.Fleet.Expect(c.Request().Context(), tokenOf(c),
				expectRequest{Namespace: req.Namespace, Kind: req.Kind, Name: req.Name, Replicas: req.Replicas})
		}
		if err := scaler.SetScale(c.Request().Context(), req.Namespace, req.Kind, req.Name, *req.Replicas); err != nil {
			cancel()
			if d.Fleet != nil {
				d.Fleet.Unexpect(c.Request().Context(), tokenOf(c), peers)
			}
			log.Warn("scale failed", "namespace", req.Namespace, "kind", req.Kind, "name", req.Name, "err", err)
			return echo.NewHTTPError(http.StatusBadGateway, err.Error())
		}
		obj := dcm.ObjectRef{Kind: req.Kind, Namespace: req.Namespace, Name: req.Name}
		eng.Action(identityOf(c).Name, fmt.Sprintf("scaled %s to %d", obj, *req.Replicas), obj)
		return c.JSON(http.StatusAccepted, scaled{Namespace: req.Namespace, Kind: req.Kind, Name: req.Name, Replicas: *req.Replicas,
			Fleet: append([]fleet.Expected{self}, peers...)})
	}
}
