package plan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
)

// gen builds random but valid states and desires. Endpoints come from a small
// universe per backend so that consecutive desires overlap, as they do when
// a Deployment scales.
type gen struct {
	r chooser
	// noGateway leaves the Gateway routes out: they take spares that the
	// moves of other routes would take.
	noGateway bool
	// otherBinds puts Gateway routes on binds outside propGateway's
	// pre-bound set too: another port, an address outside the pool.
	otherBinds bool
	// tlsRoutes puts some Gateway routes on a TLS listener's bind: the
	// passthrough routes of TLSRoutes.
	tlsRoutes bool
}

// chooser is where gen takes its decisions from: a seeded PRNG in the
// property tests, the fuzzer's bytes in FuzzCompute.
type chooser interface{ IntN(n int) int }

// genAllowlists are short lists and long ones, in chunks in the
// allowlist map, that share all their chunks but the first.
var genAllowlists = [][]string{{"10.0.0.0/8"}, {"10.0.0.0/8", "2001:db8::/32"}, {"127.0.0.2"}, longAllowlist("127.0.0.2"), longAllowlist("127.0.0.3")}

// longAllowlist is 500 networks and addr, canonical: about 7.5 KB.
func longAllowlist(addr string) []string {
	list := []string{addr}
	for i := range 500 {
		list = append(list, fmt.Sprintf("2001:db8:%x::/48", i+1))
	}
	slices.Sort(list)
	return list
}

var genStates = []dcm.AdminState{dcm.StateReady, dcm.StateReady, dcm.StateReady, dcm.StateDrain, dcm.StateMaint}

func (g gen) route(n int) dcm.Route {
	return dcm.Route{
		Namespace: "ns", Name: fmt.Sprintf("r%d", n), Source: dcm.SourceIngress, Kind: dcm.KindHTTP,
		Host: fmt.Sprintf("h%d.example", n), Path: "/", PathType: dcm.PathPrefix,
		Balance: dcm.BalanceRoundRobin, Check: n%2 == 0,
	}
}

func (g gen) desired() dcm.Desired {
	var d dcm.Desired
	for n := range 5 {
		if g.r.IntN(5) == 0 {
			continue // route absent this time
		}
		r := g.route(n)
		if g.r.IntN(12) == 0 {
			r.Path = "/changed"
		}
		if g.r.IntN(8) == 0 {
			// Health checks turned on or off: the route moves to a spare,
			// as for stickiness.
			r.Check = !r.Check
		}
		if n == 1 && g.r.IntN(3) == 0 {
			// A wildcard route: its entries are in the wildcard maps.
			r.Host = dcm.WildcardPrefix + r.Host
		}
		if n == 2 && g.r.IntN(3) == 0 {
			// A passthrough route: a whole host, a TCP spare.
			r.Kind, r.Path, r.Balance = dcm.KindPassthrough, "/", dcm.BalanceSource
		}
		if n >= 3 {
			// Edge routes: a certificate that is rotated now and then,
			// and sometimes not (yet) valid.
			r.Kind = dcm.KindEdge
			r.TLS = &dcm.TLSRef{Secret: "ns/tls" + fmt.Sprint(n), Version: []string{"aa", "bb", "bb", ""}[g.r.IntN(4)]}
		}
		if n == 3 && g.r.IntN(3) == 0 {
			// A route on another route's host: its keys beside that
			// route's, or the very same key, a conflict the kube layer
			// refuses but the maps must survive (the first route in
			// order holds the key, the other takes it when it goes).
			r.Host, r.Path = "h0.example", []string{"/", "/api", "/changed"}[g.r.IntN(3)]
		}
		if n == 4 && g.r.IntN(2) == 0 {
			// A reencrypt route: a destination CA rotated now and then,
			// its servers renamed after it as the sources name them.
			r.Kind = dcm.KindReencrypt
			r.Upstream = &dcm.UpstreamTLS{CA: "secret:ns/ca", Version: []string{"c1", "c2", "c2"}[g.r.IntN(3)], ServerName: "svc.ns.svc"}
			// OpenShift's verification: the chain only (a Route's own CA), or
			// each Service's name (the default CA), now and then.
			switch g.r.IntN(4) {
			case 0:
				r.Upstream.ServerName = ""
			case 1:
				r.Upstream.PerService = true
			}
		}
		if r.Kind != dcm.KindHTTP {
			// What plain HTTP gets: an insecure map's entry that changes
			// on its own, with the route or with its spare.
			r.Insecure = []dcm.InsecurePolicy{"", dcm.InsecureAllow, dcm.InsecureRedirect, dcm.InsecureNone}[g.r.IntN(4)]
			if r.Kind == dcm.KindPassthrough && r.Insecure == dcm.InsecureAllow {
				r.Insecure = dcm.InsecureRedirect
			}
			if r.Insecure == dcm.InsecureRedirect && g.r.IntN(2) == 0 {
				r.RedirectCode = 308
			}
		}
		if g.r.IntN(3) == 0 {
			// A client allowlist that comes, changes and goes on its own,
			// with the route or with its spare.
			r.Allowlist = genAllowlists[g.r.IntN(len(genAllowlists))]
		}
		// A connection limit per server: set maxconn server on each.
		r.MaxConn = []int{0, 0, 2, 50}[g.r.IntN(4)]
		// A check interval: new servers, named after it, beside the old.
		r.CheckInterMillis = []int64{0, 0, 2000}[g.r.IntN(3)]
		if g.r.IntN(3) == 0 {
			// Rate limits: a map entry that comes, changes and goes.
			r.RateLimit = []*dcm.RateLimit{{}, {ConcurrentTCP: 5}, {RateTCP: 2, RateHTTP: 9}}[g.r.IntN(3)]
		}
		if r.Kind != dcm.KindPassthrough {
			// HTTP options: setting maps' entries that change on their own.
			r.HTTP.Forwarded = []dcm.ForwardedPolicy{"", "", dcm.ForwardReplace, dcm.ForwardNever}[g.r.IntN(4)]
			r.HTTP.TimeoutMillis = []int64{0, 0, 2000, 5000}[g.r.IntN(4)]
			r.HTTP.TunnelMillis = []int64{0, 0, 3600000}[g.r.IntN(3)]
			if r.TerminatesTLS() {
				r.HTTP.HSTS = []string{"", "max-age=1", "max-age=1;includeSubDomains;preload"}[g.r.IntN(3)]
			}
			// The cookie's name and SameSite: cookie maps' entries of
			// sticky routes.
			// Stickiness turned on and off: the route moves between a
			// plain and a sticky spare, beside its old backend.
			r.Sticky = n == 1 && g.r.IntN(4) != 0 || n == 0 && g.r.IntN(4) == 0
			r.HTTP.CookieName = []string{"", "", "web_session"}[g.r.IntN(3)]
			r.HTTP.CookieSameSite = []string{"", "", dcm.SameSiteStrict}[g.r.IntN(3)]
			r.HTTP.RewriteTarget = []string{"", "", "/", "/v2"}[g.r.IntN(4)]
		} else if g.r.IntN(4) == 0 {
			r.HTTP.TimeoutMillis = 30000 // in the TCP backend: a reload
		}
		if r.Kind != dcm.KindPassthrough && g.r.IntN(3) == 0 {
			// Header actions: a headers map entry that changes on its
			// own, to a name never seen before now and then.
			r.Headers = &dcm.HeaderActions{Request: []dcm.HeaderAction{{Name: fmt.Sprintf("X-H%d", g.r.IntN(3)), Type: dcm.HeaderSet, Value: "v"}}}
			if g.r.IntN(2) == 0 {
				r.Headers.Response = []dcm.HeaderAction{{Name: "X-Powered-By", Type: dcm.HeaderDelete}}
			}
		}
		b := dcm.DesiredBackend{Name: r.BackendName(), Route: r}
		for p := range 8 {
			if g.r.IntN(2) == 0 {
				continue
			}
			port := 8080
			if g.r.IntN(10) == 0 {
				port = 9090 // the pod moved ports: set-addr
			}
			b.Endpoints = append(b.Endpoints, dcm.Endpoint{
				Name: fmt.Sprintf("pod%d:http", p), Addr: fmt.Sprintf("10.0.%d.%d", n, p+1), Port: port,
				Weight: 1 + g.r.IntN(3), State: genStates[g.r.IntN(len(genStates))], Pod: fmt.Sprintf("pod%d", p),
			})
		}
		if g.r.IntN(4) == 0 {
			// An h2c Service port (appProtocol): servers renamed after it.
			for i := range b.Endpoints {
				b.Endpoints[i].Proto = dcm.ProtoH2
			}
		}
		nb := b.WithProtoNames().WithUpstreamNames()
		d.Backends = append(d.Backends, &nb)
	}
	for n := 5; n < 9 && !g.noGateway; n++ {
		if g.r.IntN(4) == 0 {
			continue // absent this time
		}
		nb := g.gatewayBackend(n)
		d.Backends = append(d.Backends, &nb)
	}
	// The default certificate: dcm's self-signed one, or a Secret's
	// rotated now and then.
	d.DefaultCert = []dcm.Cert{{}, {Secret: "ingress/default", Version: "aa"}, {Secret: "ingress/default", Version: "bb"}}[g.r.IntN(3)]
	// Edge backends (be_edge:…) sort before HTTP ones.
	slices.SortFunc(d.Backends, func(a, b *dcm.DesiredBackend) int { return strings.Compare(a.Name, b.Name) })
	return d
}

// gatewayBackend is a Gateway route: on one of a few binds (HTTPS ones
// with a listener certificate rotated now and then, a TLS one whose
// routes are TLSRoutes' passthrough ones), sharing hostnames and
// candidates with the others, its matches, filters and rank changing on
// their own: the gateway maps' entries, grouped by bind (and a TLS bind's
// passthrough mark).
// tlsBind is the TLS listener's bind of the generated TLSRoutes: an
// address of the pool, on the pre-bound HTTPS port that TLS listeners
// share.
const tlsBind = "10.1.0.2:443"

func (g gen) gatewayBackend(n int) dcm.DesiredBackend {
	binds := []string{"10.1.0.1:80", "10.1.0.1:443", "10.1.0.2:80"}
	if g.otherBinds {
		binds = append(binds, "10.1.0.1:8080", "10.1.0.3:80", "10.1.0.2:8443")
	}
	bind := binds[g.r.IntN(len(binds))]
	if g.tlsRoutes && g.r.IntN(2) == 0 {
		bind = tlsBind // a TLS listener's
	}
	r := dcm.Route{Namespace: "gw", Name: fmt.Sprintf("hr%d", n), Source: dcm.SourceHTTPRoute, Kind: dcm.KindHTTP,
		Services: []dcm.ServiceRef{{Name: "svc", Port: "80", Weight: 1}}, Balance: dcm.BalanceRoundRobin,
		Gateway: &dcm.GatewayRoute{Gateway: "gw/g", Listener: "l", Bind: bind,
			Hostnames: [][]string{nil, {"a.gw"}, {"*.gw"}, {"a.gw", "b.gw"}}[g.r.IntN(4)],
			Rank:      fmt.Sprint(g.r.IntN(3))}}
	if bind == tlsBind {
		r.Source, r.Kind, r.Balance = dcm.SourceTLSRoute, dcm.KindPassthrough, dcm.DefaultBalance(dcm.KindPassthrough)
		r.Gateway.Unresolved = g.r.IntN(6) == 0
		return g.gatewayEndpoints(n, dcm.DesiredBackend{Name: r.BackendName(), Route: r})
	}
	if strings.HasSuffix(bind, "443") {
		r.Kind = dcm.KindEdge
		r.TLS = &dcm.TLSRef{Secret: "gw/cert", Version: []string{"aa", "bb", ""}[g.r.IntN(3)]}
	}
	for range 1 + g.r.IntN(2) {
		m := dcm.HTTPMatch{PathType: []string{dcm.GatewayPathPrefix, dcm.GatewayPathExact}[g.r.IntN(2)], Path: []string{"/", "/a", "/a/b"}[g.r.IntN(3)]}
		if g.r.IntN(3) == 0 {
			m.Headers = []dcm.ValueMatch{{Name: "X-V", Value: fmt.Sprint(g.r.IntN(2))}}
		}
		if g.r.IntN(4) == 0 {
			m.Method = "POST"
		}
		r.Gateway.Matches = append(r.Gateway.Matches, m)
	}
	switch g.r.IntN(4) {
	case 0:
		r.Gateway.Filters = &dcm.HTTPFilters{RequestHeaders: &dcm.HeaderMods{Set: []dcm.HeaderValue{{Name: fmt.Sprintf("X-G%d", g.r.IntN(3)), Value: "v"}}}}
	case 1:
		r.Gateway.Filters = &dcm.HTTPFilters{Redirect: &dcm.HTTPRedirect{Scheme: "https", StatusCode: 301}}
	}
	r.Gateway.Unresolved = g.r.IntN(6) == 0
	return g.gatewayEndpoints(n, dcm.DesiredBackend{Name: r.BackendName(), Route: r})
}

// gatewayEndpoints gives a Gateway route's backend some of three pods.
func (g gen) gatewayEndpoints(n int, b dcm.DesiredBackend) dcm.DesiredBackend {
	for p := range 3 {
		if g.r.IntN(2) == 0 {
			continue
		}
		b.Endpoints = append(b.Endpoints, dcm.Endpoint{
			Name: fmt.Sprintf("gpod%d:http", p), Addr: fmt.Sprintf("10.2.%d.%d", n, p+1), Port: 8080,
			Weight: 1 + g.r.IntN(3), State: dcm.StateReady, Pod: fmt.Sprintf("gpod%d", p),
		})
	}
	return b.WithUpstreamNames()
}

// observe plays HAProxy reporting on the state: random traffic on some servers.
func (g gen) observe(st dcm.State) dcm.State {
	out := dcm.State{Backends: slices.Clone(st.Backends), Pool: st.Pool}
	for i, sb := range out.Backends {
		b := *sb // a copy: st shares its backends
		b.Servers = slices.Clone(b.Servers)
		for k := range b.Servers {
			s := &b.Servers[k]
			s.Unobserved = false
			s.Sessions, s.Queued, s.UsedConn, s.IdleConn = 0, 0, 0, 0
			if g.r.IntN(3) == 0 {
				s.Sessions = 1 + g.r.IntN(3)
			}
		}
		out.Backends[i] = &b
	}
	return out
}

// history produces an actual state the way the engine produces it: plans
// applied one after another, with observations in between.
func (g gen) history(caps dcm.Caps) dcm.State {
	st := Fresh(g.desired(), caps)
	for range g.r.IntN(4) {
		p := Compute(g.observe(st), g.desired(), caps)
		st = p.Next
	}
	return g.observe(st)
}

// propGateway pre-binds the binds gatewayBackend's routes are on.
var propGateway = dcm.GatewayBinds{Addresses: []string{"10.1.0.1", "10.1.0.2"}, HTTPPorts: []int{80}, HTTPSPorts: []int{443}}

func modes() []dcm.Caps {
	caps := []dcm.Caps{
		{Mode: dcm.ModeDynamic, AddServer: true, RuntimeCerts: true},
		{Mode: dcm.ModeDynamic, AddServer: false, RuntimeCerts: true},
		{Mode: dcm.ModeDynamic, AddServer: true, Pool: 1, StickyPool: 1, RuntimeCerts: true},
		{Mode: dcm.ModeDynamic, AddServer: true, Pool: 3, StickyPool: 2, RuntimeCerts: true},
		{Mode: dcm.ModeDynamic, AddServer: true, Pool: 3, StickyPool: 1},
		{Mode: dcm.ModeSlots, Slots: 1, AddServer: true},
		{Mode: dcm.ModeSlots, Slots: 3, AddServer: true},
		{Mode: dcm.ModeReload, AddServer: true},
	}
	for i := range caps {
		caps[i].Gateway = propGateway
	}
	return caps
}

// serversOf is the servers of a data plane by HAProxy backend; a backend
// without servers is left out, since an empty spare, an empty backend a
// released route left behind and no backend serve alike.
func serversOf(dp DataPlane) map[string][]dcm.Server {
	out := make(map[string][]dcm.Server, len(dp.Servers))
	for name, servers := range dp.Servers {
		if len(servers) > 0 {
			out[name] = servers
		}
	}
	return out
}

// servesDesired checks that every desired endpoint has exactly one server
// carrying it with its address, weight and state, and that every other server
// takes no traffic.
func servesDesired(t *testing.T, next dcm.State, d dcm.Desired) {
	t.Helper()
	var routed []*dcm.Backend
	for _, b := range next.Backends {
		if !b.Retiring {
			routed = append(routed, b)
			continue
		}
		// A retiring backend is in no map and takes no new traffic.
		if _, ok := d.Backend(b.Name); ok {
			t.Errorf("%s is retiring but desired", b.Name)
		}
		for _, s := range b.Servers {
			if s.State != dcm.StateMaint {
				t.Errorf("%s/%s is retiring but %s", b.Name, s.Name, s.State)
			}
		}
	}
	if len(routed) != len(d.Backends) {
		t.Fatalf("next has %d routed backends, desired %d", len(routed), len(d.Backends))
	}
	for i, db := range d.Backends {
		b := routed[i]
		if b.Name != db.Name {
			t.Fatalf("backend %d: next %s, desired %s", i, b.Name, db.Name)
		}
		carried := map[string]int{}
		for _, e := range db.Endpoints {
			carried[e.Name] = 0
		}
		for _, s := range b.Servers {
			e, ok := endpointByName(db.Endpoints, s.Endpoint)
			if !ok {
				if s.State != dcm.StateMaint {
					t.Errorf("%s/%s carries no desired endpoint but is %s", b.Name, s.Name, s.State)
				}
				continue
			}
			carried[e.Name]++
			if s.Addr != e.Addr || s.Port != e.Port || s.Weight != e.Weight || s.State != e.State {
				t.Errorf("%s/%s = %s:%d w%d %s, endpoint %s wants %s:%d w%d %s", b.Name, s.Name,
					s.Addr, s.Port, s.Weight, s.State, e.Name, e.Addr, e.Port, e.Weight, e.State)
			}
		}
		for name, n := range carried {
			if n != 1 {
				t.Errorf("%s: endpoint %s carried by %d servers", b.Name, name, n)
			}
		}
	}
}

func endpointByName(eps []dcm.Endpoint, name string) (dcm.Endpoint, bool) {
	for _, e := range eps {
		if e.Name == name && name != "" {
			return e, true
		}
	}
	return dcm.Endpoint{}, false
}

func TestComputeProperties(t *testing.T) {
	for _, caps := range modes() {
		t.Run(fmt.Sprintf("%s-slots%d-add%v-pool%d", caps.Mode, caps.Slots, caps.AddServer, caps.Pool), func(t *testing.T) {
			moves := 0
			for seed := range 400 {
				g := gen{r: rand.New(rand.NewPCG(uint64(seed), 7)), noGateway: true}
				actual := g.history(caps)
				desired := g.desired()
				checkPlan(t, fmt.Sprintf("seed %d", seed), actual, desired, caps)
				moves += movedBackends(Compute(actual, desired, caps).Next)
			}
			gateway := 0
			for seed := range 400 {
				g := gen{r: rand.New(rand.NewPCG(uint64(seed), 17))}
				actual, desired := g.history(caps), g.desired()
				checkPlan(t, fmt.Sprintf("with Gateway routes, seed %d", seed), actual, desired, caps)
				for _, op := range Compute(actual, desired, caps).Ops {
					if op.Map.Gateway() || op.Cert != nil && op.Cert.Bind != "" {
						gateway++
					}
				}
			}
			if caps.Pooled() && caps.RuntimeCerts && gateway < 100 {
				t.Errorf("%d ops of Gateway maps and certificates in 400 plans, want 100 or more", gateway)
			}
			// TLSRoutes' passthrough routes beside HTTPRoutes' on their
			// own bind: the bind's passthrough mark follows its routes.
			passthrough := 0
			for seed := range 400 {
				g := gen{r: rand.New(rand.NewPCG(uint64(seed), 23)), tlsRoutes: true}
				actual, desired := g.history(caps), g.desired()
				checkPlan(t, fmt.Sprintf("with TLSRoutes, seed %d", seed), actual, desired, caps)
				for _, op := range Compute(actual, desired, caps).Ops {
					if op.Map != dcm.MapGateway {
						continue
					}
					for _, e := range append(op.Set, op.Del...) {
						if e.Key == tlsBind {
							passthrough++
						}
					}
				}
			}
			if caps.Pooled() && caps.RuntimeCerts && passthrough < 20 {
				t.Errorf("%d changes of a TLS bind's passthrough mark in 400 plans, want 20 or more", passthrough)
			}
			// The generator's histories move routes between spares (129
			// and 392 backends of the 400 plans, in the modes with runtime
			// certificates).
			if caps.Pooled() && caps.StickyPool > 0 && caps.RuntimeCerts && moves < 50 {
				t.Errorf("%d backends moved away from in 400 plans, want 50 or more", moves)
			}
		})
	}
}

// checkPlan asserts the planner contract (DESIGN.md §4) for one input: the
// ops applied to actual give Next (servers per HAProxy backend and the maps),
// free spares exist and are empty, Next serves exactly what is desired,
// Compute(Next) is empty, equal input gives equal output down to the JSON
// bytes, no op touches a backend that needs nothing, and reloads happen only
// for what HAProxy cannot do at runtime.
func checkPlan(t *testing.T, what string, actual dcm.State, desired dcm.Desired, caps dcm.Caps) {
	t.Helper()
	untouched := inputsKept(actual, desired)
	p := Compute(actual, desired, caps)
	// Compute shares backends with its inputs and must never write them.
	if err := untouched(); err != nil {
		t.Fatalf("%s: Compute modified its input: %v", what, err)
	}

	// Applying the ops yields Next: the same servers in every
	// HAProxy backend and the same maps, in the renderer's order.
	base := DataPlaneOf(actual)
	if p.Reload {
		base = DataPlaneOf(AfterReload(p.Next))
	}
	got, err := Apply(base, p.Ops)
	if err != nil {
		t.Fatalf("%s: ops do not apply: %v", what, err)
	}
	want := DataPlaneOf(p.Next)
	if !reflect.DeepEqual(serversOf(got), serversOf(want)) {
		t.Fatalf("%s: apply(ops) != next\ngot  %+v\nnext %+v", what, got, p.Next)
	}
	if !reflect.DeepEqual(got.Maps, want.Maps) {
		for _, m := range dcm.MapTables {
			if !reflect.DeepEqual(got.Maps[m], want.Maps[m]) {
				t.Logf("%s: map %s\ngot  %+v\nnext %+v", what, m, got.Maps[m], want.Maps[m])
			}
		}
		t.Fatalf("%s: maps after ops != maps of next\ngot  %+v\nnext %+v\nops %v", what, got.Maps, want.Maps, opStrings(p.Ops))
	}
	if !reflect.DeepEqual(got.Certs, want.Certs) {
		t.Fatalf("%s: certificates after ops != certificates of next\ngot  %+v\nnext %+v\nops %v", what, got.Certs, want.Certs, opStrings(p.Ops))
	}
	if !reflect.DeepEqual(got.CAs, want.CAs) {
		t.Fatalf("%s: CA files after ops != CA files of next\ngot  %+v\nnext %+v\nops %v", what, got.CAs, want.CAs, opStrings(p.Ops))
	}
	if !caps.RuntimeCerts && slices.ContainsFunc(p.Ops, IsCertOp) {
		t.Fatalf("%s: certificate ops without runtime certificates: %v", what, opStrings(p.Ops))
	}
	// Every free spare exists in HAProxy and is empty.
	for _, name := range p.Next.Pool {
		if servers, ok := got.Servers[name]; !ok || len(servers) > 0 {
			t.Fatalf("%s: free spare %s missing or not empty: %v", what, name, servers)
		}
	}
	// Next serves exactly what is desired.
	servesDesired(t, p.Next, desired)
	// Idempotent.
	if again := Compute(p.Next, desired, caps); !again.Empty() {
		t.Fatalf("%s: compute(next) not empty: %+v", what, again.Ops)
	}
	// Deterministic, down to the JSON bytes.
	a, _ := json.Marshal(p)
	b, _ := json.Marshal(Compute(actual, desired, caps))
	if string(a) != string(b) {
		t.Fatalf("%s: two computes differ", what)
	}
	// Only backends that need a change are touched.
	if !p.Reload {
		for _, op := range p.Ops {
			ab, inActual := actual.Backend(op.Backend)
			db, inDesired := desired.Backend(op.Backend)
			if op.Kind == dcm.OpMapReplace || !inActual || !inDesired || ab.Retiring {
				continue // a route that comes or goes: it needs its ops
			}
			if relistedForH2(actual, p.Next, op) {
				continue // another host started or stopped sharing its certificate
			}
			alone := Compute(dcm.State{Backends: []*dcm.Backend{ab}}, dcm.Desired{Backends: []*dcm.DesiredBackend{db}}, caps)
			if alone.Empty() {
				t.Fatalf("%s: op %s touches a backend that needs nothing", what, op)
			}
		}
	}
	reasons := checkGatewayBinds(t, what, actual, desired, caps, p)
	// A passthrough route's timeouts are in its TCP backend: they reload
	// when they move, and only then.
	if slices.Contains(p.Reasons, dcm.ReasonPassthroughTimeout) {
		if !tcpTimeoutsMoved(actual, desired) {
			t.Fatalf("%s: reloaded for passthrough-timeout, and no passthrough timeout moved", what)
		}
		reasons = slices.DeleteFunc(slices.Clone(reasons), func(r dcm.ReloadReason) bool { return r == dcm.ReasonPassthroughTimeout })
	}
	if caps.Mode == dcm.ModeDynamic && caps.AddServer && caps.Pool == 0 && p.Reload {
		for _, r := range reasons {
			if r != dcm.ReasonRouteAdded && r != dcm.ReasonRouteRemoved && r != dcm.ReasonRouteChanged {
				t.Fatalf("%s: dynamic mode reloaded for %s", what, r)
			}
		}
	}
	// A route whose stickiness or checks move it cannot move to a spare
	// when no spare renders like its backend: its TCP timeouts.
	if slices.Contains(reasons, dcm.ReasonRouteChanged) && caps.Pooled() && unmovable(actual, desired) {
		reasons = slices.DeleteFunc(slices.Clone(reasons), func(r dcm.ReloadReason) bool { return r == dcm.ReasonRouteChanged })
	}
	// With a pool, routes come, go and change paths without a
	// reload while the pool lasts; only an empty pool reloads.
	if caps.Pooled() && caps.RuntimeCerts && len(reasons) > 0 {
		if p.Reload && !slices.Equal(reasons, []dcm.ReloadReason{dcm.ReasonPoolExhausted}) {
			t.Fatalf("%s: pooled mode reloaded for %v", what, p.Reasons)
		}
		if p.Reload && !outgrowsPool(actual, desired) {
			t.Fatalf("%s: reloaded for new routes %v with spares %v free", what, newRoutes(actual, desired), actual.Pool)
		}
	}
}

// relistedForH2 reports whether op lists a host's certificate again only
// because its HTTP/2 offer moved (dcm.Cert.H2): the same certificate, now
// served for another host too, or no longer. Another route's change is
// what moved it.
func relistedForH2(actual, next dcm.State, op dcm.Op) bool {
	if op.Cert == nil || op.Kind != dcm.OpCertAdd && op.Kind != dcm.OpCertDel {
		return false
	}
	find := func(st dcm.State) (dcm.Cert, bool) {
		for _, c := range dcm.CertsOf(st.Backends) {
			if c.Host == op.Cert.Host {
				return c, true
			}
		}
		return dcm.Cert{}, false
	}
	before, ok1 := find(actual)
	after, ok2 := find(next)
	moved := before.H2 != after.H2
	before.H2 = after.H2
	return ok1 && ok2 && moved && before == after
}

// inputsKept copies what a state and a desired state hold behind their
// pointers, and returns a check that they still hold it.
func inputsKept(st dcm.State, d dcm.Desired) func() error {
	backends := make([]dcm.Backend, len(st.Backends))
	for i, b := range st.Backends {
		backends[i] = *b
		backends[i].Servers = slices.Clone(b.Servers)
	}
	desired := make([]dcm.DesiredBackend, len(d.Backends))
	for i, b := range d.Backends {
		desired[i] = *b
		desired[i].Endpoints = slices.Clone(b.Endpoints)
	}
	return func() error {
		for i, b := range st.Backends {
			o := backends[i]
			if b.Name != o.Name || b.Kind != o.Kind || b.Slot != o.Slot || b.Retiring != o.Retiring || b.Slots != o.Slots ||
				!b.Route.Equal(o.Route) || !slices.Equal(b.Servers, o.Servers) {
				return fmt.Errorf("backend %s", o.Name)
			}
		}
		for i, b := range d.Backends {
			o := desired[i]
			if b.Name != o.Name || !b.Route.Equal(o.Route) || !slices.Equal(b.Endpoints, o.Endpoints) {
				return fmt.Errorf("desired backend %s", o.Name)
			}
		}
		return nil
	}
}

// tcpTimeoutsMoved reports whether a passthrough route's timeouts differ
// between st (retiring backends too: theirs are rendered) and d, or a
// route new to st has some.
func tcpTimeoutsMoved(st dcm.State, d dcm.Desired) bool {
	for _, db := range d.Backends {
		s, tu := db.Route.TCPTimeouts()
		b, ok := st.Backend(db.Name)
		if !ok {
			if s != 0 || tu != 0 {
				return true
			}
			continue
		}
		if as, at := b.Route.TCPTimeouts(); as != s || at != tu {
			return true
		}
	}
	return false
}

// movedBackends counts the backends of st that a route moved away from.
func movedBackends(st dcm.State) int {
	n := 0
	for _, b := range st.Backends {
		if b.Slot != "" && b.Name == dcm.MovedName(b.Slot) {
			n++
		}
	}
	return n
}

// unmovable reports whether a route of d would move to a spare (its
// stickiness or checks changed) that no spare can carry: one with TCP
// timeouts, which spares do not have.
func unmovable(st dcm.State, d dcm.Desired) bool {
	for _, db := range d.Backends {
		b, ok := st.Backend(db.Name)
		if !ok || b.Route.Sticky == db.Route.Sticky && b.Route.Check == db.Route.Check {
			continue
		}
		if s, tu := db.Route.TCPTimeouts(); s != 0 || tu != 0 {
			return true
		}
	}
	return false
}

// newRoutes counts the routes of d that st lacks, and those that move to
// another spare (stickiness or health checks turned on or off), by the
// kind of spare they take.
func newRoutes(st dcm.State, d dcm.Desired) map[dcm.RouteKind]int {
	n := map[dcm.RouteKind]int{}
	for _, db := range d.Backends {
		if b, ok := st.Backend(db.Name); !ok || b.Route.Sticky != db.Route.Sticky || b.Route.Check != db.Route.Check {
			k := routing.PoolKind(db.Route.Kind)
			if db.Route.Sticky {
				k = routing.PoolSticky
			}
			n[k]++
		}
	}
	return n
}

// outgrowsPool reports whether the new routes of d outnumber the free
// spares of their kind in st.
func outgrowsPool(st dcm.State, d dcm.Desired) bool {
	free := map[dcm.RouteKind]int{}
	for _, name := range st.Pool {
		if k, ok := routing.SpareKind(name); ok {
			free[k]++
		}
	}
	for k, n := range newRoutes(st, d) {
		if n > free[k] {
			return true
		}
	}
	return false
}

// TestConverges: with HAProxy reporting idle servers, repeated syncs reach a
// state with no server left over, each sync's plan keeping the contract
// (checkPlan): a retiring backend, its servers deleted one sync and
// released the next, takes its map entries with it.
func TestConverges(t *testing.T) {
	for _, caps := range modes() {
		for seed := range 100 {
			g := gen{r: rand.New(rand.NewPCG(uint64(seed), 11))}
			st := g.history(caps)
			desired := g.desired()
			for round := 0; ; round++ {
				if round > 4 {
					t.Fatalf("%s seed %d: no fixed point after %d rounds", caps.Mode, seed, round)
				}
				checkPlan(t, fmt.Sprintf("%s seed %d round %d", caps.Mode, seed, round), st, desired, caps)
				p := Compute(st, desired, caps)
				if p.Empty() && p.Waiting == 0 {
					break
				}
				st = idle(p.Next)
			}
			if caps.Mode == dcm.ModeDynamic {
				for _, b := range st.Backends {
					db, _ := desired.Backend(b.Name)
					if len(b.Servers) != len(db.Endpoints) {
						t.Fatalf("seed %d: %s keeps %d servers for %d endpoints", seed, b.Name, len(b.Servers), len(db.Endpoints))
					}
				}
			}
		}
	}
}
