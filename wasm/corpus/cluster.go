package corpus

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"

	"github.com/dcm-router/dcm/dcm"
)

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
	// moments counts the desired states drawn: the default certificate
	// follows it, drawing nothing, so the other draws stay what they were.
	moments int
}

var namespaces = []string{"default", "shop", "team-a", "demo", "payments"}
var wlNames = []string{"web", "api", "cart", "search", "auth", "media", "db-proxy", "worker", "front", "admin"}
var balances = []string{dcm.BalanceRoundRobin, dcm.BalanceRoundRobin, dcm.BalanceLeastConn, dcm.BalanceRandom, dcm.BalanceFirst, dcm.BalanceSource}

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

// drawPods draws a workload's kind, pods and their addresses.
func (g *gen) drawPods(wl *workload, name string, maxPods int) {
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
		g.drawPods(wl, name, maxPods)
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
			// Source, the TCP spares' algorithm, as OpenShift's default.
			r.Balance = pickBy(r.Name+"/tcp", []string{dcm.BalanceSource, dcm.BalanceSource, r.Balance})
			r.Insecure = dcm.InsecurePolicy(pickBy(r.Name, []string{"", "Redirect", "None"}))
		case 2:
			r.Host = "" // any host
		case 3:
			// A reencrypt route: the client's TLS ends in HAProxy, which
			// connects to the pods over TLS, verifying them.
			r.Kind = dcm.KindReencrypt
			r.TLS = &dcm.TLSRef{Secret: wl.ns + "/" + r.Name + "-tls", Version: "0a1b2c"}
			r.Upstream = &dcm.UpstreamTLS{CA: "secret:" + wl.ns + "/" + r.Name + "-ca", Version: "6a7b8c", ServerName: wl.svc + "." + wl.ns + ".svc"}
			verifyAsOpenShift(r.Upstream, r.Name)
		}
		if g.r.IntN(4) == 0 {
			r.Path, r.PathType = "/"+g.pick([]string{"api", "v1/items", "static", "login"}), dcm.PathType(g.pick([]string{"Prefix", "Exact"}))
		}
		withAccess(&r)
		withHeaders(&r)
		withHTTP(&r)
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

// withHTTP draws a route's stickiness and HTTP options.
func withHTTP(r *dcm.Route) {
	r.Sticky = r.Kind != dcm.KindPassthrough && pickBy(r.Name+"/sticky", []string{"", "", "s"}) != ""
	r.HTTP = httpOptionsOf(*r)
	withKnobs(r) // the server knobs: maxconn and the check interval
}

// httpOptionsOf draws a route's HTTP options, setting maps' entries, by its
// name, so the other draws stay as they were; a passthrough route has none.
func httpOptionsOf(r dcm.Route) dcm.HTTPOptions {
	var o dcm.HTTPOptions
	if r.Kind == dcm.KindPassthrough {
		return o
	}
	o.Forwarded = dcm.ForwardedPolicy(pickBy(r.Name+"/fwd", []string{"", "", "replace", "never"}))
	if pickBy(r.Name+"/timeout", []string{"", "", "t"}) != "" {
		o.TimeoutMillis = 2000
	}
	if r.TerminatesTLS() {
		o.HSTS = pickBy(r.Name+"/hsts", []string{"", "max-age=31536000;includeSubDomains"})
	}
	if r.Sticky {
		// The cookie maps' entries (dcm/route_cookie.go).
		o.CookieName = pickBy(r.Name+"/cookie", []string{"", "", "shop_session"})
		o.CookieSameSite = pickBy(r.Name+"/samesite", []string{"", "", dcm.SameSiteLax})
	}
	o.RewriteTarget = pickBy(r.Name+"/rewrite", []string{"", "", "/", "/v2"})
	return o
}

// verifyAsOpenShift makes some reencrypt routes verify as OpenShift's do:
// each Service's name (the default CA), or the chain only (a Route's own).
func verifyAsOpenShift(u *dcm.UpstreamTLS, route string) {
	switch pickBy(route, []string{"name", "per-service", "chain"}) {
	case "per-service":
		u.PerService = true
	case "chain":
		u.ServerName = ""
	}
}
