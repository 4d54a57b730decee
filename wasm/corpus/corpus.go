// Package corpus generates the scenarios of the what-if planner's parity
// tests: the same JSON text goes through the native bridge (Expected) and
// through the WebAssembly build (wasm/testdata/parity.js, in node and in
// Chromium), and the answers must be byte-identical.
//
// A scenario is JSON text only, never Go values, so both sides read the very
// same bytes: a compute input, a snapshot with what-ifs for simulateOn, and
// for some a "follow" sequence of calls to the stateful planner (feed
// messages, load, simulate, seq). Scenario i depends only on the seed and i.
package corpus

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/plan"
	"github.com/dcm-router/dcm/wasm/bridge"
)

// Scenario is one parity case. Every field is JSON text handed to the
// planner as is.
type Scenario struct {
	Name string `json:"name"`
	// Compute is a bridge.ComputeInput: {actual, desired, caps}.
	Compute string `json:"compute"`
	// Snapshot and WhatIfs go to simulateOn.
	Snapshot string `json:"snapshot"`
	WhatIfs  string `json:"whatifs"`
	// Follow drives the stateful planner (dcmPlanner.feed/load/simulate/seq)
	// in order. It starts with a snapshot feed message, which replaces
	// whatever an earlier scenario left in the planner, so a scenario gives
	// the same answers on a fresh planner and on one shared by the corpus.
	Follow []Call `json:"follow,omitempty"`
}

// Call is one call of the stateful planner.
type Call struct {
	Fn  string `json:"fn"` // one of FnFeed, FnLoad, FnSimulate, FnSeq
	Arg string `json:"arg,omitempty"`
}

// The stateful planner's functions, as dcmPlanner names them.
const (
	FnFeed     = "feed"
	FnLoad     = "load"
	FnSimulate = "simulate"
	FnSeq      = "seq"
)

// Expected runs a scenario through the native bridge and returns what
// parity.js returns for it from the WebAssembly build: one line per call,
// "<fn> <answer>", joined by "\n" — compute, simulateOn, then the follow
// calls. An answer is the JSON text returned, "error: <message>" for a
// failure ({error} in JavaScript), or the number seq returns in decimal.
// The error is for what JavaScript cannot answer: a panic, an unknown call.
func Expected(s Scenario) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("scenario %s: the native planner panicked: %v", s.Name, r)
		}
	}()
	costs := dcm.HAProxy26MemoryCosts()
	lines := make([]string, 0, 2+len(s.Follow))
	lines = append(lines, "compute "+answer(bridge.Compute([]byte(s.Compute))))
	lines = append(lines, "simulateOn "+answer(bridge.SimulateOn([]byte(s.Snapshot), []byte(s.WhatIfs), costs)))
	p := bridge.New(costs)
	for _, c := range s.Follow {
		switch c.Fn {
		case FnFeed:
			lines = append(lines, c.Fn+" "+answer(marshal(p.Feed([]byte(c.Arg)))))
		case FnLoad:
			lines = append(lines, c.Fn+" "+answer(marshal(p.Load([]byte(c.Arg)))))
		case FnSimulate:
			lines = append(lines, c.Fn+" "+answer(p.Simulate([]byte(c.Arg))))
		case FnSeq:
			lines = append(lines, c.Fn+" "+strconv.FormatUint(p.Seq(), 10))
		default:
			return "", fmt.Errorf("scenario %s: unknown call %q", s.Name, c.Fn)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// answer is one answer as parity.js writes it.
func answer(out []byte, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return string(out)
}

// marshal is what the wasm main does with a FeedResult.
func marshal(r bridge.FeedResult, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// Generate returns n scenarios drawn from seed. Most are small (a handful of
// routes and pods); every 100th is medium (30 routes, up to 16 pods a
// workload) and every 250th large (200 routes). Every 20th is about
// certificates: most routes terminate TLS, some share a Secret, modes with
// and without runtime certificates, and half the what-ifs rotate one. About
// a quarter carry a follow sequence; a few carry malformed JSON on purpose.
func Generate(n int, seed uint64) []Scenario {
	out := make([]Scenario, n)
	for i := range out {
		g := &gen{r: rand.New(rand.NewPCG(seed, uint64(i)))}
		out[i] = g.scenario(i)
	}
	return out
}

// Encode is the corpus as the JavaScript drivers read it: a JSON array of
// scenarios.
func Encode(scenarios []Scenario) ([]byte, error) {
	return json.Marshal(scenarios)
}

// Summary describes a corpus: sizes, modes and what it exercises.
func Summary(scenarios []Scenario) string {
	var bytes, follow, calls, largest int
	modes, computeModes := map[string]int{}, map[string]int{}
	kinds := map[string]int{}
	events := map[string]int{}
	malformed := 0
	for _, s := range scenarios {
		size := len(s.Compute) + len(s.Snapshot) + len(s.WhatIfs)
		for _, c := range s.Follow {
			size += len(c.Arg)
		}
		bytes += size
		largest = max(largest, size)
		var snap struct {
			Caps dcm.Caps `json:"caps"`
		}
		if json.Unmarshal([]byte(s.Snapshot), &snap) != nil {
			malformed++
		} else {
			modes[modeName(snap.Caps)]++
		}
		var in struct {
			Caps dcm.Caps `json:"caps"`
		}
		if json.Unmarshal([]byte(s.Compute), &in) != nil {
			malformed++
		} else {
			computeModes[modeName(in.Caps)]++
		}
		countKinds := func(text string) {
			var ws []struct{ Kind string }
			if json.Unmarshal([]byte(text), &ws) != nil {
				malformed++
			}
			for _, w := range ws {
				kinds[w.Kind]++
			}
		}
		countKinds(s.WhatIfs)
		if len(s.Follow) > 0 {
			follow++
		}
		for _, c := range s.Follow {
			calls++
			switch c.Fn {
			case FnSimulate:
				countKinds(c.Arg)
			case FnFeed:
				var m struct {
					Type  string
					Event *struct{ Type string }
				}
				if json.Unmarshal([]byte(c.Arg), &m) != nil {
					events["malformed"]++
				} else if m.Event != nil {
					events["event:"+m.Event.Type]++
				} else {
					events[m.Type]++
				}
			}
		}
	}
	return fmt.Sprintf("%d scenarios, %.1f MB of input JSON (largest %d KB); compute modes %s; snapshot modes %s; what-ifs %s; "+
		"%d follow sequences (%d calls; feed %s); %d malformed inputs on purpose",
		len(scenarios), float64(bytes)/1e6, largest/1000, counts(computeModes), counts(modes), counts(kinds), follow, calls, counts(events), malformed)
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := k
		if name == "" {
			name = `""`
		}
		parts[i] = name + "=" + strconv.Itoa(m[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func modeName(c dcm.Caps) string {
	switch c.Mode {
	case dcm.ModeDynamic:
		name := "dynamic-noadd"
		if c.AddServer {
			name = "dynamic"
		}
		if c.RuntimeCerts {
			name += "-certs"
		}
		return name
	case dcm.ModeSlots:
		return "slots" + strconv.Itoa(c.Slots)
	}
	return string(c.Mode)
}

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

// workload is a Deployment or StatefulSet with its Service and the pods it
// may have (not all of them exist at any one time).
type workload struct {
	ns       string
	ref      dcm.WorkloadRef
	svc      string
	portName string
	port     int
	pods     []string
	addrs    []string
}

// cluster is the Kubernetes a scenario is drawn from.
type cluster struct {
	workloads []*workload
	routes    []dcm.Route
	behind    []*workload // the workload behind routes[i]
	// known says whether routes[i] names its workload (Route.Workload set).
	known []bool
}

type gen struct {
	r    *rand.Rand
	addr int
	// tls draws a scenario about certificates (it draws more than the
	// others, so it is decided before the first draw).
	tls bool
}

var namespaces = []string{"default", "shop", "team-a", "demo", "payments"}
var wlNames = []string{"web", "api", "cart", "search", "auth", "media", "db-proxy", "worker", "front", "admin"}
var balances = []string{dcm.BalanceRoundRobin, dcm.BalanceRoundRobin, dcm.BalanceLeastConn, dcm.BalanceRandom, dcm.BalanceFirst}

const alnum = "bcdfghjklmnpqrstvwxz2456789"

func (g *gen) word(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[g.r.IntN(len(alnum))]
	}
	return string(b)
}

func (g *gen) pick(s []string) string { return s[g.r.IntN(len(s))] }

// pickBy picks by a hash of key, not from the generator: a choice added
// this way leaves every other draw of the corpus as it was.
func pickBy(key string, s []string) string {
	h := fnv.New32a()
	h.Write([]byte(key))
	return s[h.Sum32()%uint32(len(s))]
}

func (g *gen) nextAddr() string {
	g.addr++
	k := g.addr
	if g.r.IntN(40) == 0 {
		return fmt.Sprintf("fd00::%x:%x", k>>8, k&255) // some clusters are IPv6
	}
	return fmt.Sprintf("10.%d.%d.%d", 1+(k>>16)&127, (k>>8)&255, k&255)
}

// newCluster draws routes over workloads.
func (g *gen) newCluster(routes, maxPods int) *cluster {
	c := &cluster{}
	nns := 1 + g.r.IntN(3)
	nwl := 1 + g.r.IntN(max(1, routes*3/4))
	for w := range nwl {
		wl := &workload{ns: namespaces[g.r.IntN(nns)], port: 8080, portName: "http"}
		name := wlNames[w%len(wlNames)]
		if w >= len(wlNames) {
			name += "-" + strconv.Itoa(w/len(wlNames))
		}
		wl.svc = name
		switch g.r.IntN(6) {
		case 0:
			wl.port, wl.portName = 3000, "web"
		case 1:
			wl.port, wl.portName = 9443, "https-alt"
		}
		npods := 1 + g.r.IntN(maxPods)
		if g.r.IntN(5) == 0 {
			wl.ref = dcm.WorkloadRef{Kind: "StatefulSet", Name: name}
			for p := range npods {
				wl.pods = append(wl.pods, name+"-"+strconv.Itoa(p))
			}
		} else {
			wl.ref = dcm.WorkloadRef{Kind: "Deployment", Name: name}
			rs := g.word(9)
			for range npods {
				wl.pods = append(wl.pods, name+"-"+rs+"-"+g.word(5))
			}
		}
		for range wl.pods {
			wl.addrs = append(wl.addrs, g.nextAddr())
		}
		c.workloads = append(c.workloads, wl)
	}
	secrets := map[string]*dcm.TLSRef{} // a namespace's last Secret, to share
	for i := range routes {
		wl := c.workloads[g.r.IntN(len(c.workloads))]
		if i < len(c.workloads) {
			wl = c.workloads[i] // every workload is behind a route
		}
		r := dcm.Route{
			Namespace: wl.ns, Name: fmt.Sprintf("%s-r%d", wl.svc, i), Source: dcm.SourceIngress, Kind: dcm.KindHTTP,
			Host: fmt.Sprintf("%s%d.%s.example.com", wl.svc, i, wl.ns), Path: "/", PathType: dcm.PathPrefix,
			Services: []dcm.ServiceRef{{Name: wl.svc, Port: wl.portName, Weight: 100}},
			Balance:  g.pick(balances), Check: g.r.IntN(2) == 0,
		}
		r.Object = r.Name
		kind := g.r.IntN(10)
		if g.tls && kind >= 5 {
			kind = 0 // most routes terminate TLS
		}
		switch kind {
		case 0:
			// An edge route, its certificate valid or not (yet).
			r.Kind = dcm.KindEdge
			r.TLS = &dcm.TLSRef{Secret: wl.ns + "/" + r.Name + "-tls", Version: g.pick([]string{"", "0a1b2c", "3d4e5f"})}
			if g.tls {
				// Mostly valid, and one Secret for two hosts now and then.
				if shared := secrets[wl.ns]; shared != nil && g.r.IntN(3) == 0 {
					r.TLS = shared
				} else if g.r.IntN(5) != 0 {
					r.TLS.Version = g.pick([]string{"0a1b2c", "3d4e5f", "7e8f90"})
				}
				secrets[wl.ns] = r.TLS
			}
			// What plain HTTP gets: the insecure maps, and the empty
			// policy of an older snapshot.
			r.Insecure = dcm.InsecurePolicy(pickBy(r.Name, []string{"", "Allow", "Redirect", "None"}))
		case 1:
			r.Source, r.Kind = dcm.SourceRoute, dcm.KindPassthrough
			r.Insecure = dcm.InsecurePolicy(pickBy(r.Name, []string{"", "Redirect", "None"}))
		case 2:
			r.Host = "" // any host
		case 3:
			// A reencrypt route: the client's TLS ends in HAProxy, which
			// connects to the pods over TLS, verifying them.
			r.Kind = dcm.KindReencrypt
			r.TLS = &dcm.TLSRef{Secret: wl.ns + "/" + r.Name + "-tls", Version: "0a1b2c"}
			r.Upstream = &dcm.UpstreamTLS{CA: "secret:" + wl.ns + "/" + r.Name + "-ca", Version: "6a7b8c", ServerName: wl.svc + "." + wl.ns + ".svc"}
		}
		if g.r.IntN(4) == 0 {
			r.Path, r.PathType = "/"+g.pick([]string{"api", "v1/items", "static", "login"}), dcm.PathType(g.pick([]string{"Prefix", "Exact"}))
		}
		known := g.r.IntN(10) != 0
		if known {
			ref := wl.ref
			r.Workload = &ref
		}
		c.routes = append(c.routes, r)
		c.behind = append(c.behind, wl)
		c.known = append(c.known, known)
	}
	return c
}

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
			})
		}
		slices.SortFunc(b.Endpoints, func(x, y dcm.Endpoint) int { return strings.Compare(x.Name, y.Name) })
		d.Backends = append(d.Backends, b)
	}
	slices.SortFunc(d.Backends, func(x, y dcm.DesiredBackend) int { return strings.Compare(x.Name, y.Name) })
	return d
}

var healthOf = map[dcm.AdminState][]string{
	dcm.StateReady: {"UP", "UP", "UP", "DOWN", "UP 1/3"},
	dcm.StateDrain: {"DRAIN", "NOLB"},
	dcm.StateMaint: {"MAINT", "MAINT (resolution)"},
}

// observe plays HAProxy reporting on a state: traffic on some servers,
// health, and most servers observed since dcm last changed them.
func (g *gen) observe(st dcm.State) dcm.State {
	out := dcm.State{Backends: slices.Clone(st.Backends), Pool: st.Pool}
	for i, b := range out.Backends {
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
		out.Backends[i] = b
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
func markRetired(backends []dcm.Backend, d dcm.Desired) []dcm.Backend {
	out := slices.Clone(backends)
	for i, b := range out {
		db, ok := d.Backend(b.Name)
		b.Servers = slices.Clone(b.Servers)
		for k, s := range b.Servers {
			b.Servers[k].Retired = s.Endpoint != "" && (!ok || !slices.ContainsFunc(db.Endpoints, func(e dcm.Endpoint) bool { return e.Name == s.Endpoint }))
		}
		out[i] = b
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

// scenario draws scenario i.
func (g *gen) scenario(i int) Scenario {
	routes, maxPods, size := 1+g.r.IntN(4), 6, "small"
	switch {
	case i%250 == 249:
		routes, maxPods, size = 200, 4, "large"
	case i%100 == 50:
		routes, maxPods, size = 30, 16, "medium"
	}
	g.tls = size == "small" && i%20 == 13
	c := g.newCluster(routes, maxPods)
	s := Scenario{}

	// compute: a random history against a new desire, in any mode.
	ccaps := g.caps()
	actual, _ := g.history(c, ccaps)
	switch g.r.IntN(40) {
	case 0:
		actual = dcm.State{} // nothing rendered yet: backends null
	case 1:
		actual = dcm.State{Backends: []dcm.Backend{}}
	}
	s.Compute = text(bridge.ComputeInput{Actual: actual, Desired: g.desired(c), Caps: ccaps})

	// simulateOn: a snapshot (its own history and mode) and what-ifs.
	caps := g.caps()
	if g.r.IntN(2) == 0 {
		caps = ccaps
	}
	st, d := g.history(c, caps)
	follow := g.r.IntN(4) == 0 || size == "large" || size == "medium" && i%200 == 50
	seq := uint64(1 + g.r.IntN(1_000_000))
	if !follow && g.r.IntN(50) == 0 {
		// Beyond JavaScript's exact integers: only JSON carries it (seq(),
		// a number, would round it, so no follow sequence has one).
		seq = 1<<62 + uint64(g.r.IntN(1000))
	}
	snap := g.snapshot(seq, caps, st, d)
	s.Snapshot = text(snap)
	s.WhatIfs = text(g.whatifs(c, d))

	// A few inputs are broken on purpose: the error text must match too.
	switch g.r.IntN(60) {
	case 0:
		s.Compute = g.pick([]string{`{"actual":5}`, `not json`, `{"caps":{"mode":7}}`, ``, `{"desired":{"backends":[{"endpoints":[{"port":"80"}]}]}}`})
	case 1:
		s.Snapshot = g.pick([]string{`{"seq":-1}`, `[`, `{"backends":{}}`, `null`})
	case 2:
		s.WhatIfs = g.pick([]string{`{}`, `[{"kind":"scale","replicas":"3"}]`, `[1,2]`, `null`, `[]`})
	}

	name := fmt.Sprintf("%04d-%s-%s-%s", i, size, modeName(ccaps), modeName(caps))
	if g.tls {
		name += "-tls"
	}
	if follow {
		s.Follow = g.follow(c, caps, st, d, snap)
		name += "-follow"
	}
	s.Name = name
	return s
}

// text is the JSON of a value; generated text must be valid UTF-8, or the
// JSON of the corpus would not carry it byte for byte.
func text(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	if !utf8.Valid(b) {
		panic("corpus: generated JSON is not UTF-8")
	}
	return string(b)
}

// whatifs draws one to four what-ifs against the cluster at desired d.
func (g *gen) whatifs(c *cluster, d dcm.Desired) []dcm.WhatIf {
	n := 1 + g.r.IntN(4)
	ws := make([]dcm.WhatIf, 0, n)
	for range n {
		ws = append(ws, g.whatif(c, d, len(ws)))
	}
	return ws
}

// replicas counts a workload's pods that are not terminating, as the
// simulator does.
func replicas(d dcm.Desired, c *cluster, wl *workload) int {
	pods := map[string]bool{}
	for _, b := range d.Backends {
		for i, r := range c.routes {
			if c.behind[i] != wl || !c.known[i] || r.BackendName() != b.Name {
				continue
			}
			for _, e := range b.Endpoints {
				if e.State != dcm.StateDrain {
					pods[e.Pod] = true
				}
			}
		}
	}
	return len(pods)
}

func (g *gen) whatif(c *cluster, d dcm.Desired, k int) dcm.WhatIf {
	wl := c.workloads[g.r.IntN(len(c.workloads))]
	if g.tls && g.r.IntN(2) == 0 {
		return g.rotate(d, wl)
	}
	switch n := g.r.IntN(24); {
	case n < 9: // scale a workload that exists
		ref := wl.ref
		if g.r.IntN(6) == 0 {
			ref.Kind = strings.ToLower(ref.Kind) // kinds match case-insensitively
		}
		cur := replicas(d, c, wl)
		to := []int{0, max(cur-1, 0), cur + 1, cur + 2, cur, g.r.IntN(10), cur + 5}[g.r.IntN(7)]
		return dcm.WhatIf{Kind: dcm.WhatIfScale, Namespace: wl.ns, Workload: &ref, Replicas: to}
	case n < 10: // scale what cannot be scaled
		switch g.r.IntN(4) {
		case 0:
			return dcm.WhatIf{Kind: dcm.WhatIfScale, Namespace: wl.ns, Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: "ghost"}, Replicas: 2}
		case 1:
			return dcm.WhatIf{Kind: dcm.WhatIfScale, Namespace: "elsewhere", Workload: &wl.ref, Replicas: 1}
		case 2:
			return dcm.WhatIf{Kind: dcm.WhatIfScale, Namespace: wl.ns, Replicas: 3}
		}
		return dcm.WhatIf{Kind: dcm.WhatIfScale, Namespace: wl.ns, Workload: &wl.ref, Replicas: -1}
	case n < 13: // delete a pod
		var pods [][2]string
		for _, b := range d.Backends {
			for _, e := range b.Endpoints {
				pods = append(pods, [2]string{b.Route.Namespace, e.Pod})
			}
		}
		if len(pods) == 0 || g.r.IntN(8) == 0 {
			return dcm.WhatIf{Kind: dcm.WhatIfDeletePod, Namespace: wl.ns, Pod: wl.svc + "-gone-" + g.word(5)}
		}
		p := pods[g.r.IntN(len(pods))]
		return dcm.WhatIf{Kind: dcm.WhatIfDeletePod, Namespace: p[0], Pod: p[1]}
	case n < 17: // a new route
		r := dcm.Route{Namespace: wl.ns, Name: fmt.Sprintf("added-%d", k), Source: dcm.SourceIngress, Kind: dcm.KindHTTP,
			Host: fmt.Sprintf("new%d.%s.example.com", k, wl.ns), Path: "/", PathType: dcm.PathPrefix,
			Balance: g.pick(balances), Check: g.r.IntN(2) == 0}
		r.Object = r.Name
		switch g.r.IntN(4) {
		case 0: // to no service yet
		case 1: // to a service no route reaches
			r.Services = []dcm.ServiceRef{{Name: "lonely", Port: "http", Weight: 100}}
		default: // to a workload's service: it gets its endpoints
			r.Services = []dcm.ServiceRef{{Name: wl.svc, Port: wl.portName, Weight: 100}}
			ref := wl.ref
			r.Workload = &ref
		}
		if g.r.IntN(3) == 0 {
			r.Host, r.Path, r.PathType = "", "/new/"+g.word(4), dcm.PathExact
		} else if k%3 == 1 {
			// An edge route whose plain HTTP is redirected: an insecure
			// map's entry comes with it.
			r.Kind, r.Insecure = dcm.KindEdge, dcm.InsecureRedirect
			r.TLS = &dcm.TLSRef{Secret: wl.ns + "/" + r.Name + "-tls", Version: "0a1b2c"}
			if k%2 == 0 {
				r.RedirectCode = 301
			}
		}
		return dcm.WhatIf{Kind: dcm.WhatIfAddRoute, Route: &r}
	case n < 19: // a route that cannot be added
		r := dcm.Route{Namespace: wl.ns, Name: "bad", Source: dcm.SourceIngress, Kind: dcm.KindHTTP,
			Host: "bad.example.com", Path: "/", PathType: dcm.PathPrefix, Balance: dcm.BalanceRoundRobin}
		switch g.r.IntN(10) {
		case 0:
			r.Kind = dcm.KindEdge
		case 1:
			r.Host = "Bad_Host.example"
		case 2:
			r.Host = "hé.example.com" // not ASCII: UTF-8 crosses into JavaScript and back
		case 3:
			r.Path = "no-slash"
		case 4:
			r.Path = "/with space/ünï"
		case 5:
			r.PathType = "ImplementationSpecific"
		case 6:
			r.Balance = "source"
		case 7:
			r.Namespace = "Team_A"
		case 8:
			if len(d.Backends) > 0 { // exists already
				r = d.Backends[g.r.IntN(len(d.Backends))].Route
				if r.Kind != dcm.KindHTTP {
					r.Host = "*.wild.example" // wildcards are not supported
				}
				break
			}
			r.Name = ""
		default:
			return dcm.WhatIf{Kind: dcm.WhatIfAddRoute}
		}
		return dcm.WhatIf{Kind: dcm.WhatIfAddRoute, Route: &r}
	case n < 22: // delete a route
		if len(d.Backends) == 0 || g.r.IntN(6) == 0 {
			return dcm.WhatIf{Kind: dcm.WhatIfDeleteRoute, Backend: "be_http:" + wl.ns + ":never-was"}
		}
		return dcm.WhatIf{Kind: dcm.WhatIfDeleteRoute, Backend: d.Backends[g.r.IntN(len(d.Backends))].Name}
	}
	if g.r.IntN(2) == 0 {
		return g.rotate(d, wl)
	}
	return dcm.WhatIf{Kind: dcm.WhatIfKind(g.pick([]string{"rotate-cert", "", "Scale"})), Namespace: wl.ns}
}

// rotate rotates the certificate of an edge route's Secret, or of one none
// uses.
func (g *gen) rotate(d dcm.Desired, wl *workload) dcm.WhatIf {
	for _, i := range g.r.Perm(len(d.Backends)) {
		if tls := d.Backends[i].Route.TLS; tls != nil {
			return dcm.WhatIf{Kind: dcm.WhatIfRotateCert, Namespace: wl.ns, Secret: tls.Secret}
		}
	}
	return dcm.WhatIf{Kind: dcm.WhatIfRotateCert, Namespace: wl.ns, Secret: g.pick([]string{wl.ns + "/nobody-tls", "bad", ""})}
}

// feedMessage is one raw message of GET /api/v1/feed.
func feedMessage(m dcm.FeedMessage) Call { return Call{Fn: FnFeed, Arg: text(m)} }

func eventMessage(ev dcm.Event) Call {
	return feedMessage(dcm.FeedMessage{Type: dcm.FeedTypeEvent, Seq: ev.Seq, Event: &ev})
}

// follow is the browser's planner following the feed: the snapshot, events
// (applied and observed ones carry state; a reload, a gap, others and old
// news do not), a fresh snapshot by load, with previews in between.
func (g *gen) follow(c *cluster, caps dcm.Caps, st dcm.State, d dcm.Desired, snap dcm.Snapshot) []Call {
	seq := snap.Seq
	calls := []Call{
		feedMessage(dcm.FeedMessage{Type: dcm.FeedTypeSnapshot, Seq: seq, Snapshot: &snap}),
		{Fn: FnSeq},
		{Fn: FnSimulate, Arg: text(g.whatifs(c, d))},
	}
	at := base
	event := func(t dcm.EventType) dcm.Event {
		seq++
		at = at.Add(time.Duration(1+g.r.IntN(5000)) * time.Millisecond)
		return dcm.Event{Seq: seq, Time: at, Type: t}
	}
	for range 2 + g.r.IntN(5) {
		switch n := g.r.IntN(20); {
		case n < 7: // a sync: applied ops, or a reload when the plan needs one
			nd := g.desiredChurn(c, g.r.IntN(5) == 0)
			p := plan.Compute(g.observe(st), nd, caps)
			if p.Reload {
				ev := event(dcm.EventReload)
				ev.Message = "reloaded"
				ev.Reload = &dcm.ReloadInfo{Time: at, Reasons: p.Reasons, Duration: 0.02, OldPID: 1000, NewPID: 1001}
				calls = append(calls, eventMessage(ev))
			} else if len(p.Ops) > 0 {
				var touched []string
				for _, o := range p.Ops {
					touched = append(touched, o.Backend)
				}
				slices.Sort(touched)
				touched = slices.Compact(touched)
				ev := event(dcm.EventApplied)
				ev.Message = fmt.Sprintf("%d runtime commands applied", len(p.Ops))
				ev.Ops, ev.Backends = p.Ops, touched
				for _, name := range touched {
					if b, ok := p.Next.Backend(name); ok {
						ev.State = append(ev.State, b)
					}
				}
				ev.State = markRetired(ev.State, nd)
				calls = append(calls, eventMessage(ev))
			}
			st, d = p.Next, nd
		case n < 10: // HAProxy reports on some backends
			if len(st.Backends) == 0 {
				continue
			}
			st = g.observe(st)
			ev := event(dcm.EventObserved)
			ev.Message = "servers changed state"
			for _, b := range st.Backends {
				if g.r.IntN(max(2, len(st.Backends)/4)) == 0 { // a few at a time
					ev.Backends = append(ev.Backends, b.Name)
					ev.State = append(ev.State, b)
				}
			}
			ev.State = markRetired(ev.State, d)
			calls = append(calls, eventMessage(ev))
		case n < 11: // a backend touched but not carried: it is gone
			if len(st.Backends) == 0 {
				continue
			}
			gone := st.Backends[g.r.IntN(len(st.Backends))].Name
			ev := event(dcm.EventApplied)
			ev.Message, ev.Backends = "backend removed", []string{gone}
			calls = append(calls, eventMessage(ev))
		case n < 13: // events that carry no state
			t := []dcm.EventType{dcm.EventAction, dcm.EventRejected, dcm.EventAccepted, dcm.EventSyncError, dcm.EventHAProxy, dcm.EventPrediction}[g.r.IntN(6)]
			ev := event(t)
			ev.Message, ev.Actor = "something happened", "alice"
			if t == dcm.EventRejected {
				ev.Object = &dcm.ObjectRef{Kind: "Ingress", Namespace: "default", Name: "bad"}
				ev.Reason = dcm.RejectInvalidHost
			}
			calls = append(calls, eventMessage(ev))
		case n < 14: // a reload
			ev := event(dcm.EventReload)
			ev.Reload = &dcm.ReloadInfo{Time: at, Reasons: []dcm.ReloadReason{dcm.ReasonManual}}
			calls = append(calls, eventMessage(ev))
		case n < 15: // missed events: a gap
			seq++
			ev := event(dcm.EventAction)
			ev.Message = "after a gap"
			calls = append(calls, eventMessage(ev))
			seq -= 2 // the planner is still where it was
		case n < 16: // old news
			calls = append(calls, eventMessage(dcm.Event{Seq: seq - uint64(g.r.IntN(int(min(seq, 3)))), Time: at, Type: dcm.EventObserved, Backends: []string{"be_http:x:y"}}))
		case n < 17: // the feed's other messages
			t := []string{dcm.FeedTypePing, dcm.FeedTypeHello, dcm.FeedTypeBye, "mystery"}[g.r.IntN(4)]
			m := dcm.FeedMessage{Type: t, Seq: seq + 7}
			switch t {
			case dcm.FeedTypeHello:
				m.Hello = &dcm.FeedHello{Protocol: dcm.FeedProtocol, Identity: "alice", Resumed: true}
			case dcm.FeedTypeBye:
				m.Reason = "slow"
			}
			calls = append(calls, feedMessage(m))
		case n < 18: // broken messages
			calls = append(calls, Call{Fn: FnFeed, Arg: g.pick([]string{`{`, `{"type":"event","seq":3}`, `{"type":"snapshot"}`,
				`{"type":"event","event":{"seq":"x"}}`, `[]`, `{"type":"event","event":{"seq":1,"time":"yesterday"}}`})})
		default:
			calls = append(calls, Call{Fn: FnSeq})
		}
		if g.r.IntN(3) == 0 {
			calls = append(calls, Call{Fn: FnSimulate, Arg: text(g.whatifs(c, d))})
		}
	}
	// A fresh snapshot: newer ones replace the picture, stale ones do not.
	fresh := g.snapshot(seq+uint64(g.r.IntN(3)), caps, g.observe(st), d)
	if g.r.IntN(4) == 0 {
		fresh.Seq = snap.Seq - 1
	}
	calls = append(calls, Call{Fn: FnLoad, Arg: text(fresh)}, Call{Fn: FnSeq}, Call{Fn: FnSimulate, Arg: text(g.whatifs(c, d))})
	if g.r.IntN(10) == 0 {
		calls = append(calls, Call{Fn: FnLoad, Arg: `{"seq":`}, Call{Fn: FnSimulate, Arg: `[{"kind":`})
	}
	return calls
}
