package corpus

import (
	"fmt"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

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

// whatif draws the k-th what-if of a list: mostly ones the planner can
// preview, some it must refuse, each kind with its own drawer below.
func (g *gen) whatif(c *cluster, d dcm.Desired, k int) dcm.WhatIf {
	wl := c.workloads[g.r.IntN(len(c.workloads))]
	if g.tls && g.r.IntN(2) == 0 {
		return g.rotate(d, wl)
	}
	switch n := g.r.IntN(24); {
	case n < 9:
		return g.scale(c, d, wl)
	case n < 10:
		return g.badScale(wl)
	case n < 13:
		return g.deletePod(d, wl)
	case n < 17:
		return g.addRoute(wl, k)
	case n < 19:
		return g.badRoute(d, wl)
	case n < 22:
		return g.deleteRoute(d, wl)
	case n < 23:
		return g.updateRoute(d, wl)
	}
	if g.r.IntN(2) == 0 {
		return g.rotate(d, wl)
	}
	return dcm.WhatIf{Kind: dcm.WhatIfKind(g.pick([]string{"rotate-cert", "", "Scale"})), Namespace: wl.ns}
}

// scale scales a workload that exists.
func (g *gen) scale(c *cluster, d dcm.Desired, wl *workload) dcm.WhatIf {
	ref := wl.ref
	if g.r.IntN(6) == 0 {
		ref.Kind = strings.ToLower(ref.Kind) // kinds match case-insensitively
	}
	cur := replicas(d, c, wl)
	to := []int{0, max(cur-1, 0), cur + 1, cur + 2, cur, g.r.IntN(10), cur + 5}[g.r.IntN(7)]
	return dcm.WhatIf{Kind: dcm.WhatIfScale, Namespace: wl.ns, Workload: &ref, Replicas: to}
}

// badScale scales what cannot be scaled.
func (g *gen) badScale(wl *workload) dcm.WhatIf {
	switch g.r.IntN(4) {
	case 0:
		return dcm.WhatIf{Kind: dcm.WhatIfScale, Namespace: wl.ns, Workload: &dcm.WorkloadRef{Kind: "Deployment", Name: "ghost"}, Replicas: 2}
	case 1:
		return dcm.WhatIf{Kind: dcm.WhatIfScale, Namespace: "elsewhere", Workload: &wl.ref, Replicas: 1}
	case 2:
		return dcm.WhatIf{Kind: dcm.WhatIfScale, Namespace: wl.ns, Replicas: 3}
	}
	return dcm.WhatIf{Kind: dcm.WhatIfScale, Namespace: wl.ns, Workload: &wl.ref, Replicas: -1}
}

// deletePod deletes a pod that has an endpoint, or now and then one that
// does not exist.
func (g *gen) deletePod(d dcm.Desired, wl *workload) dcm.WhatIf {
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
}

// addRoute adds a new route, the k-th of its list (k names it).
func (g *gen) addRoute(wl *workload, k int) dcm.WhatIf {
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
	} else if k%3 == 2 {
		// A wildcard route: its entries go to the wildcard maps.
		r.Host = dcm.WildcardPrefix + r.Host
	}
	withAccess(&r)
	withHeaders(&r)
	withKnobs(&r)
	return dcm.WhatIf{Kind: dcm.WhatIfAddRoute, Route: &r}
}

// badRoute adds a route that cannot be added: each draw breaks one rule.
func (g *gen) badRoute(d dcm.Desired, wl *workload) dcm.WhatIf {
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
		r.Balance = "static-rr" // not with dynamic servers
	case 7:
		r.Namespace = "Team_A"
	case 8:
		if len(d.Backends) > 0 { // exists already
			r = d.Backends[g.r.IntN(len(d.Backends))].Route
			if r.Kind != dcm.KindHTTP {
				r.Host = "*.example" // a wildcard of a top-level domain
			}
			break
		}
		r.Name = ""
	default:
		return dcm.WhatIf{Kind: dcm.WhatIfAddRoute}
	}
	return dcm.WhatIf{Kind: dcm.WhatIfAddRoute, Route: &r}
}

// deleteRoute deletes a route's backend, or now and then one that never was.
func (g *gen) deleteRoute(d dcm.Desired, wl *workload) dcm.WhatIf {
	if len(d.Backends) == 0 || g.r.IntN(6) == 0 {
		return dcm.WhatIf{Kind: dcm.WhatIfDeleteRoute, Backend: "be_http:" + wl.ns + ":never-was"}
	}
	return dcm.WhatIf{Kind: dcm.WhatIfDeleteRoute, Backend: d.Backends[g.r.IntN(len(d.Backends))].Name}
}

// updateRoute changes a route's settings as an edited annotation would:
// a setting map's entry, an allowlist, rate limits (runtime), a
// passthrough timeout (a reload); now and then a change the preview must
// refuse (a new kind, a route that is not there).
func (g *gen) updateRoute(d dcm.Desired, wl *workload) dcm.WhatIf {
	if len(d.Backends) == 0 {
		return dcm.WhatIf{Kind: dcm.WhatIfUpdateRoute}
	}
	r := d.Backends[g.r.IntN(len(d.Backends))].Route
	switch g.r.IntN(7) {
	case 0:
		r.HTTP.TimeoutMillis = []int64{0, 1500, 90000}[g.r.IntN(3)]
		r.MaxConn = toggledMaxConn(r.MaxConn)
		if r.Check {
			// New servers beside the old: an add and a retire each.
			r.CheckInterMillis = toggledInter(r.CheckInterMillis)
		}
	case 1:
		if r.Kind != dcm.KindPassthrough {
			r.HTTP.Forwarded = dcm.ForwardedPolicy(g.pick([]string{"", "replace", "if-none", "never"}))
			r.HTTP.CookieName = g.pick([]string{"", "web_session"})
			r.HTTP.RewriteTarget = pickBy(r.Name+"/rewrite-update", []string{"", "/", "/api"})
		}
	case 2:
		r.Allowlist = [][]string{nil, {"10.1.0.0/16"}, {"10.0.0.0/8", "2001:db8::/32"}, longAllowlist("127.0.0.3")}[g.r.IntN(4)]
	case 3:
		r.RateLimit = []*dcm.RateLimit{nil, {}, {RateTCP: 20}}[g.r.IntN(3)]
		r.MaxConn = toggledMaxConn(r.MaxConn)
		if r.Kind != dcm.KindPassthrough && g.r.IntN(2) == 0 {
			r.Headers = &dcm.HeaderActions{Response: []dcm.HeaderAction{{Name: "X-Frame-Options", Type: dcm.HeaderSet, Value: "DENY"}}}
		}
	case 4:
		r.Kind = dcm.RouteKind(g.pick([]string{"http", "edge", "passthrough", "reencrypt"}))
	case 5:
		r.Name, r.Namespace = "never-was", wl.ns
	default:
		r.HTTP.TunnelMillis = []int64{0, 7200000}[g.r.IntN(2)]
	}
	return dcm.WhatIf{Kind: dcm.WhatIfUpdateRoute, Route: &r}
}

// rotate rotates the certificate of an edge route's Secret, or of one none
// uses.
func (g *gen) rotate(d dcm.Desired, wl *workload) dcm.WhatIf {
	w := g.rotateRoute(d, wl)
	if g.moments++; d.DefaultCert.Secret != "" && g.moments%2 == 0 {
		// The default certificate's Secret, drawn after the route's so
		// that the draws stay what they were: a set ssl cert on default.pem.
		return dcm.WhatIf{Kind: dcm.WhatIfRotateCert, Secret: d.DefaultCert.Secret}
	}
	return w
}

func (g *gen) rotateRoute(d dcm.Desired, wl *workload) dcm.WhatIf {
	for _, i := range g.r.Perm(len(d.Backends)) {
		if tls := d.Backends[i].Route.TLS; tls != nil {
			return dcm.WhatIf{Kind: dcm.WhatIfRotateCert, Namespace: wl.ns, Secret: tls.Secret}
		}
	}
	return dcm.WhatIf{Kind: dcm.WhatIfRotateCert, Namespace: wl.ns, Secret: g.pick([]string{wl.ns + "/nobody-tls", "bad", ""})}
}
