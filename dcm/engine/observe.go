package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// observeDelay spreads one observation pass over ObserveEvery.
func (e *Engine) observeDelay() time.Duration {
	e.mu.Lock()
	n := len(e.actual.Backends)
	e.mu.Unlock()
	chunks := max(1, (n+e.cfg.ObserveChunk-1)/e.cfg.ObserveChunk)
	return e.cfg.ObserveEvery / time.Duration(chunks)
}

// nextChunk returns the backends to observe next and advances the cursor;
// last says the chunk ends a pass over every backend.
func (e *Engine) nextChunk() (names []string, last bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	bs := e.actual.Backends
	if len(bs) == 0 {
		return nil, false
	}
	if e.observeCursor >= len(bs) {
		e.observeCursor = 0
	}
	end := min(e.observeCursor+e.cfg.ObserveChunk, len(bs))
	names = make([]string, 0, end-e.observeCursor)
	for _, b := range bs[e.observeCursor:end] {
		names = append(names, b.ProxyName())
	}
	e.observeCursor = end
	return names, end == len(bs)
}

func hasEndpoint(b dcm.DesiredBackend, name string) bool {
	_, ok := slices.BinarySearchFunc(b.Endpoints, name, func(e dcm.Endpoint, n string) int { return strings.Compare(e.Name, n) })
	return ok
}

// waitingBackends lists (by HAProxy name) the backends with a retired server
// (its endpoint is gone, it is in maint) that HAProxy has not yet reported
// idle: they are read back every IdlePollEvery so that del server follows
// the last request soon.
func (e *Engine) waitingBackends() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var names []string
	for _, b := range e.actual.Backends {
		db, desired := e.desired.Backend(b.Name)
		for _, s := range b.Servers {
			retired := s.Endpoint != "" && (!desired || !hasEndpoint(db, s.Endpoint))
			if retired && s.State == dcm.StateMaint && !s.Deletable() {
				names = append(names, b.ProxyName())
				break
			}
		}
	}
	return names
}

// observe reads HAProxy's view of some backends (all when names, HAProxy's
// names for them, is nil) and merges it into the engine's state. It reports true when HAProxy lacks a
// backend dcm manages, which only a reload can repair.
func (e *Engine) observe(ctx context.Context, names []string) (missing bool) {
	missing, _ = e.observeWith(ctx, names, true)
	return missing
}

// observeWith is observe; without traffic it reads only admin state,
// address, weight and health (cheap), and keeps the traffic figures dcm had.
func (e *Engine) observeWith(ctx context.Context, names []string, traffic bool) (missing bool, err error) {
	var obs map[string][]dcm.Server
	switch {
	case names == nil:
		obs, err = e.driver.Observe(ctx)
	case traffic:
		obs, err = e.driver.ObserveBackends(ctx, names)
	default:
		obs, err = e.driver.ObserveStates(ctx, names)
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			e.log.Warn("observing HAProxy failed", "err", err)
		}
		return false, err
	}
	if names == nil {
		defer e.metrics.ObservationPasses.Inc()
	}
	e.mu.Lock()
	before := e.actual
	merged, drift, missing := merge(e.actual, obs, names, traffic)
	e.actual = merged
	changed := healthChanged(before, merged)
	switch {
	case len(drift) > 0:
		// Someone changed HAProxy behind dcm's back (or it lost state):
		// say what differs; the sync that follows sets it back.
		touched := slices.Compact(sortStrings(append(slices.Clone(changed), driftBackends(drift)...)))
		e.hub.Publish(dcm.Event{Type: dcm.EventObserved, Reason: DriftReason, Backends: touched,
			State:   backendsNamed(merged, e.desired, touched),
			Message: fmt.Sprintf("HAProxy differs from dcm in %d places; repairing: %s", len(drift), strings.Join(drift, "; "))})
	case len(changed) > 0:
		e.hub.Publish(dcm.Event{Type: dcm.EventObserved, Backends: changed, State: backendsNamed(merged, e.desired, changed),
			Message: fmt.Sprintf("HAProxy reports new state or health in %d backends", len(changed))})
	}
	e.mu.Unlock()
	if len(drift) > 0 {
		e.metrics.PredictionMismatch.Add(float64(len(drift)))
		e.log.Warn("HAProxy differs from dcm's state; the next sync repairs it", "differences", drift)
	}
	e.metrics.setState(merged)
	return missing, nil
}

// DriftReason marks the observed event that reports HAProxy differing from
// dcm's state.
const DriftReason = "drift"

// driftBackends takes the backend names out of merge's drift lines
// ("backend/server: …" or "backend: …").
func driftBackends(drift []string) []string {
	out := make([]string, 0, len(drift))
	for _, d := range drift {
		name, _, _ := strings.Cut(d, ": ")
		name, _, _ = strings.Cut(name, "/")
		out = append(out, name)
	}
	return out
}

// healthChanged lists the backends where a server's admin state or health
// differs between two observations (sessions come and go too often to say).
func healthChanged(a, b dcm.State) []string {
	var out []string
	for _, nb := range b.Backends {
		ob, ok := a.Backend(nb.Name)
		if !ok {
			continue
		}
		if !slices.EqualFunc(ob.Servers, nb.Servers, func(x, y dcm.Server) bool {
			return x.Name == y.Name && x.State == y.State && x.Health == y.Health
		}) {
			out = append(out, nb.Name)
		}
	}
	return out
}

// merge takes HAProxy's figures and admin state as the truth. A server
// HAProxy lacks is dropped from the state (the planner adds it back); one dcm
// does not know is kept so the planner retires it. names are the backends
// obs was asked for (nil: all of them); obs and names use HAProxy's names
// (ProxyName), the state dcm's. One of them missing from obs is
// reported, since only a reload can bring a backend back. Without traffic,
// obs carries no sessions figures: the ones dcm had are kept, and a server
// changed since its last traffic observation stays unproven idle.
func merge(st dcm.State, obs map[string][]dcm.Server, names []string, traffic bool) (_ dcm.State, drift []string, missing bool) {
	asked := func(string) bool { return true }
	if names != nil {
		set := make(map[string]bool, len(names))
		for _, n := range names {
			set[n] = true
		}
		asked = func(n string) bool { return set[n] }
	}
	out := dcm.State{Backends: slices.Clone(st.Backends), Pool: st.Pool}
	for i, b := range out.Backends {
		seen, ok := obs[b.ProxyName()]
		if !ok {
			if asked(b.ProxyName()) {
				drift = append(drift, b.Name+": backend missing in HAProxy")
				missing = true
			}
			continue
		}
		known := make(map[string]dcm.Server, len(b.Servers))
		for _, s := range b.Servers {
			known[s.Name] = s
		}
		servers := make([]dcm.Server, 0, len(seen))
		for _, o := range seen {
			s, ok := known[o.Name]
			if !ok {
				drift = append(drift, b.Name+"/"+o.Name+": unknown server")
				o.Origin = dcm.OriginRuntime
				o.Unobserved = !traffic
				servers = append(servers, o)
				continue
			}
			delete(known, o.Name)
			if s.Addr != o.Addr && o.Addr != "" && s.Addr != "" || s.Port != o.Port && s.Addr != "" || s.Weight != o.Weight || s.State != o.State {
				drift = append(drift, fmt.Sprintf("%s/%s: dcm has %s:%d w%d %s, HAProxy %s:%d w%d %s", b.Name, s.Name,
					s.Addr, s.Port, s.Weight, s.State, o.Addr, o.Port, o.Weight, o.State))
			}
			if s.Addr != "" || o.Addr != "0.0.0.0" {
				s.Addr, s.Port = o.Addr, o.Port
			}
			s.Weight, s.State, s.Health = o.Weight, o.State, o.Health
			if traffic {
				s.Sessions, s.Queued, s.UsedConn, s.IdleConn = o.Sessions, o.Queued, o.UsedConn, o.IdleConn
				s.Unobserved = false
			}
			servers = append(servers, s)
		}
		for name := range known {
			drift = append(drift, b.Name+"/"+name+": missing in HAProxy")
		}
		dcm.SortServers(servers)
		b.Servers = servers
		out.Backends[i] = b
	}
	slices.Sort(drift)
	return out, drift, missing
}
