// Package plan computes how to bring HAProxy from the state it is in to the
// state Kubernetes asks for. It is pure: no I/O, no clock, no randomness, so
// the same code runs in the engine and, compiled to WebAssembly, in the
// browser's what-if preview.
//
// States are values: Compute never modifies its inputs, and the State it
// returns shares unchanged backends and server slices with them.
package plan

import (
	"slices"
	"sort"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// Compute returns the plan that takes actual to desired within what caps
// allow. Applying the plan's ops to actual (after a reload when Plan.Reload)
// yields Plan.Next, Next serves exactly the desired endpoints, and
// Compute(Next, desired, caps) is empty.
func Compute(actual dcm.State, desired dcm.Desired, caps dcm.Caps) dcm.Plan {
	return compute(actual, desired, caps, nil)
}

// ComputeChanged is Compute for a caller that knows which backends may
// need a change: those changed names (sorted). Of every other backend both in
// actual and in desired it promises that Compute would leave it as it is
// (its route and endpoints are those actual was planned for, and HAProxy
// reported nothing new on it since), so it is kept without a look. Under
// that promise it returns the plan Compute returns, but Waiting, which
// counts the changed backends' servers only; the work it does grows with
// the changed backends, not with the state (TestComputeChangedIsCompute).
func ComputeChanged(actual dcm.State, desired dcm.Desired, caps dcm.Caps, changed []string) dcm.Plan {
	if changed == nil {
		changed = []string{}
	}
	return compute(actual, desired, caps, changed)
}

// compute is Compute, and ComputeChanged when changed is not nil.
func compute(actual dcm.State, desired dcm.Desired, caps dcm.Caps, changed []string) dcm.Plan {
	desired = servable(desired)
	c := &computation{caps: caps, actual: actual, spares: newPool(actual, caps), next: make([]*dcm.Backend, 0, len(desired.Backends)), partial: changed != nil,
		// A change is an op or so per backend (a resync: one per backend
		// of thousands): growing the ops from nothing copied them over
		// and over, a sixth of ComputeChanged's time.
		ops: make([]dcm.Op, 0, len(changed))}
	as, ds := actual.Backends, desired.Backends
	i, j, k := 0, 0, 0
	unchanged := func(name string) bool {
		for k < len(changed) && changed[k] < name {
			k++
		}
		return k == len(changed) || changed[k] != name
	}
	for i < len(as) || j < len(ds) {
		switch {
		case j >= len(ds) || (i < len(as) && as[i].Name < ds[j].Name):
			c.gone(as[i])
			i++
		case i >= len(as) || ds[j].Name < as[i].Name:
			c.arrived(ds[j])
			j++
		case c.partial && unchanged(ds[j].Name):
			c.next = append(c.next, as[i])
			i++
			j++
		default:
			c.kept(as[i], ds[j])
			i++
			j++
		}
	}
	reasons, next, ops, retired, remap, spares := c.reasons, c.next, c.ops, c.retired, c.remap, c.spares
	if c.moved {
		sort.Slice(next, func(i, j int) bool { return next[i].Name < next[j].Name })
	}
	if len(reasons) > 0 {
		p := reloadFor(actual, desired, caps, reasons)
		if len(spares.exhausted) > 0 {
			p.Next.Pool = burstPool(caps, desired, spares.exhausted)
		}
		return p
	}
	st := dcm.State{Backends: next, Pool: spares.names(), DefaultCert: desired.DefaultCert, GatewayBinds: actual.GatewayBinds}
	var certFirst, certLast, caFirst, caLast []dcm.Op
	if !c.partial || c.certs || actual.DefaultCert != st.DefaultCert {
		certFirst, certLast = certOps(actual, st)
	}
	if !c.partial || c.cas {
		caFirst, caLast = caOps(actual, st)
	}
	// CA files before the certificates and servers, out after them.
	certFirst = append(caFirst, certFirst...)
	certLast = append(certLast, caLast...)
	if len(certFirst)+len(certLast) > 0 && !caps.RuntimeCerts {
		return Reload(desired, caps, dcm.ReasonCertChanged)
	}
	if remap {
		// New routes' servers are in place before the maps send them
		// traffic; retired ones get none before they are taken out.
		mops, ok := mapOps(actual, st, c.mapped)
		if !ok {
			return reloadFor(actual, desired, caps, []dcm.ReloadReason{dcm.ReasonRouteChanged})
		}
		ops = append(ops, mops...)
	}
	ops = append(ops, retired...)
	if len(certFirst)+len(certLast) > 0 {
		// A host's certificate is there before its route is, and goes
		// after it; the driver sends them in this order, one SSL
		// transaction at a time.
		ops = append(append(certFirst, ops...), certLast...)
	}
	return dcm.Plan{Ops: ops, Next: st, Waiting: c.waiting}
}

// kept is the backend a plan leaves a from: a itself when the plan changed
// nothing in it, so that states share what did not change (dcm.State).
func kept(a *dcm.Backend, r backendPlan) *dcm.Backend {
	n := r.next
	if len(r.ops) == 0 && sameServers(n.Servers, a.Servers) && n.Retiring == a.Retiring && n.Slot == a.Slot &&
		n.Name == a.Name && n.Kind == a.Kind && n.Slots == a.Slots && n.Route.Equal(a.Route) {
		return a
	}
	return &n
}

// sameServers reports whether two server lists are one slice.
func sameServers(a, b []dcm.Server) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// computation is what Compute gathers backend by backend.
type computation struct {
	caps    dcm.Caps
	actual  dcm.State // for the Gateway binds HAProxy has (unbound)
	spares  *pool
	reasons []dcm.ReloadReason
	next    []*dcm.Backend // unchanged backends are actual's, shared
	ops     []dcm.Op
	retired []dcm.Op // ops of retiring backends: after the maps stop sending them traffic
	waiting int
	remap   bool // a route is bound, re-keyed or unbound: the maps change
	// mapped names the backends whose map entries may change (mapOps):
	// bound, unbound, retired, or with another route or spare.
	mapped []string
	moved  bool // a route moved to another backend: next is out of order
	// partial: ComputeChanged, which looks at the backends it touches
	// only, and notes whether one of them (before or after) serves a
	// certificate or has servers with a CA file.
	partial    bool
	certs, cas bool
}

// touch records a backend a computation looks at, as it was and as it
// will be (nil when it goes).
func (c *computation) touch(before, after *dcm.Backend) {
	if !c.partial {
		return
	}
	for _, b := range []*dcm.Backend{before, after} {
		if b == nil {
			continue
		}
		c.certs = c.certs || b.Route.TLS != nil
		c.cas = c.cas || b.Route.Upstream != nil || slices.ContainsFunc(b.Servers, func(s dcm.Server) bool { return s.Upstream != nil })
	}
}

// gone plans a backend whose route is gone: retired, and back to the pool
// once empty.
func (c *computation) gone(a *dcm.Backend) {
	if !c.caps.Pooled() {
		c.reasons = append(c.reasons, dcm.ReasonRouteRemoved)
		return
	}
	r := retire(*a)
	c.remap = c.remap || !a.Retiring
	c.mapped = append(c.mapped, a.Name)
	c.retired = append(c.retired, withSlot(r.ops, a.Slot)...)
	c.waiting += r.waiting
	if len(r.next.Servers) == 0 {
		// A retiring backend keeps its allowlist entry until it is a
		// free spare again.
		c.remap = c.remap || len(a.Route.Allowlist) > 0
		c.spares.release(*a)
		c.touch(a, nil)
		return
	}
	n := kept(a, r)
	c.touch(a, n)
	c.next = append(c.next, n)
}

// arrived plans a new route: on a free spare.
func (c *computation) arrived(d *dcm.DesiredBackend) {
	if c.unbound(d.Route) {
		return
	}
	if !c.caps.Pooled() {
		c.reasons = append(c.reasons, dcm.ReasonRouteAdded)
		return
	}
	slot, reason := c.spares.take(d)
	if reason != "" {
		c.reasons = append(c.reasons, reason)
		return
	}
	c.carry(d, slot)
}

// carry plans route d on a spare it took.
func (c *computation) carry(d *dcm.DesiredBackend, slot string) {
	r := added(*d, slot)
	c.remap = true
	c.mapped = append(c.mapped, d.Name)
	c.touch(nil, &r.next)
	c.next = append(c.next, &r.next)
	c.ops = append(c.ops, r.ops...)
	c.waiting += r.waiting
}

// kept plans a route that keeps its backend.
func (c *computation) kept(actual *dcm.Backend, d *dcm.DesiredBackend) {
	if c.unbound(d.Route) {
		return
	}
	a := *actual
	if a.Retiring { // the route came back before its backend was empty
		a.Retiring = false
		c.remap = true
	}
	rekeyed, reason := routeChange(a.Route, d.Route, c.caps)
	if reason == dcm.ReasonRouteChanged && c.caps.Pooled() {
		c.move(a, d, reason)
		return
	}
	if reason != "" {
		c.reasons = append(c.reasons, reason)
		return
	}
	c.remap = c.remap || rekeyed
	r := planBackend(a, *d, c.caps)
	if r.reason != "" {
		c.reasons = append(c.reasons, r.reason)
		return
	}
	n := kept(actual, r)
	c.touch(actual, n)
	if n.Retiring != actual.Retiring || n.Slot != actual.Slot || !n.Route.Equal(actual.Route) {
		c.mapped = append(c.mapped, n.Name)
	}
	c.next = append(c.next, n)
	c.ops = append(c.ops, withSlot(r.ops, a.Slot)...)
	c.waiting += r.waiting
}

// move carries a route whose change its HAProxy backend cannot take at
// runtime (what is rendered into the backend: stickiness, health checks)
// to a free spare, as a new route is carried, while its old backend is
// retired beside it, as a deleted route's is, under a name of its own
// (MovedName): in-flight requests finish where they are, the next ones
// go to the new spare, and no reload. Without a spare that fits, it
// reloads: for an empty pool, else for why.
func (c *computation) move(a dcm.Backend, d *dcm.DesiredBackend, why dcm.ReloadReason) {
	slot, reason := c.spares.take(d)
	if reason != "" {
		if reason != dcm.ReasonPoolExhausted {
			reason = why
		}
		c.reasons = append(c.reasons, reason)
		return
	}
	old := a
	old.Name, old.Slot = dcm.MovedName(a.ProxyName()), a.ProxyName()
	c.gone(&old)
	c.carry(d, slot)
	c.moved = true
}

// added plans a new route's backend on the spare it takes.
func added(d dcm.DesiredBackend, slot string) backendPlan {
	r := planDynamic(dcm.Backend{Name: d.Name, Kind: d.Route.Kind, Route: d.Route, Slot: slot}, d)
	ops := withSlot(r.ops, slot)
	if d.Route.Sticky {
		// The key first: enable dynamic-cookie after each add
		// server computes the cookie from it.
		ops = append([]dcm.Op{{Kind: dcm.OpCookieKey, Backend: d.Name, Slot: slot}}, ops...)
	}
	r.ops = ops
	return r
}

// routeChange says what a route that keeps its backend changed needs: a
// reload (its reason), or a map replace (rekeyed) where routes are re-keyed
// at runtime.
func routeChange(a, d dcm.Route, caps dcm.Caps) (rekeyed bool, reason dcm.ReloadReason) {
	pooled := caps.Pooled()
	if !sameUpstream(a.Upstream, d.Upstream) && !(caps.Mode == dcm.ModeDynamic && caps.AddServer && caps.RuntimeCerts) {
		// New servers with the new CA or name, added next to the
		// old ones, need add server and runtime CA files.
		return false, dcm.ReasonCertChanged
	}
	if !sameTCPTimeouts(a, d) {
		return false, dcm.ReasonPassthroughTimeout
	}
	if !dcm.SameRateLimit(a, d) || !slices.Equal(a.Allowlist, d.Allowlist) {
		// The rate-limit map's entry, the allowlist map's: a map
		// replace but in reload mode.
		if caps.Mode == dcm.ModeReload {
			return false, dcm.ReasonRouteChanged
		}
		rekeyed = true
	}
	if !a.SameServing(d) {
		if !pooled || !rekeyable(a, d) {
			return false, dcm.ReasonRouteChanged
		}
		rekeyed = true
	}
	if !routing.SameSettings(a, d) {
		// What plain HTTP gets is an insecure map's entry, the HTTP
		// options and the header actions setting maps' entries: a map
		// replace where routes are re-keyed at runtime, a reload
		// where they are not (as a re-keyed route).
		if !pooled {
			return false, dcm.ReasonRouteChanged
		}
		rekeyed = true
	}
	return rekeyed, ""
}

// reloadFor is the reload Compute falls back to for reasons.
func reloadFor(actual dcm.State, desired dcm.Desired, caps dcm.Caps, reasons []dcm.ReloadReason) dcm.Plan {
	p := Reload(desired, caps, reasons...)
	if !caps.RuntimeCerts && (!slices.Equal(dcm.CertsOf(actual.Backends), dcm.CertsOf(p.Next.Backends)) || actual.DefaultCert != p.Next.DefaultCert ||
		!slices.Equal(dcm.CAsOf(actual.Backends), dcm.CAsOf(p.Next.Backends))) {
		// A certificate that changed with the rest would have
		// reloaded on its own: the reasons say so, so that a
		// rotation is not hidden behind the change it came with.
		p.Reasons = append(p.Reasons, dcm.ReasonCertChanged)
		slices.Sort(p.Reasons)
		p.Reasons = slices.Compact(p.Reasons)
	}
	return p
}

// Reload returns the plan that renders desired from scratch and reloads
// HAProxy for the given reasons. Its ops restore, after the reload, what a
// configuration file cannot express (drain).
func Reload(desired dcm.Desired, caps dcm.Caps, reasons ...dcm.ReloadReason) dcm.Plan {
	next := Fresh(desired, caps)
	var ops []dcm.Op
	for _, b := range next.Backends {
		for _, s := range b.Servers {
			if s.State == dcm.StateDrain {
				ops = append(ops, setState(b.Name, s, dcm.StateDrain))
			}
		}
	}
	rs := slices.Clone(reasons)
	slices.Sort(rs)
	return dcm.Plan{Ops: ops, Reload: true, Reasons: slices.Compact(rs), Next: next}
}

// Fresh is the state a configuration rendered for desired gives: every
// endpoint a server from the file, in slots mode caps.Slots free slots
// per backend on top of its endpoints, and with a pool spare backends per
// kind (freshPool: caps.Pool, or a tenth of the kind's routes when more)
// while every route has a backend of its own name.
func Fresh(desired dcm.Desired, caps dcm.Caps) dcm.State {
	desired = servable(desired)
	backends := make([]*dcm.Backend, 0, len(desired.Backends))
	for _, d := range desired.Backends {
		b := &dcm.Backend{Name: d.Name, Kind: d.Route.Kind, Route: d.Route}
		if caps.Mode == dcm.ModeSlots {
			b.Slots = len(d.Endpoints) + max(caps.Slots, 1)
			b.Servers = make([]dcm.Server, 0, b.Slots)
			for n := 1; n <= b.Slots; n++ {
				s := freeSlot(n, d.Route)
				if n <= len(d.Endpoints) {
					s = bind(s, d.Route, d.Endpoints[n-1])
				}
				b.Servers = append(b.Servers, s)
			}
			dcm.SortServers(b.Servers)
		} else {
			b.Servers = make([]dcm.Server, 0, len(d.Endpoints))
			for _, e := range d.Endpoints {
				b.Servers = append(b.Servers, serverFor(e, d.Route, dcm.OriginCfg))
			}
		}
		backends = append(backends, b)
	}
	return dcm.State{Backends: backends, Pool: freshPool(caps, desired), DefaultCert: desired.DefaultCert,
		GatewayBinds: dcm.ExtraGatewayBinds(desired, caps)}
}

// AfterReload is what a reload does to a state rendered into the
// configuration: every server now comes from the file, a drained server was
// rendered disabled, and the new worker has seen no traffic yet.
func AfterReload(st dcm.State) dcm.State {
	backends := make([]*dcm.Backend, len(st.Backends))
	for i, sb := range st.Backends {
		if !slices.ContainsFunc(sb.Servers, func(s dcm.Server) bool { return s != afterReload(s) }) {
			backends[i] = sb // as a reload leaves it (a fresh state's are): shared, not copied
			continue
		}
		b := *sb
		servers := make([]dcm.Server, len(b.Servers))
		for k, s := range b.Servers {
			servers[k] = afterReload(s)
		}
		b.Servers = servers
		backends[i] = &b
	}
	return dcm.State{Backends: backends, Pool: st.Pool, DefaultCert: st.DefaultCert, GatewayBinds: st.GatewayBinds}
}

// afterReload is a server as AfterReload leaves it.
func afterReload(s dcm.Server) dcm.Server {
	s.Origin = dcm.OriginCfg
	if s.State == dcm.StateDrain {
		s.State = dcm.StateMaint
	}
	s.Sessions, s.Queued, s.UsedConn, s.IdleConn = 0, 0, 0, 0
	s.Health = ""
	s.Unobserved = true
	return s
}

func serverFor(e dcm.Endpoint, r dcm.Route, origin dcm.Origin) dcm.Server {
	return dcm.Server{
		Name: e.Name, Addr: e.Addr, Port: e.Port, Weight: e.Weight, State: e.State,
		Origin: origin, Endpoint: e.Name, Pod: e.Pod, Service: e.Service, Terminating: e.Terminating, Check: r.Check, MaxConn: r.MaxConn, CheckInterMillis: dcm.CheckInterOf(r), Upstream: upstreamFor(r, e), Proto: e.Proto, Unobserved: true,
	}
}

// servable drops the endpoints of reencrypt routes whose CA is not known:
// without it their servers could not verify the pods, and a server
// without TLS would talk in clear text to them. The sources give such
// routes no endpoints already; this keeps the planner safe on its own.
func servable(d dcm.Desired) dcm.Desired {
	var out []*dcm.DesiredBackend
	for i, b := range d.Backends {
		if b.Route.Kind != dcm.KindReencrypt || upstreamOf(b.Route) != nil || len(b.Endpoints) == 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(d.Backends)
		}
		nb := *b // a copy: d shares its backends
		nb.Endpoints = nil
		out[i] = &nb
	}
	if out == nil {
		return d
	}
	return dcm.Desired{Backends: out, DefaultCert: d.DefaultCert}
}

// upstreamOf is the TLS a new server of route r connects with: the
// reencrypt route's, once its CA is known.
func upstreamOf(r dcm.Route) *dcm.UpstreamTLS {
	if r.Kind != dcm.KindReencrypt || r.Upstream == nil || r.Upstream.Version == "" {
		return nil
	}
	u := *r.Upstream
	return &u
}

// upstreamFor is upstreamOf for the server of e: with its Service's name
// when the route verifies each Service's (dcm.UpstreamFor).
func upstreamFor(r dcm.Route, e dcm.Endpoint) *dcm.UpstreamTLS {
	if upstreamOf(r) == nil {
		return nil
	}
	return dcm.UpstreamFor(r, e)
}

// sameUpstream reports whether two routes' servers connect alike.
func sameUpstream(a, b *dcm.UpstreamTLS) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// backendPlan is the outcome for one backend: either a reason to reload, or
// the ops and the backend they lead to.
type backendPlan struct {
	next    dcm.Backend
	ops     []dcm.Op
	waiting int
	reason  dcm.ReloadReason
}

func planBackend(a dcm.Backend, d dcm.DesiredBackend, caps dcm.Caps) backendPlan {
	switch caps.Mode {
	case dcm.ModeSlots:
		return withMaxConn(withCheckInter(planSlots(a, d), d), d.Route)
	case dcm.ModeReload:
		r := withCheckInter(planDynamic(a, d), d)
		if len(r.ops) > 0 || r.waiting > 0 {
			return backendPlan{reason: dcm.ReasonEndpointsChange}
		}
		if len(withMaxConn(r, d.Route).ops) > 0 {
			return backendPlan{reason: dcm.ReasonRouteChanged}
		}
		return r
	default:
		r := withMaxConn(withCheckInter(planDynamic(a, d), d), d.Route)
		if !caps.AddServer && slices.ContainsFunc(r.ops, func(o dcm.Op) bool {
			return o.Kind == dcm.OpAddServer || o.Kind == dcm.OpDelServer
		}) {
			return backendPlan{reason: dcm.ReasonNoDynamic}
		}
		return r
	}
}

// planDynamic matches servers to endpoints by name (a server is named after
// its endpoint), adds what is missing and retires what is gone: maint first,
// del server once HAProxy has reported it idle.
func planDynamic(a dcm.Backend, d dcm.DesiredBackend) backendPlan {
	out := backendPlan{next: a}
	out.next.Route = d.Route
	var retireOps []dcm.Op // after the adds: a server replaced by a new one (a CA rotation) leaves only once the new one is in
	// Ready servers that stop taking traffic go after those that start, so
	// that a backend is never left without one between two commands (the
	// last pod's terminating server drains as its replacement turns ready).
	var leaving []dcm.Op
	servers := a.Servers
	eps := d.Endpoints
	var next []dcm.Server // nil until the first change: unchanged backends share their slice
	changed := func(upTo int) {
		if next == nil {
			next = make([]dcm.Server, 0, max(len(servers), len(eps)))
			next = append(next, servers[:upTo]...)
		}
	}
	i, j := 0, 0
	for i < len(servers) || j < len(eps) {
		switch {
		case j >= len(eps) || (i < len(servers) && servers[i].Name < eps[j].Name):
			s := servers[i]
			switch {
			case s.State != dcm.StateMaint:
				changed(i)
				retireOps = append(retireOps, setState(a.Name, s, dcm.StateMaint))
				s.State = dcm.StateMaint
				s.Unobserved = true
				next = append(next, s)
				out.waiting++
			case !s.Deletable():
				out.waiting++
				if next != nil {
					next = append(next, s)
				}
			default:
				changed(i)
				retireOps = append(retireOps, dcm.Op{Kind: dcm.OpDelServer, Backend: a.Name, Server: s.Name, Endpoint: s.Endpoint, Pod: s.Pod})
			}
			i++
		case i >= len(servers) || eps[j].Name < servers[i].Name:
			e := eps[j]
			changed(i)
			s := serverFor(e, d.Route, dcm.OriginRuntime)
			out.ops = append(out.ops, addServer(a.Name, s, d.Route.Sticky)...)
			next = append(next, s)
			j++
		default:
			s, e := servers[i], eps[j]
			if !sameUpstream(s.Upstream, upstreamFor(d.Route, e)) {
				// A server's TLS is fixed when it is added; sources name
				// servers after it (WithUpstreamNames) so that a new CA
				// brings new servers. One that did not must reload.
				out.reason = dcm.ReasonCertChanged
			}
			if s.Proto != e.Proto {
				out.reason = dcm.ReasonProtoChanged // the same, for its protocol (WithProtoNames)
			}
			ops, ns := converge(a.Name, s, e)
			if len(ops) > 0 || ns.Service != s.Service || ns.Terminating != s.Terminating {
				changed(i)
				if s.State == dcm.StateReady && ns.State != dcm.StateReady {
					leaving = append(leaving, ops...)
				} else {
					out.ops = append(out.ops, ops...)
				}
			}
			if next != nil {
				next = append(next, ns)
			}
			i++
			j++
		}
	}
	out.ops = append(append(out.ops, leaving...), retireOps...)
	if next != nil {
		out.next.Servers = next
	}
	return out
}

// addServer creates a server the way HAProxy 2.6 needs it: it starts in
// maint and without checks, so checks and state follow as separate commands.
func addServer(backend string, s dcm.Server, sticky bool) []dcm.Op {
	ops := []dcm.Op{{
		Kind: dcm.OpAddServer, Backend: backend, Server: s.Name, Addr: s.Addr, Port: s.Port,
		Weight: s.Weight, Check: s.Check, MaxConn: s.MaxConn, CheckInterMillis: s.CheckInterMillis, Endpoint: s.Endpoint, Pod: s.Pod, Upstream: s.Upstream, Proto: s.Proto,
	}}
	if sticky {
		// Before it can take traffic, or its first clients get no cookie.
		ops = append(ops, dcm.Op{Kind: dcm.OpDynamicCookie, Backend: backend, Server: s.Name, Endpoint: s.Endpoint, Pod: s.Pod})
	}
	if s.Check {
		ops = append(ops, dcm.Op{Kind: dcm.OpEnableHealth, Backend: backend, Server: s.Name, Endpoint: s.Endpoint, Pod: s.Pod})
	}
	if s.State != dcm.StateMaint {
		ops = append(ops, setState(backend, s, s.State))
	}
	return ops
}

func setState(backend string, s dcm.Server, st dcm.AdminState) dcm.Op {
	return dcm.Op{Kind: dcm.OpSetState, Backend: backend, Server: s.Name, State: st, Endpoint: s.Endpoint, Pod: s.Pod}
}

// converge brings one server in line with its endpoint: address, weight,
// then state, so a server is never made ready at an old address.
func converge(backend string, s dcm.Server, e dcm.Endpoint) ([]dcm.Op, dcm.Server) {
	var ops []dcm.Op
	if s.Addr != e.Addr || s.Port != e.Port || s.Endpoint != e.Name {
		ops = append(ops, dcm.Op{Kind: dcm.OpSetAddr, Backend: backend, Server: s.Name, Addr: e.Addr, Port: e.Port, Endpoint: e.Name, Pod: e.Pod})
		s.Addr, s.Port, s.Endpoint, s.Pod = e.Addr, e.Port, e.Name, e.Pod
		s.Unobserved = true
	}
	s.Service, s.Terminating = e.Service, e.Terminating // bookkeeping only: HAProxy does not know them
	if s.Weight != e.Weight {
		ops = append(ops, dcm.Op{Kind: dcm.OpSetWeight, Backend: backend, Server: s.Name, Weight: e.Weight, Endpoint: e.Name, Pod: e.Pod})
		s.Weight = e.Weight
	}
	if s.State != e.State {
		ops = append(ops, setState(backend, s, e.State))
		s.State = e.State
		s.Unobserved = true
	}
	return ops, s
}
