package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/dcm-router/dcm/dcm"
)

const (
	// feedWriteTimeout bounds one write to a client; a client that does not
	// read for that long is gone.
	feedWriteTimeout = 10 * time.Second
	// feedReadLimit bounds what a client may send: the feed takes no
	// requests, only control frames.
	feedReadLimit = 4096
	// Close codes in the private range (RFC 6455 §7.4.2).
	closeTooSlow  = 4000
	closeGoneAway = 4001
)

// feedFilter keeps what a client asked for: one namespace, one backend, or all.
type feedFilter struct {
	namespace, backend string
}

func (f feedFilter) all() bool { return f.namespace == "" && f.backend == "" }

func namespaceOf(backend string) string {
	parts := strings.SplitN(backend, ":", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[1]
}

func (f feedFilter) keepBackend(name string) bool {
	return (f.backend == "" || name == f.backend) && (f.namespace == "" || namespaceOf(name) == f.namespace)
}

// keepEvent passes events about a matching backend or object, and those
// about HAProxy as a whole (reloads, restarts), which concern everyone. A
// kept event carries only the matching backends' names, ops and state, so a
// filtered client never sees other namespaces' servers, not even in a reload.
func (f feedFilter) keepEvent(ev dcm.Event) (dcm.Event, bool) {
	if f.all() {
		return ev, true
	}
	if ev.Type == dcm.EventGateways {
		ev.Gateways = f.gateways(ev.Gateways)
		return ev, ev.Gateways != nil
	}
	// The engine records actions without an object as a zero ObjectRef.
	hasObject := ev.Object != nil && *ev.Object != (dcm.ObjectRef{})
	global := len(ev.Backends) == 0 && !hasObject
	ownObject := hasObject && f.backend == "" && ev.Object.Namespace == f.namespace
	if !global && !ownObject && !slices.ContainsFunc(ev.Backends, f.keepBackend) {
		return ev, false
	}
	ev.Backends = slices.DeleteFunc(slices.Clone(ev.Backends), func(b string) bool { return !f.keepBackend(b) })
	ev.State = slices.DeleteFunc(slices.Clone(ev.State), func(b *dcm.Backend) bool { return !f.keepBackend(b.Name) })
	ev.Ops = f.ops(ev.Ops)
	return ev, true
}

// ops keeps the ops on matching backends, and of a map replace the entries
// of matching backends only (it is dropped when none is left).
func (f feedFilter) ops(ops []dcm.Op) []dcm.Op {
	out := make([]dcm.Op, 0, len(ops))
	other := func(e dcm.MapEntry) bool { return !f.keepBackend(e.Backend) }
	for _, o := range ops {
		if o.Kind == dcm.OpMapReplace {
			o.Set = slices.DeleteFunc(slices.Clone(o.Set), other)
			o.Del = slices.DeleteFunc(slices.Clone(o.Del), other)
			if len(o.Set)+len(o.Del) > 0 {
				out = append(out, o)
			}
			continue
		}
		if f.keepBackend(o.Backend) {
			out = append(out, o)
		}
	}
	return out
}

func (f feedFilter) snapshot(s dcm.Snapshot) dcm.Snapshot {
	if f.all() {
		return s
	}
	s.Backends = slices.DeleteFunc(slices.Clone(s.Backends), func(b *dcm.Backend) bool { return !f.keepBackend(b.Name) })
	s.Routes = slices.DeleteFunc(slices.Clone(s.Routes), func(r dcm.Route) bool { return !f.keepBackend(r.BackendName()) })
	s.Rejected = slices.DeleteFunc(slices.Clone(s.Rejected), func(r dcm.Rejection) bool {
		return f.backend != "" || r.Object.Namespace != f.namespace
	})
	s.Gateways = f.gateways(s.Gateways)
	return s
}

// gateways keeps a namespace's own Gateways and HTTPRoutes; a client of
// one backend gets none.
func (f feedFilter) gateways(g *dcm.GatewayAPI) *dcm.GatewayAPI {
	if g == nil || f.all() {
		return g
	}
	if f.backend != "" {
		return nil
	}
	out := &dcm.GatewayAPI{
		Gateways:   slices.DeleteFunc(slices.Clone(g.Gateways), func(v dcm.GatewayView) bool { return v.Namespace != f.namespace }),
		HTTPRoutes: slices.DeleteFunc(slices.Clone(g.HTTPRoutes), func(v dcm.HTTPRouteView) bool { return v.Namespace != f.namespace }),
	}
	return out
}

// feed is GET /api/v1/feed (docs/feed.md): hello, then a snapshot or the
// events missed since ?since=N, then live events with pings in between.
// The engine never waits for a client: one whose queue fills is dropped
// with a reason and resumes from its last seq.
func feed(d Deps) echo.HandlerFunc {
	upgrader := websocket.Upgrader{
		CheckOrigin:     sameOrigin,
		ReadBufferSize:  1024,
		WriteBufferSize: 16 << 10,
	}
	return func(c echo.Context) error {
		f := feedFilter{namespace: c.QueryParam("namespace"), backend: c.QueryParam("backend")}
		if f.namespace != "" {
			if err := dcm.ValidateDNSLabel("namespace", f.namespace); err != nil {
				return echo.NewHTTPError(http.StatusBadRequest, err.Error())
			}
		}
		// A backend name has HAProxy's alphabet: a filter outside it matches
		// nothing, and hello would echo it mangled (invalid UTF-8 becomes
		// U+FFFD in JSON), as FuzzFeedInbound found.
		if f.backend != "" && (!strings.HasPrefix(f.backend, "be_") || dcm.ValidateServerName("backend", f.backend) != nil) {
			return echo.NewHTTPError(http.StatusBadRequest, "backend must be a backend name (be_…)")
		}
		var since uint64
		resume := c.QueryParam("since") != ""
		if resume {
			var err error
			if since, err = strconv.ParseUint(c.QueryParam("since"), 10, 64); err != nil {
				return echo.NewHTTPError(http.StatusBadRequest, "since must be a seq")
			}
		}
		if !sameOrigin(c.Request()) {
			return echo.NewHTTPError(http.StatusForbidden, "cross-origin websocket refused")
		}
		conn, err := upgrader.Upgrade(c.Response(), c.Request(), nil)
		if err != nil {
			return nil // the upgrader answered the client already
		}
		defer conn.Close()
		if d.FeedClients != nil {
			d.FeedClients.Inc()
			defer d.FeedClients.Dec()
		}
		return serveFeed(c.Request().Context(), d, conn, f, resume, since, identityOf(c).Name)
	}
}

// snapshotAttempts bounds how often a fresh client retries taking a snapshot
// whose following events the hub no longer keeps by the time it subscribes.
const snapshotAttempts = 3

// subscribe starts a client at since (resume) or at a fresh snapshot. The
// snapshot and the subscription are two calls, so events may be published
// in between: they come in the backlog. Should the hub no longer keep them,
// the client would miss them, so a new snapshot is taken instead.
func subscribe(d Deps, resume bool, since uint64) (backlog []dcm.Event, sub Subscription, snap *dcm.Snapshot, ok bool) {
	if resume {
		var resumed bool
		if backlog, resumed, sub = d.Engine.Subscribe(since, d.FeedQueue); resumed {
			return backlog, sub, nil, true
		}
		sub.Close()
	}
	for range snapshotAttempts {
		s := d.Engine.Snapshot()
		var kept bool
		if backlog, kept, sub = d.Engine.Subscribe(s.Seq, d.FeedQueue); kept {
			return backlog, sub, &s, true
		}
		sub.Close()
	}
	return nil, nil, nil, false
}

// serveFeed writes one client's feed until the client leaves, falls behind,
// or ctx ends (the server shuts down).
func serveFeed(ctx context.Context, d Deps, conn *websocket.Conn, f feedFilter, resume bool, since uint64, identity string) error {
	write := func(m dcm.FeedMessage) error {
		_ = conn.SetWriteDeadline(time.Now().Add(feedWriteTimeout))
		return conn.WriteJSON(m)
	}
	// bye tells the client why it is closed and where to resume.
	bye := func(code int, reason string, last uint64) {
		reason += "; resume with ?since=" + strconv.FormatUint(last, 10)
		_ = write(dcm.FeedMessage{Type: dcm.FeedTypeBye, Seq: last, Reason: reason})
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, truncate(reason, 120)),
			time.Now().Add(time.Second))
	}
	backlog, sub, snap, ok := subscribe(d, resume, since)
	if !ok {
		// Nothing was said yet, and a feed starts with hello: only the close
		// frame tells the client to come back.
		d.Log.Warn("feed: events arrive faster than a snapshot can be taken", "identity", identity)
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "server busy: reconnect later"),
			time.Now().Add(time.Second))
		return nil
	}
	defer sub.Close()
	if snap != nil {
		fs := f.snapshot(*snap)
		snap, since = &fs, snap.Seq
	}

	// The reader only serves control frames and notices the client leaving.
	conn.SetReadLimit(feedReadLimit)
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}()
	last := since
	hello := dcm.FeedMessage{Type: dcm.FeedTypeHello, Seq: since, Hello: &dcm.FeedHello{
		Protocol: dcm.FeedProtocol, Identity: identity, Resumed: snap == nil, Namespace: f.namespace, Backend: f.backend}}
	if err := write(hello); err != nil {
		return nil
	}
	if snap != nil {
		if err := write(dcm.FeedMessage{Type: dcm.FeedTypeSnapshot, Seq: snap.Seq, Snapshot: snap}); err != nil {
			return nil
		}
	}
	send := func(ev dcm.Event) error {
		if ev.Seq <= last {
			return nil
		}
		last = ev.Seq
		if ev, ok := f.keepEvent(ev); ok {
			return write(dcm.FeedMessage{Type: dcm.FeedTypeEvent, Seq: ev.Seq, Event: &ev})
		}
		return nil
	}
	for _, ev := range backlog {
		if err := send(ev); err != nil {
			return nil
		}
	}
	ping := time.NewTicker(d.PingEvery)
	defer ping.Stop()
	for {
		select {
		case ev := <-sub.Events():
			if err := send(*ev); err != nil {
				return nil
			}
		case <-sub.Done():
			reason := sub.Reason()
			if reason == "" {
				reason = "server closing"
			}
			if d.FeedDropped != nil {
				d.FeedDropped.Inc()
			}
			bye(closeTooSlow, reason, last)
			return nil
		case <-ctx.Done():
			bye(closeGoneAway, "server shutting down", last)
			return nil
		case <-ping.C:
			if err := write(dcm.FeedMessage{Type: dcm.FeedTypePing, Seq: last}); err != nil {
				return nil
			}
		case <-gone:
			return nil
		}
	}
}

// truncate keeps a close reason within the 123 bytes a close frame allows.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
