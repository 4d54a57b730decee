package plan

import (
	"errors"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// DesiredOf reads back what Kubernetes asks from a state: every route whose
// backend is not retiring, and every server that carries an endpoint
// Kubernetes still has (Retired unset), as that endpoint.
// A snapshot marks retired servers, so the what-if planner can start from a
// snapshot alone.
func DesiredOf(st dcm.State) dcm.Desired {
	n := 0
	for _, b := range st.Backends {
		n += len(b.Servers)
	}
	// One allocation for every endpoint: the browser runs this on each
	// preview, over thousands of servers. Backends get capped sub-slices, so
	// an append to one never writes into the next.
	slab := make([]dcm.Endpoint, 0, n)
	d := dcm.Desired{Backends: make([]*dcm.DesiredBackend, 0, len(st.Backends)), DefaultCert: st.DefaultCert}
	for _, b := range st.Backends {
		if b.Retiring {
			continue // its route is gone
		}
		start := len(slab)
		for _, s := range b.Servers {
			if s.Endpoint == "" || s.Retired {
				continue
			}
			slab = append(slab, dcm.Endpoint{Name: s.Endpoint, Addr: s.Addr, Port: s.Port,
				Weight: s.Weight, State: s.State, Pod: s.Pod, Service: s.Service, Terminating: s.Terminating, Proto: s.Proto})
		}
		db := &dcm.DesiredBackend{Name: b.Name, Route: b.Route}
		if len(slab) > start {
			db.Endpoints = slab[start:len(slab):len(slab)]
			if !slices.IsSortedFunc(db.Endpoints, byEndpointName) {
				sort.Slice(db.Endpoints, func(i, j int) bool { return db.Endpoints[i].Name < db.Endpoints[j].Name })
			}
		}
		d.Backends = append(d.Backends, db)
	}
	return d
}

func byEndpointName(a, b dcm.Endpoint) int { return strings.Compare(a.Name, b.Name) }

// phase is one moment of a what-if: the desired state Kubernetes reaches,
// and whether HAProxy has by then seen the last request of retired servers.
type phase struct {
	name    string
	desired dcm.Desired
	idle    bool
}

// Simulate previews what-ifs in order against a snapshot: the plans the
// engine would compute as Kubernetes goes through each, the totals before and
// after, the traffic share of the servers touched and who would drain. It is
// the planner itself run forward, so the preview is what dcm will do.
func Simulate(snap dcm.Snapshot, whatifs []dcm.WhatIf, costs dcm.MemoryCosts) dcm.Simulation {
	return Prepare(snap, costs).Simulate(whatifs)
}

// Prepared is a snapshot read back for previews: its DesiredOf and its
// totals, which every preview of it starts from. A caller that previews
// the same snapshot again and again (the browser, as an admin types)
// prepares it once: at 10,000 backends each is a pass over 100,000 servers.
type Prepared struct {
	snap    dcm.Snapshot
	desired dcm.Desired
	before  dcm.SimTotals
	costs   dcm.MemoryCosts
	ordered bool // the snapshot's backends are in order of name (ordered)
}

// Prepare reads a snapshot back for previews. The snapshot is not modified.
func Prepare(snap dcm.Snapshot, costs dcm.MemoryCosts) Prepared {
	st := dcm.State{Backends: snap.Backends, Pool: snap.Pool, DefaultCert: snap.DefaultCert, GatewayBinds: snap.GatewayBinds}
	d := DesiredOf(st)
	return Prepared{snap: snap, desired: d, before: totals(st, d, costs), costs: costs, ordered: ordered(st, d)}
}

// Simulate previews what-ifs against the prepared snapshot, as Simulate
// does.
func (pr Prepared) Simulate(whatifs []dcm.WhatIf) dcm.Simulation {
	snap, desired, costs := pr.snap, pr.desired, pr.costs
	caps := snap.Caps
	st := dcm.State{Backends: snap.Backends, Pool: snap.Pool, DefaultCert: snap.DefaultCert, GatewayBinds: snap.GatewayBinds}
	sim := dcm.Simulation{Seq: snap.Seq, Mode: caps.Mode, Before: pr.before,
		Steps: []dcm.SimStep{}, Traffic: []dcm.Share{}, Draining: []dcm.Draining{}, Backends: []string{}}
	initial := st
	touched := map[string]bool{}
	for _, w := range whatifs {
		phases, names, err := phasesFor(w, desired)
		if err != nil {
			sim.Errors = append(sim.Errors, err.Error())
			continue
		}
		for _, n := range names {
			touched[n] = true
		}
		for _, ph := range phases {
			if ph.idle {
				st = idleBackends(st, names) // every request in flight there has finished
			}
			p := computeTouched(st, ph.desired, caps, names)
			if !p.Empty() {
				ops := p.Ops
				if ops == nil {
					ops = []dcm.Op{} // a reload alone: an empty list, not null
				}
				sim.Steps = append(sim.Steps, dcm.SimStep{Phase: ph.name, Ops: ops, Reload: p.Reload, Reasons: p.Reasons})
				sim.Ops += len(p.Ops)
				if p.Reload {
					sim.Reloads++
					sim.Reasons = append(sim.Reasons, p.Reasons...)
				}
			}
			st, desired = p.Next, ph.desired
		}
	}
	slices.Sort(sim.Reasons)
	sim.Reasons = slices.Compact(sim.Reasons)
	sim.After = totalsSince(pr.before, initial, pr.desired, st, desired, costs, pr.ordered)
	for name := range touched {
		sim.Backends = append(sim.Backends, name)
	}
	slices.Sort(sim.Backends)
	sim.Traffic = shares(st, sim.Backends)
	sim.Draining = draining(initial, st, sim.Backends)
	return sim
}

// computeTouched is Compute for the backends a what-if touches: the others
// are what they are whatever the what-if, so planning them would only cost
// time (the browser does this on every preview) and show commands the
// what-if does not cause. Only endpoints may change that way: a route that
// comes, goes or changes moves the routing maps and the pool, which belong
// to every route, and a reload renders every backend, so those plans are
// made whole.
func computeTouched(st dcm.State, d dcm.Desired, caps dcm.Caps, names []string) dcm.Plan {
	if st.DefaultCert != d.DefaultCert {
		return Compute(st, d, caps)
	}
	for _, n := range names {
		a, okA := st.Backend(n)
		w, okD := d.Backend(n)
		if !okA || !okD || a.Retiring || !a.Route.SameServing(w.Route) || !routing.SameSettings(a.Route, w.Route) || !sameTCPTimeouts(a.Route, w.Route) {
			return Compute(st, d, caps)
		}
	}
	sub := dcm.State{Pool: st.Pool, DefaultCert: st.DefaultCert, GatewayBinds: st.GatewayBinds}
	subD := dcm.Desired{DefaultCert: d.DefaultCert}
	for _, n := range names {
		if b, ok := st.Backend(n); ok {
			sub.Backends = append(sub.Backends, b)
		}
		if b, ok := d.Backend(n); ok {
			subD.Backends = append(subD.Backends, b)
		}
	}
	dcm.SortBackends(sub.Backends)
	sort.Slice(subD.Backends, func(i, j int) bool { return subD.Backends[i].Name < subD.Backends[j].Name })
	p := Compute(sub, subD, caps)
	if p.Reload || slices.ContainsFunc(p.Ops, func(o dcm.Op) bool { return o.Server == "" }) {
		return Compute(st, d, caps)
	}
	p.Next = dcm.State{Backends: replaced(st.Backends, names, p.Next.Backends), Pool: p.Next.Pool, DefaultCert: p.Next.DefaultCert,
		GatewayBinds: p.Next.GatewayBinds}
	return p
}

// replaced is backends without the named ones and with those of with, in
// order of name: they are found and put in place by name, as
// computeTouched found them (a state's backends are in order of name), so
// the thousands of others are copied once and not sorted again (a fifth of
// a preview at 10,000 backends). A name not found there, or put next to
// itself, sorts them all after all.
func replaced(backends []*dcm.Backend, names []string, with []*dcm.Backend) []*dcm.Backend {
	next := slices.Clone(backends)
	for _, n := range names {
		i, found := slices.BinarySearchFunc(next, n, backendNamed)
		if !found {
			return sortedWith(backends, names, with)
		}
		next = slices.Delete(next, i, i+1)
	}
	for _, b := range with {
		i, found := slices.BinarySearchFunc(next, b.Name, backendNamed)
		if found {
			return sortedWith(backends, names, with)
		}
		next = slices.Insert(next, i, b)
	}
	return next
}

// sortedWith is replaced by sorting.
func sortedWith(backends []*dcm.Backend, names []string, with []*dcm.Backend) []*dcm.Backend {
	next := slices.DeleteFunc(slices.Clone(backends), func(b *dcm.Backend) bool { return slices.Contains(names, b.Name) })
	next = append(next, with...)
	dcm.SortBackends(next)
	return next
}

func backendNamed(b *dcm.Backend, name string) int { return strings.Compare(b.Name, name) }

// idleBackends is HAProxy reporting every server of the named backends
// idle: nothing in flight.
func idleBackends(st dcm.State, names []string) dcm.State {
	return idleWhere(st, func(b *dcm.Backend) bool { return slices.Contains(names, b.Name) })
}

// idle is HAProxy reporting every server idle: nothing in flight.
func idle(st dcm.State) dcm.State {
	return idleWhere(st, func(*dcm.Backend) bool { return true })
}

func idleWhere(st dcm.State, which func(*dcm.Backend) bool) dcm.State {
	out := dcm.State{Backends: slices.Clone(st.Backends), Pool: st.Pool, DefaultCert: st.DefaultCert, GatewayBinds: st.GatewayBinds}
	for i, sb := range out.Backends {
		if !which(sb) {
			continue
		}
		b := *sb // a copy: st shares its backends
		b.Servers = slices.Clone(b.Servers)
		for k := range b.Servers {
			s := &b.Servers[k]
			s.Unobserved, s.Sessions, s.Queued, s.UsedConn, s.IdleConn = false, 0, 0, 0, 0
		}
		out.Backends[i] = &b
	}
	return out
}

// phasesFor turns one what-if into the moments Kubernetes goes through.
func phasesFor(w dcm.WhatIf, d dcm.Desired) ([]phase, []string, error) {
	switch w.Kind {
	case dcm.WhatIfScale:
		return scalePhases(w, d)
	case dcm.WhatIfDeletePod:
		return deletePodPhases(w, d)
	case dcm.WhatIfAddRoute:
		if w.Route == nil {
			return nil, nil, errors.New("add-route: no route given")
		}
		r := *w.Route
		if err := dcm.ValidateRoute(r); err != nil {
			return nil, nil, dcm.Wrap("add-route", err)
		}
		name := r.BackendName()
		if _, ok := d.Backend(name); ok {
			return nil, nil, errors.New("add-route: " + name + " exists already")
		}
		nb := &dcm.DesiredBackend{Name: name, Route: r, Endpoints: serviceEndpoints(d, r)}
		next := dcm.Desired{Backends: append(slices.Clone(d.Backends), nb), DefaultCert: d.DefaultCert}
		sort.Slice(next.Backends, func(i, j int) bool { return next.Backends[i].Name < next.Backends[j].Name })
		return []phase{{name: "route created", desired: next}}, []string{name}, nil
	case dcm.WhatIfDeleteRoute:
		if _, ok := d.Backend(w.Backend); !ok {
			return nil, nil, errors.New("delete-route: no backend " + w.Backend)
		}
		next := dcm.Desired{Backends: slices.DeleteFunc(slices.Clone(d.Backends), func(b *dcm.DesiredBackend) bool { return b.Name == w.Backend }), DefaultCert: d.DefaultCert}
		return []phase{{name: "route deleted", desired: next}}, []string{w.Backend}, nil
	case dcm.WhatIfUpdateRoute:
		return updateRoutePhases(w, d)
	case dcm.WhatIfRotateCert:
		return rotatePhases(w, d)
	}
	return nil, nil, errors.New("unknown what-if " + strconv.Quote(string(w.Kind)))
}

// updateRoutePhases serves a route's backend as the new version of its
// route says: the planner then tells a setting that changes at runtime (a
// map replace) from one that reloads, as it does for the change
// itself. The endpoints follow the route's services.
func updateRoutePhases(w dcm.WhatIf, d dcm.Desired) ([]phase, []string, error) {
	if w.Route == nil {
		return nil, nil, errors.New("update-route: no route given")
	}
	r := *w.Route
	if err := dcm.ValidateRoute(r); err != nil {
		return nil, nil, dcm.Wrap("update-route", err)
	}
	name := r.BackendName()
	i := slices.IndexFunc(d.Backends, func(b *dcm.DesiredBackend) bool { return b.Name == name })
	if i < 0 {
		return nil, nil, errors.New("update-route: no backend " + name + " (a new kind is delete-route, then add-route)")
	}
	next := dcm.Desired{Backends: slices.Clone(d.Backends), DefaultCert: d.DefaultCert}
	// Endpoint names follow a new CA and a new check interval.
	nb := next.Backends[i].WithUpstream(r.Upstream).WithCheck(r.Check, r.CheckInterMillis)
	if !slices.Equal(nb.Route.Services, r.Services) {
		nb.Endpoints = dcm.DesiredBackend{Route: r, Endpoints: serviceEndpoints(d, r)}.WithUpstreamNames().Endpoints
	}
	nb.Route = r
	next.Backends[i] = &nb
	return []phase{{name: "route updated", desired: next}}, []string{name}, nil
}

// rotatePhases gives the edge and reencrypt routes of a Secret a new
// certificate version, and the reencrypt routes whose destination CA is
// the Secret's ca.crt a new CA version.
// The preview cannot know the new certificate's hash, so it makes one up
// from the old, deterministically: the ops read the same on every run.
func rotatePhases(w dcm.WhatIf, d dcm.Desired) ([]phase, []string, error) {
	if err := dcm.ValidateSecretRef("secret", w.Secret); err != nil {
		return nil, nil, dcm.Wrap("rotate-cert", err)
	}
	next := dcm.Desired{Backends: slices.Clone(d.Backends), DefaultCert: d.DefaultCert}
	var names []string
	rotated := func(v string) string {
		h := fnv.New64a()
		h.Write([]byte(v + "/rotated"))
		return dcm.HexUint(h.Sum64(), 16)
	}
	for i, sb := range next.Backends {
		b := *sb // a copy: d shares its backends
		changed := false
		if b.Route.TLS != nil && b.Route.TLS.Secret == w.Secret {
			tls := *b.Route.TLS
			tls.Version = rotated(tls.Version)
			b.Route.TLS = &tls
			changed = true
		}
		if u := b.Route.Upstream; u != nil && u.CA == "secret:"+w.Secret && u.Version != "" {
			nu := *u
			nu.Version = rotated(u.Version)
			b = b.WithUpstream(&nu)
			changed = true
		}
		if changed {
			next.Backends[i] = &b
			names = append(names, b.Name)
		}
	}
	if next.DefaultCert.Secret == w.Secret {
		// The default certificate: the hosts without one of their own.
		next.DefaultCert.Version = rotated(next.DefaultCert.Version)
	} else if len(names) == 0 {
		return nil, nil, errors.New("rotate-cert: no edge or reencrypt route uses Secret " + w.Secret)
	}
	return []phase{{name: "certificate rotated", desired: next}}, names, nil
}

// serviceEndpoints are the endpoints a new route to an existing service gets:
// those of another route to the same service.
func serviceEndpoints(d dcm.Desired, r dcm.Route) []dcm.Endpoint {
	if len(r.Services) == 0 {
		return nil
	}
	want := serviceKey(r, r.Services[0])
	for _, b := range d.Backends {
		if len(b.Route.Services) > 0 && serviceKey(b.Route, b.Route.Services[0]) == want {
			return slices.Clone(b.Endpoints)
		}
	}
	return nil
}

// serviceKey is the Service and port a route's ref names, whatever its
// weight: a Gateway route's ref has one, and may name another namespace.
func serviceKey(r dcm.Route, s dcm.ServiceRef) string {
	ns := s.Namespace
	if ns == "" {
		ns = r.Namespace
	}
	return ns + "/" + s.Name + ":" + s.Port
}

// workloadBackends are the backends whose route is served by the workload.
func workloadBackends(w dcm.WhatIf, d dcm.Desired) []int {
	var out []int
	for i, b := range d.Backends {
		wl := b.Route.Workload
		if b.Route.Namespace == w.Namespace && wl != nil && w.Workload != nil &&
			strings.EqualFold(wl.Kind, w.Workload.Kind) && wl.Name == w.Workload.Name {
			out = append(out, i)
		}
	}
	return out
}

func scalePhases(w dcm.WhatIf, d dcm.Desired) ([]phase, []string, error) {
	if w.Workload == nil || w.Replicas < 0 {
		return nil, nil, errors.New("scale: a workload and a replica count of 0 or more are needed")
	}
	idx := workloadBackends(w, d)
	if len(idx) == 0 {
		return nil, nil, errors.New("scale: no route is served by " + w.Workload.Kind + " " + w.Namespace + "/" + w.Workload.Name)
	}
	names := make([]string, len(idx))
	for k, i := range idx {
		names[k] = d.Backends[i].Name
	}
	// The pods that count as replicas: those not already terminating (in
	// drain, or ready as the last of their service: dcm.ServeTerminating),
	// and of a route split between services, the primary's (the workload
	// is the primary service's).
	state := map[string]dcm.AdminState{}
	for _, i := range idx {
		b := d.Backends[i]
		for _, e := range b.Endpoints {
			if e.Service != "" && len(b.Route.Services) > 1 && e.Service != b.Route.Services[0].Name {
				continue
			}
			if e.Pod != "" && e.State != dcm.StateDrain && !e.Terminating {
				state[e.Pod] = e.State
			}
		}
	}
	pods := make([]string, 0, len(state))
	for p := range state {
		pods = append(pods, p)
	}
	switch cur := len(pods); {
	case w.Replicas > cur:
		var fresh []string
		for n := 1; len(fresh) < w.Replicas-cur; n++ {
			name := w.Workload.Name + "-new-" + strconv.Itoa(n)
			if _, taken := state[name]; !taken {
				fresh = append(fresh, name)
			}
		}
		starting := withPods(d, idx, fresh, dcm.StateMaint)
		return []phase{
			{name: "new pods start (not ready)", desired: starting},
			{name: "new pods ready", desired: withPods(d, idx, fresh, dcm.StateReady)},
		}, names, nil
	case w.Replicas < cur:
		// The ReplicaSet controller deletes pods that are not ready first;
		// among the others the order is its own, approximated by name.
		slices.SortFunc(pods, func(a, b string) int {
			if (state[a] == dcm.StateMaint) != (state[b] == dcm.StateMaint) {
				if state[a] == dcm.StateMaint {
					return -1
				}
				return 1
			}
			return strings.Compare(b, a)
		})
		victims := pods[:cur-w.Replicas]
		return retirePhases(d, idx, victims, nil), names, nil
	}
	return nil, names, nil
}

func deletePodPhases(w dcm.WhatIf, d dcm.Desired) ([]phase, []string, error) {
	var idx []int
	var names []string
	for i, b := range d.Backends {
		if b.Route.Namespace == w.Namespace && slices.ContainsFunc(b.Endpoints, func(e dcm.Endpoint) bool { return e.Pod == w.Pod }) {
			idx = append(idx, i)
			names = append(names, b.Name)
		}
	}
	if len(idx) == 0 {
		return nil, nil, errors.New("delete-pod: no route reaches pod " + w.Namespace + "/" + w.Pod)
	}
	// Its workload replaces it: a new pod starts as the old one terminates.
	replacement := []string{w.Pod + "-replacement"}
	return retirePhases(d, idx, []string{w.Pod}, replacement), names, nil
}

// retirePhases: the victims terminate (drain, or stay ready while their
// service has no other ready pod: dcm.ServeTerminating) while any
// replacements start, then the victims are gone (maint) and the
// replacements ready, then their last requests end and their servers are
// deleted.
func retirePhases(d dcm.Desired, idx []int, victims, replacements []string) []phase {
	terminating := terminatePods(d, idx, victims)
	terminating = withPods(terminating, idx, replacements, dcm.StateMaint)
	gone := withoutPods(d, idx, victims)
	gone = withPods(gone, idx, replacements, dcm.StateReady)
	return []phase{
		{name: "pods terminating", desired: terminating},
		{name: "pods gone", desired: gone},
		{name: "last requests done", desired: gone, idle: true},
	}
}

// withPods adds an endpoint for each new pod to the backends idx, shaped like
// the backend's existing endpoints (port name, port, weight).
func withPods(d dcm.Desired, idx []int, pods []string, st dcm.AdminState) dcm.Desired {
	if len(pods) == 0 {
		return d
	}
	out := dcm.Desired{Backends: slices.Clone(d.Backends), DefaultCert: d.DefaultCert}
	for _, i := range idx {
		b := *out.Backends[i] // a copy: d shares its backends
		portName, port, weight, proto := "http", 0, 1, dcm.ProtoDefault
		if len(b.Endpoints) > 0 {
			e := b.Endpoints[0]
			if _, p, ok := strings.Cut(e.Name, ":"); ok {
				portName = p // with the suffixes the sources add (WithProtoNames, WithUpstreamNames)
			}
			port, weight, proto = e.Port, e.Weight, e.Proto
		}
		service := "" // the workload is the route's primary service's
		if len(b.Route.Services) > 1 {
			service = b.Route.Services[0].Name
		}
		eps := slices.Clone(b.Endpoints)
		for _, pod := range pods {
			eps = append(eps, dcm.Endpoint{Name: pod + ":" + portName, Port: port, Weight: weight, State: st, Pod: pod, Service: service, Proto: proto})
		}
		sort.Slice(eps, func(i, j int) bool { return eps[i].Name < eps[j].Name })
		b.Endpoints = eps
		nb := b.ServeTerminating().Reweigh()
		out.Backends[i] = &nb
	}
	return out
}

// terminatePods marks the pods' endpoints as the endpointslice controller
// does once they are deleted: serving while terminating.
func terminatePods(d dcm.Desired, idx []int, pods []string) dcm.Desired {
	out := dcm.Desired{Backends: slices.Clone(d.Backends), DefaultCert: d.DefaultCert}
	for _, i := range idx {
		b := *out.Backends[i] // a copy: d shares its backends
		b.Endpoints = slices.Clone(b.Endpoints)
		for k, e := range b.Endpoints {
			if slices.Contains(pods, e.Pod) {
				b.Endpoints[k].State, b.Endpoints[k].Terminating = dcm.StateDrain, true
			}
		}
		nb := b.ServeTerminating().Reweigh()
		out.Backends[i] = &nb
	}
	return out
}

func withoutPods(d dcm.Desired, idx []int, pods []string) dcm.Desired {
	out := dcm.Desired{Backends: slices.Clone(d.Backends), DefaultCert: d.DefaultCert}
	for _, i := range idx {
		b := *out.Backends[i] // a copy: d shares its backends
		b.Endpoints = slices.DeleteFunc(slices.Clone(b.Endpoints), func(e dcm.Endpoint) bool { return slices.Contains(pods, e.Pod) })
		nb := b.ServeTerminating().Reweigh()
		out.Backends[i] = &nb
	}
	return out
}

// shares are the parts of new requests each ready server of the backends gets.
func shares(st dcm.State, backends []string) []dcm.Share {
	out := []dcm.Share{}
	for _, name := range backends {
		b, ok := st.Backend(name)
		if !ok {
			continue
		}
		total := 0
		for _, s := range b.Servers {
			if s.State == dcm.StateReady {
				total += s.Weight
			}
		}
		for _, s := range b.Servers {
			if s.State != dcm.StateReady {
				continue
			}
			share := 0.0
			if total > 0 {
				share = float64(s.Weight) / float64(total)
			}
			out = append(out, dcm.Share{Backend: name, Server: s.Name, Pod: s.Pod, Weight: s.Weight, Share: share})
		}
	}
	return out
}

// draining lists the servers that were ready and take no new request after
// the preview, with the sessions they have now.
func draining(before, after dcm.State, backends []string) []dcm.Draining {
	out := []dcm.Draining{}
	for _, name := range backends {
		b, ok := before.Backend(name)
		if !ok {
			continue
		}
		a, kept := after.Backend(name)
		for _, s := range b.Servers {
			if s.State != dcm.StateReady {
				continue
			}
			if !kept {
				out = append(out, dcm.Draining{Backend: name, Server: s.Name, Pod: s.Pod, Sessions: s.Sessions})
				continue
			}
			if n, ok := a.Server(s.Name); ok && n.State == dcm.StateReady && n.Endpoint == s.Endpoint {
				continue
			}
			out = append(out, dcm.Draining{Backend: name, Server: s.Name, Pod: s.Pod, Sessions: s.Sessions})
		}
	}
	return out
}

// Follow keeps a snapshot current with a feed event, as the browser's
// planner does between previews: backends an event carries replace their
// old selves; ok is false when the event cannot be followed this way (a
// reload, events missed, or a route bound to or released from a spare,
// which moves the pool no event carries) and a fresh snapshot is needed.
func Follow(snap dcm.Snapshot, ev dcm.Event) (dcm.Snapshot, bool) {
	if ev.Seq != snap.Seq+1 {
		return snap, ev.Seq <= snap.Seq // old news is harmless; a gap is not
	}
	snap.Seq = ev.Seq
	if ev.Type == dcm.EventReload {
		return snap, false
	}
	if ev.Type == dcm.EventApplied && movesPool(ev) {
		return snap, false // the free spares are not in events
	}
	if ev.Type != dcm.EventApplied && ev.Type != dcm.EventObserved {
		// Others name backends without carrying their state.
		return snap, true
	}
	backends := slices.Clone(snap.Backends)
	// A backend the event touched but does not carry is gone.
	backends = slices.DeleteFunc(backends, func(b *dcm.Backend) bool {
		return slices.Contains(ev.Backends, b.Name) && !slices.ContainsFunc(ev.State, func(s *dcm.Backend) bool { return s.Name == b.Name })
	})
	for _, nb := range ev.State {
		i, found := slices.BinarySearchFunc(backends, nb.Name, func(b *dcm.Backend, n string) int { return strings.Compare(b.Name, n) })
		if found {
			backends[i] = nb
		} else {
			backends = slices.Insert(backends, i, nb)
		}
	}
	snap.Backends = backends
	snap.DefaultCert = followDefaultCert(snap.DefaultCert, ev)
	return snap, true
}

// movesPool reports whether an applied event changed the routing maps or
// dropped a backend (named, but without its state): a spare was taken or
// given back.
func movesPool(ev dcm.Event) bool {
	if slices.ContainsFunc(ev.Ops, func(o dcm.Op) bool { return o.Kind == dcm.OpMapReplace }) {
		return true
	}
	for _, name := range ev.Backends {
		if !slices.ContainsFunc(ev.State, func(b *dcm.Backend) bool { return b.Name == name }) {
			return true
		}
	}
	return false
}
