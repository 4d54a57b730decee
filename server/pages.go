package server

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/static"
	"github.com/dcm-router/dcm/views"
)

// The portal's pages: rendered here from the engine's picture, complete
// without JavaScript; the script of web/ then keeps them live from the feed,
// starting at the seq each page was rendered at.

const (
	// eventsShown bounds the audit log a page renders; the feed adds newer ones.
	eventsShown = 500
	// maxQuery bounds a filter's text.
	maxQuery = 200
)

// frame is what every page's frame needs: who is signed in, what they may
// do, the session's CSRF token and the asset URLs of this build.
func frame(c echo.Context, d Deps, a *static.Assets, page, title string, seq uint64) views.Frame {
	id := identityOf(c)
	f := views.Frame{Title: title, Page: page, User: id.Name, Seq: seq, CSS: a.URL("dcm.css"), JS: a.URL("app.js")}
	if s, ok := c.Get(sessionKey).(*session); ok {
		f.CSRF = s.csrf
	}
	canAct, err := d.Authorizer.Authorize(c.Request().Context(), id, VerbAct)
	if err != nil {
		// The page still shows; only the actions are left out.
		d.Log.Warn("authorization failed", "identity", id.Name, "verb", VerbAct, "err", err)
	}
	f.CanAct = canAct && err == nil
	return f
}

func renderPage(c echo.Context, code int, page templ.Component) error {
	// Pages carry the session's CSRF token: no cache keeps them.
	c.Response().Header().Set("Cache-Control", "no-store")
	return render(c, code, page)
}

// query is a filter parameter, trimmed and bounded.
func query(c echo.Context, name string) string {
	q := strings.TrimSpace(c.QueryParam(name))
	if len(q) > maxQuery {
		q = q[:maxQuery]
	}
	return q
}

// oneOf keeps v when it is one of the allowed values, else "".
func oneOf[T ~string](v string, allowed []T) string {
	if slices.Contains(allowed, T(v)) {
		return v
	}
	return ""
}

func overviewPage(d Deps, a *static.Assets) echo.HandlerFunc {
	return func(c echo.Context) error {
		s := d.Engine.Snapshot()
		return renderPage(c, http.StatusOK, views.Overview(frame(c, d, a, "overview", "Overview", s.Seq), s, fleetWithin(c, d, pageFleetWait), time.Now()))
	}
}

func backendsPage(d Deps, a *static.Assets) echo.HandlerFunc {
	return func(c echo.Context) error {
		s := d.Engine.Snapshot()
		filter := views.BackendFilter{Q: query(c, "q"), Namespace: query(c, "namespace"),
			State: oneOf(query(c, "state"), views.DisplayStates())}
		return renderPage(c, http.StatusOK, views.Backends(frame(c, d, a, "backends", "Backends", s.Seq), s.Backends, filter))
	}
}

func backendPage(d Deps, a *static.Assets) echo.HandlerFunc {
	return func(c echo.Context) error {
		name := pathParam(c, "name")
		s := d.Engine.Snapshot()
		i := slices.IndexFunc(s.Backends, func(b *dcm.Backend) bool { return b.Name == name })
		if i < 0 {
			f := frame(c, d, a, "", "Not found", s.Seq)
			return renderPage(c, http.StatusNotFound, views.NotFound(f, "dcm manages no backend "+name+"."))
		}
		b := s.Backends[i]
		return renderPage(c, http.StatusOK, views.BackendPage(frame(c, d, a, "backend", b.Name, s.Seq), b))
	}
}

func auditPage(d Deps, a *static.Assets) echo.HandlerFunc {
	return func(c echo.Context) error {
		seq := d.Engine.Snapshot().Seq
		evs, _ := d.Engine.Events(seq - min(seq, eventsShown))
		if len(evs) > 0 {
			seq = evs[len(evs)-1].Seq
		}
		filter := views.EventFilter{Type: oneOf(query(c, "type"), views.EventTypes()), Q: query(c, "q")}
		shown := make([]dcm.Event, 0, len(evs))
		for i := len(evs) - 1; i >= 0; i-- {
			if filter.Match(evs[i]) {
				shown = append(shown, evs[i])
			}
		}
		return renderPage(c, http.StatusOK, views.EventsPage(frame(c, d, a, "events", "Events", seq), shown, filter, len(evs)))
	}
}

func configPage(d Deps, a *static.Assets) echo.HandlerFunc {
	return func(c echo.Context) error {
		// The seq first: whatever changes the files after it reaches the page.
		seq := d.Engine.Snapshot().Seq
		view, err := d.Engine.Config(c.Request().Context())
		msg := ""
		if err != nil {
			msg = "dcm cannot read the configuration right now: " + err.Error()
		}
		return renderPage(c, http.StatusOK, views.ConfigPage(frame(c, d, a, "config", "Configuration", seq), view, msg))
	}
}

func whatifPage(d Deps, a *static.Assets) echo.HandlerFunc {
	return func(c echo.Context) error {
		s := d.Engine.Snapshot()
		v := views.WhatIfView{Workloads: views.Workloads(s.Backends), Selected: query(c, "workload"),
			CertRoutes: views.CertRoutes(s.Backends), Cert: query(c, "cert")}
		if a.Has(static.PlannerWasm) && a.Has(static.PlannerLoader) {
			v.Worker = a.URL("whatif-worker.js")
		}
		// A preview asked without JavaScript: the server runs the planner,
		// on the what-ifs in the order the script sends them.
		var whatifs []dcm.WhatIf
		if ns, kind, name, ok := views.ParseWorkloadKey(v.Selected); ok {
			n, err := strconv.Atoi(query(c, "replicas"))
			if err != nil || n < 0 || n > maxReplicas {
				return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("replicas must be between 0 and %d", maxReplicas))
			}
			v.Replicas = n
			whatifs = append(whatifs, dcm.WhatIf{Kind: dcm.WhatIfScale, Namespace: ns,
				Workload: &dcm.WorkloadRef{Kind: kind, Name: name}, Replicas: n})
		} else if i := slices.IndexFunc(v.Workloads, func(w views.Workload) bool { return w.Key() == v.Selected }); i >= 0 {
			v.Replicas = v.Workloads[i].Pods
		}
		if v.Cert != "" {
			cr, ok := v.ChosenCert()
			if !ok {
				return echo.NewHTTPError(http.StatusBadRequest, "cert must name a route that serves a certificate of its own")
			}
			whatifs = append(whatifs, dcm.WhatIf{Kind: dcm.WhatIfRotateCert, Secret: cr.Secret})
		}
		if len(whatifs) > 0 {
			sim := d.Engine.Simulate(whatifs)
			v.Sim = &sim
		}
		return renderPage(c, http.StatusOK, views.WhatIfPage(frame(c, d, a, "whatif", "What if", s.Seq), v))
	}
}
