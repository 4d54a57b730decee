package corpus

import (
	"slices"
	"strings"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
)

// capsChoices are the modes scenarios run in, as often as each other.
var capsChoices = []dcm.Caps{
	{Mode: dcm.ModeDynamic, AddServer: true},
	{Mode: dcm.ModeDynamic, AddServer: false},
	{Mode: dcm.ModeSlots, Slots: 1, AddServer: true},
	{Mode: dcm.ModeSlots, Slots: 3, AddServer: true},
	{Mode: dcm.ModeReload, AddServer: true},
	{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2},
	{Mode: dcm.ModeDynamic, AddServer: true, Pool: 5},
	{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true},
}

// tlsCapsChoices are the modes of the certificate scenarios: a rotation at
// runtime, and a reload for cert-changed.
var tlsCapsChoices = []dcm.Caps{
	{Mode: dcm.ModeDynamic, AddServer: true, RuntimeCerts: true},
	{Mode: dcm.ModeDynamic, AddServer: true, Pool: 2, RuntimeCerts: true},
	{Mode: dcm.ModeDynamic, AddServer: true},
	{Mode: dcm.ModeSlots, Slots: 3, AddServer: true},
	{Mode: dcm.ModeReload, AddServer: true},
}

// base is the clock of every generated time: the planner never reads it,
// but the JSON it parses carries it.
var base = time.Date(2026, 12, 2, 15, 4, 5, 123456789, time.UTC)

var adminStates = []dcm.AdminState{dcm.StateReady, dcm.StateReady, dcm.StateReady, dcm.StateReady, dcm.StateDrain, dcm.StateMaint}

// desired is one moment of the cluster: which routes exist, which pods
// are up and how ready. Pods are the same for every route of a workload.
// One moment in three also has routes gone or changed (a reload).
func (g *gen) desired(c *cluster) dcm.Desired { return g.desiredChurn(c, g.r.IntN(3) == 0) }

func (g *gen) desiredChurn(c *cluster, churn bool) dcm.Desired {
	type podNow struct {
		state  dcm.AdminState
		port   int
		weight int
	}
	now := map[*workload][]*podNow{}
	for _, wl := range c.workloads {
		ps := make([]*podNow, len(wl.pods))
		for p := range wl.pods {
			if g.r.IntN(10) < 3 {
				continue // not there now
			}
			pn := &podNow{state: adminStates[g.r.IntN(len(adminStates))], port: wl.port, weight: 1}
			if g.r.IntN(12) == 0 {
				pn.port++ // the pod moved ports: set-addr
			}
			switch g.r.IntN(15) {
			case 0:
				pn.weight = 2 + g.r.IntN(4)
			case 1:
				pn.weight = 0
			case 2:
				pn.weight = 256
			}
			ps[p] = pn
		}
		now[wl] = ps
	}
	var d dcm.Desired
	for i, r := range c.routes {
		if churn && g.r.IntN(10) == 0 {
			continue // the route is absent this time
		}
		if churn && g.r.IntN(15) == 0 {
			r.Balance = dcm.BalanceLeastConn // served differently: a reload
		}
		if churn && r.TLS != nil && g.r.IntN(3) == 0 {
			tls := *r.TLS // a rotation: shared with the cluster's route
			tls.Version = g.pick([]string{"", "0a1b2c", "3d4e5f", "6a7b8c"})
			r.TLS = &tls
		}
		wl := c.behind[i]
		b := dcm.DesiredBackend{Name: r.BackendName(), Route: r, Endpoints: []dcm.Endpoint{}}
		for p, pn := range now[wl] {
			if pn == nil {
				continue
			}
			b.Endpoints = append(b.Endpoints, dcm.Endpoint{
				Name: dcm.ServerName(wl.pods[p], wl.portName, wl.addrs[p], pn.port), Addr: wl.addrs[p], Port: pn.port,
				Weight: pn.weight, State: pn.state, Pod: wl.pods[p],
				// A pod the kube layer drains is one that terminates: the
				// terminating-endpoint fallback then serves the last ones.
				Terminating: pn.state == dcm.StateDrain,
				Proto:       protoOf(r),
			})
		}
		slices.SortFunc(b.Endpoints, func(x, y dcm.Endpoint) int { return strings.Compare(x.Name, y.Name) })
		// Named as the kube layer names them: after an h2c port, a
		// reencrypt route's CA and a route's check interval.
		nb := b.WithProtoNames().WithUpstreamNames().ServeTerminating()
		d.Backends = append(d.Backends, &nb)
	}
	slices.SortFunc(d.Backends, func(x, y *dcm.DesiredBackend) int { return strings.Compare(x.Name, y.Name) })
	if g.moments++; g.tls {
		// The default certificate: the self-signed one, or a Secret's
		// (--default-ssl-certificate) in one of its versions.
		d.DefaultCert = []dcm.Cert{{Secret: defaultCertSecret, Version: "0a1b2c"}, {}, {Secret: defaultCertSecret, Version: "3d4e5f"}}[g.moments%3]
	}
	return d
}

// defaultCertSecret is the Secret of --default-ssl-certificate in the corpus.
const defaultCertSecret = "openshift-ingress/router-default"

var healthOf = map[dcm.AdminState][]string{
	dcm.StateReady: {"UP", "UP", "UP", "DOWN", "UP 1/3"},
	dcm.StateDrain: {"DRAIN", "NOLB"},
	dcm.StateMaint: {"MAINT", "MAINT (resolution)"},
}

// observe plays HAProxy reporting on a state: traffic on some servers,
// health, and most servers observed since dcm last changed them.
func (g *gen) observe(st dcm.State) dcm.State {
	out := dcm.State{Backends: slices.Clone(st.Backends), Pool: st.Pool, DefaultCert: st.DefaultCert, GatewayBinds: st.GatewayBinds}
	for i, sb := range out.Backends {
		b := *sb // a copy: st shares its backends
		b.Servers = slices.Clone(b.Servers)
		for k := range b.Servers {
			s := &b.Servers[k]
			if g.r.IntN(10) == 0 {
				continue // not reported yet
			}
			s.Unobserved = false
			s.Sessions, s.Queued, s.UsedConn, s.IdleConn = 0, 0, 0, 0
			if g.r.IntN(3) == 0 {
				s.Sessions = 1 + g.r.IntN(40)
				s.UsedConn = g.r.IntN(s.Sessions + 1)
			}
			if g.r.IntN(20) == 0 {
				s.Queued = 1 + g.r.IntN(5)
			}
			if s.Check {
				s.Health = g.pick(healthOf[s.State])
			} else {
				s.Health = "no check"
			}
		}
		out.Backends[i] = &b
	}
	return out
}

// history is an actual state the way the engine reaches it: a rendered
// configuration, then plans applied one after another with HAProxy
// reporting in between. It returns the state and the last desired.
func (g *gen) history(c *cluster, caps dcm.Caps) (dcm.State, dcm.Desired) {
	d := g.desired(c)
	st := plan.Fresh(d, caps)
	for range g.r.IntN(4) {
		d = g.desired(c)
		st = plan.Compute(g.observe(st), d, caps).Next
	}
	return g.observe(st), d
}

// markRetired flags the servers whose endpoint Kubernetes no longer has,
// as the engine does for snapshots and events.
func markRetired(backends []*dcm.Backend, d dcm.Desired) []*dcm.Backend {
	out := slices.Clone(backends)
	for i, sb := range out {
		b := *sb // a copy: backends are shared
		db, ok := d.Backend(b.Name)
		b.Servers = slices.Clone(b.Servers)
		for k, s := range b.Servers {
			b.Servers[k].Retired = s.Endpoint != "" && (!ok || !slices.ContainsFunc(db.Endpoints, func(e dcm.Endpoint) bool { return e.Name == s.Endpoint }))
		}
		out[i] = &b
	}
	return out
}

func (g *gen) caps() dcm.Caps {
	if g.tls {
		return tlsCapsChoices[g.r.IntN(len(tlsCapsChoices))]
	}
	if g.r.IntN(25) == 0 {
		// Rarer shapes: slots mode with 2 (or no) spare slots.
		return dcm.Caps{Mode: dcm.ModeSlots, Slots: g.r.IntN(2) * 2, AddServer: g.r.IntN(2) == 0}
	}
	return capsChoices[g.r.IntN(len(capsChoices))]
}

// snapshot is what GET /api/v1/snapshot would return for a state.
func (g *gen) snapshot(seq uint64, caps dcm.Caps, st dcm.State, d dcm.Desired) dcm.Snapshot {
	s := dcm.Snapshot{
		Seq: seq, Mode: caps.Mode, Caps: caps,
		HAProxy: dcm.HAProxyInfo{Version: "2.6.12-1+deb12u1", PID: 1000 + g.r.IntN(30000),
			Started: base.Add(-time.Duration(g.r.IntN(1e6)) * time.Second), Reloads: g.r.IntN(40), Running: true},
		Updates:  dcm.Updates{Noop: uint64(g.r.IntN(1000)), Dynamic: uint64(g.r.IntN(500)), Reload: uint64(g.r.IntN(40))},
		Backends: markRetired(st.Backends, d),
		Pool:     st.Pool,
		Rejected: []dcm.Rejection{},
		// The planner reads it as a state's: what default.pem holds.
		DefaultCert: st.DefaultCert,
	}
	if g.r.IntN(2) == 0 {
		s.LastReload = &dcm.ReloadInfo{Time: base.Add(-time.Duration(g.r.IntN(1e5)) * time.Millisecond).In(time.FixedZone("CET", 3600)),
			Reasons: []dcm.ReloadReason{dcm.ReasonRouteAdded}, Duration: 0.0125 * float64(1+g.r.IntN(9)), OldPID: 999, NewPID: 1001}
	}
	if g.r.IntN(3) == 0 { // the planner ignores them: not always worth the bytes
		s.Routes = []dcm.Route{}
		for _, b := range d.Backends {
			s.Routes = append(s.Routes, b.Route)
		}
	}
	if g.r.IntN(8) == 0 {
		s.Rejected = append(s.Rejected, dcm.Rejection{Object: dcm.ObjectRef{Kind: "Ingress", Namespace: "default", Name: "bad"},
			Reason: dcm.RejectInvalidHost, Message: `invalid-host: host "Bad_Host"`})
	}
	return s
}

// protoOf is what the pods of some HTTP routes speak: h2c, from their
// Service port's appProtocol.
func protoOf(r dcm.Route) dcm.Proto {
	if r.Kind == dcm.KindPassthrough {
		return dcm.ProtoDefault // TCP: no HTTP protocol
	}
	return dcm.Proto(pickBy(r.Name, []string{"", "", "h2"}))
}
